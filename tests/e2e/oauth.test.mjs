// OAuth 2.1 end to end: a real OpenID provider (oidc-provider, OpenID-certified) on loopback
// issues client-credentials access tokens with a resource indicator (RFC 8707) for the server;
// the official SDK clients (v1 for the 2025 era, v2 for 2026-07-28) drive the server as two
// subjects, first through the SDKs' own OAuth support (ClientCredentialsProvider: discovery from
// our 401 and the Protected Resource Metadata, a client_credentials token with the resource
// indicator), then with tokens obtained from the provider by hand. B naming A's session ids, resource URIs and download links learns nothing and
// changes nothing; a quota holds for one without touching the other; every bad token is
// refused with the right status before anything runs; a key rotation is followed.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import {
  ClientCredentialsProvider as ModernClientCredentials, Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { ClientCredentialsProvider as LegacyClientCredentials } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { runtimeStatus, spawnHttpServer, text } from './lib/harness.mjs';
import { OidcIssuer, signJwt, signingKey } from './lib/oidc_issuer.mjs';
import { rawPost as rawHttpPost } from './lib/raw_http.mjs';

const runtime = runtimeStatus();
const rtest = (name, fn) => test(name, { skip: runtime.ok ? false : runtime.reason }, fn);

const K1 = signingKey('k1');
const K2 = signingKey('k2');  // published only after the rotation

