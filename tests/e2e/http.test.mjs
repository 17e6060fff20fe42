// The behaviour suite over Streamable HTTP, plus what only HTTP has: download URLs, the bearer
// token, concurrent sessions.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { callOk, connectHttp, runtimeStatus, spawnHttpServer, startHttp } from './lib/harness.mjs';
import { transportSuite } from './lib/scenarios.mjs';

transportSuite('http', startHttp);

const runtime = runtimeStatus();
const needsRuntime = runtime.ok ? false : `needs the sandbox runtime: ${runtime.reason}`;
const rtest = needsRuntime ? (name, fn) => test(name, { skip: needsRuntime }, fn) : test;

describe('http: authentication', () => {
  let server;
  before(async () => {
    server = await spawnHttpServer({ SANDBOX_AUTH_TOKEN: 'e2e-secret-token-0123456789' });
  });
  after(async () => server?.stop());

  test('without the bearer token: 401; with it: connected', async () => {
    await assert.rejects(connectHttp(server.url), /401|Unauthorized/);
    const { client, transport } = await connectHttp(server.url, { Authorization: 'Bearer e2e-secret-token-0123456789' });
    await client.ping();
    await transport.terminateSession();
    await client.close();
  });

  test('healthz answers without a token; a foreign Origin is 403', async () => {
    const health = await fetch(`http://127.0.0.1:${server.port}/healthz`);
    assert.equal(health.status, 200);
    const foreign = await fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Origin: 'http://evil.example.com' },
      body: '{}',
    });
    assert.equal(foreign.status, 403);
  });
});

describe('http: artifact downloads', () => {
  let server;
  before(async () => {
    if (needsRuntime) return;
    server = await startHttp();
  });
  after(async () => server?.close());

  rtest('results carry a download_url that serves the file with its type', async () => {
    const { structured } = await callOk(server.client, 'sandbox_run_python', {
      code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig('/mnt/data/line.png')\nplt.close('all')",
    });
    const artifact = structured.artifacts.find((file) => file.path === '/mnt/data/line.png');
    assert.ok(artifact?.download_url, JSON.stringify(structured));
    const response = await fetch(artifact.download_url);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'image/png');
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.equal(bytes.subarray(0, 8).toString('hex'), '89504e470d0a1a0a');
    const forged = artifact.download_url.replace(/token=[0-9a-f]+/, 'token=' + '0'.repeat(32));
    assert.equal((await fetch(forged)).status, 403);
    const traversal = artifact.download_url.replace('line.png', '..%2F..%2Fetc%2Fpasswd');
    assert.notEqual((await fetch(traversal)).status, 200);
  });

  rtest('a download link opens its own file only, until its expiry', async () => {
    const { structured } = await callOk(server.client, 'sandbox_run_python', {
      code: "open('/mnt/data/a.txt', 'w').write('file A')\nopen('/mnt/data/b.txt', 'w').write('file B')",
    });
    const linkOf = (path) => structured.artifacts.find((file) => file.path === path)?.download_url;
    const a = linkOf('/mnt/data/a.txt');
    const b = linkOf('/mnt/data/b.txt');
    assert.ok(a && b, JSON.stringify(structured));
    const got = await fetch(a);
    assert.equal(got.status, 200);
    assert.equal(await got.text(), 'file A');
    // A's query on B's path, in B's spelling and others: never B.
    for (const path of ['b.txt', 'B.txt', 'a.txt%2F..%2Fb.txt', 'a.txt/../b.txt', 'a.txt/']) {
      const forged = a.replace('/a.txt?', `/${path}?`);
      const response = await fetch(forged);
      assert.ok([400, 403].includes(response.status), `${forged}: ${response.status}`);
      assert.ok(!(await response.text()).includes('file B'), forged);
    }
    assert.equal(await (await fetch(b)).text(), 'file B');
    // SANDBOX_DOWNLOAD_TTL's default, 1 h, from when the result was made; moved, it breaks.
    const expires = Number(new URL(a).searchParams.get('expires'));
    assert.ok(Math.abs(expires - (Date.now() / 1000 + 3600)) < 120, a);
    const later = new URL(a);
    later.searchParams.set('expires', String(expires + 86400));
    assert.equal((await fetch(later)).status, 403);
  });
});

describe('http: download links expire (SANDBOX_DOWNLOAD_TTL)', () => {
  let server;
  before(async () => {
    if (needsRuntime) return;
    server = await startHttp({ SANDBOX_DOWNLOAD_TTL: '2s' });
  });
  after(async () => server?.close());

  rtest('past its TTL a link is refused, saying so; the tool gives a new one', async () => {
    const { structured } = await callOk(server.client, 'sandbox_run_python', {
      code: "open('/mnt/data/a.txt', 'w').write('file A')",
    });
    const link = structured.artifacts.find((file) => file.path === '/mnt/data/a.txt')?.download_url;
    assert.ok(link, JSON.stringify(structured));
    assert.equal((await fetch(link)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 3200));
    const expired = await fetch(link);
    assert.equal(expired.status, 403);
    assert.match(await expired.text(), /expired at .*call the tool again/);
    const again = await callOk(server.client, 'sandbox_read_artifact', {
      session_id: structured.session_id,
      path: 'a.txt',
    });
    assert.ok(again.structured.download_url, JSON.stringify(again.structured));
    assert.equal(await (await fetch(again.structured.download_url)).text(), 'file A');
  });
});

describe('http: concurrent sessions', () => {
  let server;
  before(async () => {
    if (needsRuntime) return;
    server = await startHttp({ SANDBOX_MAX_SESSIONS: '8' });
  });
  after(async () => server?.close());

  rtest('runs in different sessions proceed side by side', async () => {
    const clients = await Promise.all(Array.from({ length: 4 }, () => connectHttp(server.server.url)));
    // Sessions are made first: what is timed is the runs, not four sandbox starts on a loaded host.
    const sessions = await Promise.all(clients.map(async ({ client }) =>
      (await callOk(client, 'sandbox_run_python', { code: 'print(0)' })).structured.session_id));
    // Each run reports when it started and ended (the host's clock: no time namespace); they ran
    // side by side when every run started before any ended.
    const code = 'import time; s = time.time(); time.sleep(2); print(s, time.time())';
    const results = await Promise.all(clients.map(({ client }, i) =>
      callOk(client, 'sandbox_run_python', { code, session_id: sessions[i] })));
    const spans = results.map(({ structured }) => structured.stdout.trim().split(' ').map(Number));
    const lastStart = Math.max(...spans.map(([start]) => start));
    const firstEnd = Math.min(...spans.map(([, end]) => end));
    assert.ok(lastStart < firstEnd, `runs did not overlap: ${JSON.stringify(spans)}`);
    for (const { client, transport } of clients) {
      await transport.terminateSession();
      await client.close();
    }
  });
});
