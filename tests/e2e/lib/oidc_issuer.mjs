// A real OpenID provider (oidc-provider, OpenID-certified) on loopback that issues
// client-credentials JWT access tokens (RS256) for a resource indicator (RFC 8707): the
// authorization server of the OAuth e2e test (oauth.test.mjs) and of the OAuth latency bench
// (bench/oauth_latency.mjs), and of the fleet (fleet.test.mjs).
import crypto from 'node:crypto';

import Provider from 'oidc-provider';

import { freePort } from './free_port.mjs';

// An RS256 signing key: the KeyObjects and the private JWK the provider publishes (as a public key).
export function signingKey(kid) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, privateKey, publicKey, jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

// A compact JWS of `header` and `payload` signed RS256 with `key` (a private KeyObject): a token
// as a client could forge or mangle it, whatever its header says.
export function signJwt(header, payload, key) {
  const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part(header)}.${part(payload)}`;
  return `${input}.${crypto.sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

// The provider, (re)started on one port with the keys it publishes (the first one signs), so a
// key rotation keeps the issuer's URL. Each client's secret is `${id}-secret`.
//   clients: client ids; accessTokenTTL: seconds;
//   extraTokenClaims: oidc-provider's hook (ctx, token) => claims to add, or undefined;
//   host: the address it listens on and names in its URL (loopback unless a test's servers are
//   elsewhere, e.g. replicas in network namespaces: fleet.test.mjs).
export class OidcIssuer {
  constructor({ clients, accessTokenTTL = 300, extraTokenClaims, host = '127.0.0.1' } = {}) {
    this.clients = clients;
    this.host = host;
    this.accessTokenTTL = accessTokenTTL;
    this.extraTokenClaims = extraTokenClaims;
  }

  async start(keys) {
    // The issuer's URL names its port, so the port is chosen before the provider exists.
    this.port ??= await freePort();
    this.url = `http://${this.host}:${this.port}`;
    const provider = new Provider(this.url, {
      clients: this.clients.map((id) => ({
        // client_secret_basic: what the SDKs' ClientCredentialsProvider sends (and RFC 6749
        // §2.3.1's one method every server has).
        client_id: id, client_secret: `${id}-secret`, grant_types: ['client_credentials'],
        redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic',
      })),
      jwks: { keys: keys.map((key) => key.jwk) },
      ...(this.extraTokenClaims ? { extraTokenClaims: this.extraTokenClaims } : {}),
      scopes: ['sandbox'],
      ttl: { ClientCredentials: this.accessTokenTTL },  // set, so the provider prints no notice
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => undefined,
          useGrantedResource: () => true,
          getResourceServerInfo: (ctx, resource) => ({
            scope: 'sandbox', audience: resource, accessTokenTTL: this.accessTokenTTL, accessTokenFormat: 'jwt',
          }),
        },
      },
    });
    this.server = provider.listen(this.port, this.host);
    await new Promise((resolve) => this.server.once('listening', resolve));
  }

  async stop() {
    await new Promise((resolve) => this.server.close(resolve));
    this.server.closeAllConnections?.();
  }

  // An access token from the token endpoint (client credentials, RFC 8707 resource); throws
  // unless the endpoint answers 200.
  async token(client, resource, scope = 'sandbox') {
    const body = new URLSearchParams({ grant_type: 'client_credentials', resource });
    if (scope) body.set('scope', scope);
    const basic = Buffer.from(`${client}:${client}-secret`).toString('base64');
    const response = await fetch(`${this.url}/token`, {
      method: 'POST', body, headers: { Authorization: `Basic ${basic}` },
    });
    const json = await response.json();
    if (response.status !== 200 || !json.access_token) {
      throw new Error(`no token for ${client} (${response.status}): ${JSON.stringify(json)}`);
    }
    return json.access_token;
  }
}