const b64u = (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

// The provider's clients: alice and bob, and carol, whose tokens carry a quota of their own
// (SANDBOX_OAUTH_QUOTA_CLAIM), above the settings'.
const newIssuer = () => new OidcIssuer({
  clients: ['alice', 'bob', 'carol'],
  extraTokenClaims: async (ctx, token) => (token.clientId === 'carol'
    ? { sandbox_quota: { max_sessions: 3, memory: '4096g' } } : undefined),
});

// `auth` is a token (sent as is) or an SDK auth provider (the SDK gets its own tokens).
async function connect(era, url, auth, fetchFn = undefined) {
  const options = typeof auth === 'string'
    ? { requestInit: { headers: { Authorization: `Bearer ${auth}` } } }
    : { authProvider: auth };
  if (fetchFn) options.fetch = fetchFn;
  const client = era === 'modern'
    ? new ModernClient({ name: 'oauth-e2e', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
    : new LegacyClient({ name: 'oauth-e2e', version: '1.0.0' });
  const transport = era === 'modern'
    ? new ModernTransport(new URL(url), options)
    : new LegacyTransport(new URL(url), options);
  await client.connect(transport);
  return client;
}
// The SDK's client-credentials provider of `era` for `client`, told which issuer its secret is for.
function clientCredentials(era, client, issuerUrl) {
  const Provider = era === 'modern' ? ModernClientCredentials : LegacyClientCredentials;
  return new Provider({
    clientId: client, clientSecret: `${client}-secret`, expectedIssuer: issuerUrl, scope: 'sandbox',
  });
}
const claimsOf = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url'));
// v1's callTool takes a result schema second, v2's the options.
const call = (client, name, args) => (client instanceof LegacyClient
  ? client.callTool({ name, arguments: args }, undefined, { timeout: 120000 })
  : client.callTool({ name, arguments: args }, { timeout: 120000 }));
async function callOk(client, name, args) {
  const result = await call(client, name, args);
  assert.ok(!result.isError, `${name} failed: ${text(result)}`);
  return result.structuredContent;
}

describe('OAuth 2.1 resource server against oidc-provider', () => {
  const issuer = newIssuer();
  let server;
  let tokens;
  const clients = [];
  before(async () => {
    await issuer.start([K1]);
    server = await spawnHttpServer({
      SANDBOX_OAUTH_ISSUER: issuer.url,
      SANDBOX_OAUTH_SCOPES: 'sandbox',
      SANDBOX_OAUTH_JWKS_REFRESH_S: '1',
      SANDBOX_SUBJECT_MAX_SESSIONS: '2',
      SANDBOX_OAUTH_QUOTA_CLAIM: 'sandbox_quota',
      SANDBOX_IMAGE: runtime.ok ? 'python-small' : 'python',
    });
    tokens = { alice: await issuer.token('alice', server.url), bob: await issuer.token('bob', server.url) };
  });
  after(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await server?.stop();
    await issuer.stop();
  });
  const created = () => (server.stderr.text.match(/session sess_[0-9a-f]+ created/g) ?? []).length;
  const post = (token, extraHeaders = {}) => fetch(server.url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'sandbox_run_once',
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }), ...extraHeaders,
    },
    // A call that would start a session and run code, were it admitted.
    body: JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: {
        name: 'sandbox_run_once', arguments: { code: "print('ran')" },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });

  test('Protected Resource Metadata names the issuer (RFC 9728 required fields)', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const response = await fetch(`http://127.0.0.1:${server.port}${path}`);
      assert.equal(response.status, 200, path);
      const document = await response.json();
      assert.equal(document.resource, server.url);
      assert.deepEqual(document.authorization_servers, [issuer.url]);
      assert.deepEqual(document.scopes_supported, ['sandbox']);
      assert.deepEqual(document.bearer_methods_supported, ['header']);
    }
  });

  test('refused with the right status, and nothing runs', async () => {
    const before = created();
    const pem = K1.publicKey.export({ type: 'spki', format: 'pem' });
    const claims = (extra = {}) => ({
      iss: issuer.url, aud: server.url, sub: 'alice', client_id: 'alice', scope: 'sandbox',
      iat: now(), exp: now() + 300, ...extra,
    });
    const good = tokens.alice;
    const [head, payload, signature] = good.split('.');
    const flipped = signature.slice(0, 10) + (signature[10] === 'A' ? 'B' : 'A') + signature.slice(11);
    const hsInput = `${b64u({ alg: 'HS256', kid: 'k1', typ: 'at+jwt' })}.${b64u(claims())}`;
    const cases = [
      ['no token', undefined, 401],
      ['expired', signJwt({ alg: 'RS256', kid: 'k1' }, claims({ exp: now() - 600, iat: now() - 900 }), K1.privateKey), 401],
      ['another audience', await issuer.token('alice', 'http://127.0.0.1:1/other'), 401],
      ['wrong issuer', signJwt({ alg: 'RS256', kid: 'k1' }, claims({ iss: 'http://127.0.0.1:1' }), K1.privateKey), 401],
      ['alg none', `${b64u({ alg: 'none', kid: 'k1' })}.${b64u(claims())}.`, 401],
      ['HS256 with the public key', `${hsInput}.${crypto.createHmac('sha256', pem).update(hsInput).digest('base64url')}`, 401],
      ['tampered signature', `${head}.${payload}.${flipped}`, 401],
      ['tampered payload', `${head}.${b64u({ ...JSON.parse(Buffer.from(payload, 'base64url')), sub: 'bob' })}.${signature}`, 401],
      ['unknown kid', signJwt({ alg: 'RS256', kid: 'k2' }, claims(), K2.privateKey), 401],
      ['missing scope', await issuer.token('alice', server.url, ''), 403],
    ];
    for (const [label, token, status] of cases) {
      const response = await post(token);
      assert.equal(response.status, status, `${label}: ${await response.text()}`);
      const challenge = response.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/, label);
      if (status === 403) assert.match(challenge, /error="insufficient_scope".*scope="sandbox"/, label);
      if (token !== undefined && status === 401) assert.match(challenge, /error="invalid_token"/, label);
    }
    // 100 KiB: larger than a request head may be, refused before a byte is parsed.
    const huge = await post('a'.repeat(100 << 10));
    assert.ok([401, 431].includes(huge.status), `100 KiB token: ${huge.status}`);
    assert.equal(created(), before, 'a refused request started a session');
    // The same call with a good token runs (the refusals above were about the tokens).
    const ok = await post(good);
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /ran/);
  });

  // What came off the wire, byte for byte (lib/raw_http.mjs).
  const rawPost = (token) => rawHttpPost('127.0.0.1', server.port, {
    headers: [['Accept', 'application/json, text/event-stream'], ['Content-Type', 'application/json'],
      ['Authorization', `Bearer ${token}`]],
  });

  test('a kid, alg or typ with CR LF in it adds no header line to the 401, a malformed part crashes nothing (issue #36)', async () => {
    const claims = {
      iss: issuer.url, aud: server.url, sub: 'alice', scope: 'sandbox', iat: now(), exp: now() + 300,
    };
    const hostile = 'k9\r\nX-Injected: 1';
    for (const [label, header] of [
      ['kid', { alg: 'RS256', kid: hostile }],
      ['alg', { alg: hostile, kid: 'k1' }],
      ['typ', { alg: 'RS256', kid: 'k1', typ: hostile }],
    ]) {
      const raw = await rawPost(signJwt(header, claims, K1.privateKey));
      assert.match(raw, /^HTTP\/1\.1 401 /, `${label}: ${raw}`);
      assert.doesNotMatch(raw, /[\r\n]X-Injected:/, `${label}: ${raw}`);
      assert.ok(!raw.includes('k9'), `${label}: the token's bytes came back: ${raw}`);
      const challenge = raw.split('\r\n').find((line) => line.startsWith('WWW-Authenticate: '));
      assert.match(challenge ?? '', /error="invalid_token"/, label);
      if (label === 'kid') assert.match(challenge, /error_description="unknown key id"/);
    }
    // A part libcjose's decoder aborted the process on ("a="): refused, and the server lives on.
    assert.match(await rawPost('a=.e30.c2ln'), /^HTTP\/1\.1 401 /);
    // The same request with a good token is admitted: the refusals were the header's doing.
    assert.doesNotMatch(await rawPost(tokens.alice), /^HTTP\/1\.1 401 /);
  });

  test('a rotated key is refused until the issuer publishes it, then accepted', async () => {
    const early = signJwt({ alg: 'RS256', kid: 'k2' }, {
      iss: issuer.url, aud: server.url, sub: 'alice', scope: 'sandbox', exp: now() + 300,
    }, K2.privateKey);
    assert.equal((await post(early)).status, 401);
    await issuer.stop();
    await issuer.start([K2, K1]);
    await new Promise((resolve) => setTimeout(resolve, 1100));  // SANDBOX_OAUTH_JWKS_REFRESH_S
    const rotated = await issuer.token('alice', server.url);
    assert.equal(JSON.parse(Buffer.from(rotated.split('.')[0], 'base64url')).kid, 'k2');
    const response = await post(rotated);
    assert.equal(response.status, 200, await response.text());
    tokens = { alice: rotated, bob: await issuer.token('bob', server.url) };
  });

  for (const era of ['legacy', 'modern']) {
    test(`${era} era: the SDK's own OAuth client (client credentials) finds the issuer from our 401 and connects`, async () => {
      // No token at first: the SDK is refused, reads resource_metadata from WWW-Authenticate, the
      // Protected Resource Metadata, then the provider's metadata, and asks its token endpoint.
      const provider = clientCredentials(era, 'alice', issuer.url);
      const seen = [];  // what the SDK fetched, in order: "<status> <method> <url>"
      const recording = async (url, init) => {
        const response = await fetch(url, init);
        seen.push(`${response.status} ${init?.method ?? 'GET'} ${url}`);
        return response;
      };
      const client = await connect(era, server.url, provider, recording);
      clients.push(client);
      const { tools } = await client.listTools();
      assert.ok(tools.some((tool) => tool.name === 'sandbox_run_python'));
      const step = (pattern) => seen.findIndex((line) => pattern.test(line));
      const refused = step(new RegExp(`^401 POST ${server.url}$`));
      const metadata = step(/^200 GET http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp$/);
      const granted = step(new RegExp(`^200 POST ${issuer.url}/token$`));
      assert.ok(refused >= 0 && refused < metadata && metadata < granted, seen.join('\n'));
      const token = provider.tokens()?.access_token;
      assert.ok(token, 'the SDK saved no token');
      const claims = claimsOf(token);
      assert.equal(claims.iss, issuer.url);
      assert.equal(claims.aud, server.url, 'the SDK asked for a token without our resource indicator');
      assert.equal(claims.client_id, 'alice');
      // The token is alice's: her sessions made through it are hers and no one else's.
      const listed = await callOk(client, 'sandbox_list_sessions', {});
      assert.ok(Array.isArray(listed.sessions));
      if (!runtime.ok) return;
      const made = await callOk(client, 'sandbox_create_session', {});
      const byHand = await connect(era, server.url, tokens.alice);
      const other = await connect(era, server.url, tokens.bob);
      clients.push(byHand, other);
      assert.ok(JSON.stringify(await callOk(byHand, 'sandbox_list_sessions', {})).includes(made.session_id));
      assert.ok(!JSON.stringify(await callOk(other, 'sandbox_list_sessions', {})).includes(made.session_id));
      await callOk(client, 'sandbox_close_session', { session_id: made.session_id });
    });

    rtest(`${era} era: B naming A's sessions, resources and downloads learns nothing, changes nothing`, async () => {
      const alice = await connect(era, server.url, tokens.alice);
      const bob = await connect(era, server.url, tokens.bob);
      clients.push(alice, bob);
      const made = await callOk(alice, 'sandbox_run_python', {
        code: "open('/mnt/data/secret.txt', 'w').write('alice only')",
      });
      assert.equal(made.exit_code, 0, JSON.stringify(made));
      const session = made.session_id;
      const link = made.artifacts.find((file) => file.path === '/mnt/data/secret.txt')?.download_url;

      const unknown = 'sess_' + '0'.repeat(32);
      const stranger = await call(bob, 'sandbox_run_python', { session_id: unknown, code: '1' });
      const named = await call(bob, 'sandbox_run_python', { session_id: session, code: "open('/mnt/data/secret.txt').read()" });
      assert.equal(named.structuredContent?.error, 'session_not_found', text(named));
      assert.equal(text(named).replace(session, '<id>'), text(stranger).replace(unknown, '<id>'));
      for (const [name, args] of [
        ['sandbox_write_file', { session_id: session, path: 'secret.txt', content: 'bob was here', overwrite: true }],
        ['sandbox_close_session', { session_id: session }],
        ['sandbox_session_status', { session_id: session }],
        ['sandbox_list_artifacts', { session_id: session }],
      ]) {
        const result = await call(bob, name, args);
        assert.equal(result.structuredContent?.error, 'session_not_found', `${name}: ${text(result)}`);
      }
      const listed = await callOk(bob, 'sandbox_list_sessions', {});
      assert.ok(!JSON.stringify(listed).includes(session), JSON.stringify(listed));
      await assert.rejects(bob.readResource({ uri: `sandbox://sessions/${session}/files/secret.txt` }));
      const resources = await bob.listResources();
      assert.ok(!JSON.stringify(resources).includes(session));
      assert.ok(link, JSON.stringify(made));
      const download = await fetch(link, { headers: { Authorization: `Bearer ${tokens.bob}` } });
      assert.equal(download.status, 404, 'B downloaded A\'s file with its own token');
      const own = await fetch(link, { headers: { Authorization: `Bearer ${tokens.alice}` } });
      assert.equal(own.status, 200);
      assert.equal(await own.text(), 'alice only');
      if (era === 'legacy') {
        // A's transport session (Mcp-Session-Id) is A's too: B presenting it is told it is gone.
        const transportId = alice.transport?.sessionId;
        assert.ok(transportId);
        const hijack = await fetch(server.url, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
            'MCP-Protocol-Version': '2025-11-25', 'Mcp-Session-Id': transportId,
            Authorization: `Bearer ${tokens.bob}`,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
        });
        assert.equal(hijack.status, 404);
      }
      // A's session is as A left it.
      const still = await callOk(alice, 'sandbox_run_python', { session_id: session, code: "print(open('/mnt/data/secret.txt').read())" });
      assert.equal(still.stdout.trim(), 'alice only');
      const mine = await callOk(alice, 'sandbox_list_sessions', {});
      assert.ok(JSON.stringify(mine).includes(session));
      await callOk(alice, 'sandbox_close_session', { session_id: session });
    });
  }

  rtest('a quota holds for one subject without touching the other', async () => {
    const alice = await connect('legacy', server.url, tokens.alice);
    const bob = await connect('modern', server.url, tokens.bob);
    clients.push(alice, bob);
    const a1 = await callOk(alice, 'sandbox_create_session', {});
    const a2 = await callOk(alice, 'sandbox_create_session', {});
    const a3 = await call(alice, 'sandbox_create_session', {});
    assert.ok(a3.isError, text(a3));
    assert.match(text(a3), /SANDBOX_SUBJECT_MAX_SESSIONS/);
    const b1 = await callOk(bob, 'sandbox_create_session', {});
    for (const [client, id] of [[alice, a1.session_id], [alice, a2.session_id], [bob, b1.session_id]]) {
      await callOk(client, 'sandbox_close_session', { session_id: id });
    }
  });

  rtest('a quota claim in the token sets its subject\'s quota, capped by the server\'s limits', async () => {
    const token = await issuer.token('carol', server.url);
    assert.deepEqual(claimsOf(token).sandbox_quota, { max_sessions: 3, memory: '4096g' });
    const carol = await connect('modern', server.url, token);
    clients.push(carol);
    // Three sessions (the claim's, where the settings give two); the fourth is refused.
    const made = [];
    for (let i = 0; i < 3; ++i) made.push((await callOk(carol, 'sandbox_create_session', {})).session_id);
    const fourth = await call(carol, 'sandbox_create_session', {});
    assert.ok(fourth.isError, text(fourth));
    assert.match(text(fourth), /maximum of 3 live sessions/);
    // memory "4096g" is capped by the server's own limit: asking for more than it is refused
    // by the server's limit, not granted by the claim.
    await callOk(carol, 'sandbox_close_session', { session_id: made.pop() });
    const huge = await call(carol, 'sandbox_create_session', { memory_limit: '4000g' });
    assert.ok(huge.isError, text(huge));
    for (const id of made) await callOk(carol, 'sandbox_close_session', { session_id: id });
  });
});
