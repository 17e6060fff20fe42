// OAuth latency benchmark (run by tools/bench.d/oauth.sh): a warm HTTP call
// (resources/templates/list, a small answer, in the 2026-07-28 era, one keep-alive connection) to
// ONE server that accepts both a static bearer token and JWT access tokens from a real
// oidc-provider on loopback (client credentials, RS256, the resource indicator), in alternating
// rounds so load on the host hits both alike. The difference of the p50s is what validating a JWT
// with a cached JWKS adds (target <= 0.1 ms). Prints markdown rows:
// | measurement | n | p50 ms | p90 ms | p99 ms |. Needs no sandbox runtime.
// Environment: MCP_SANDBOX_BIN, BENCH_OAUTH_CALLS (2000 per token kind).
import http from 'node:http';

import { spawnHttpServer } from '../lib/harness.mjs';
import { OidcIssuer, signingKey } from '../lib/oidc_issuer.mjs';

const CALLS = Number(process.env.BENCH_OAUTH_CALLS ?? 2000);
const STATIC = 'bench-static-token-0123456789abcdef';

const issuer = new OidcIssuer({ clients: ['bench'], accessTokenTTL: 3600 });
// A key of its own (RS256, as most IdPs sign), not the provider's development keys.
await issuer.start([signingKey('bench')]);

const server = await spawnHttpServer({
  SANDBOX_AUTH_TOKEN: STATIC,
  SANDBOX_OAUTH_ISSUER: issuer.url,
  SANDBOX_OAUTH_SCOPES: 'sandbox',
});
try {
  const jwt = await issuer.token('bench', server.url);

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const payload = JSON.stringify({
    jsonrpc: '2.0', id: 1, method: 'resources/templates/list',
    params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
  });
  const call = (token) => new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const request = http.request(server.url, {
      method: 'POST', agent,
      headers: {
        'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'resources/templates/list',
        Authorization: `Bearer ${token}`, 'Content-Length': Buffer.byteLength(payload),
      },
    }, (response) => {
      response.resume();
      response.on('end', () => {
        if (response.statusCode !== 200) reject(new Error(`HTTP ${response.statusCode}`));
        else resolve(Number(process.hrtime.bigint() - start) / 1e6);
      });
    });
    request.on('error', reject);
    request.end(payload);
  });

  for (let i = 0; i < 100; ++i) { await call(STATIC); await call(jwt); }  // warm both paths
  const samples = { static: [], jwt: [] };
  for (let i = 0; i < CALLS; ++i) {
    // Alternate which goes first, so neither always follows the other.
    if (i % 2) { samples.static.push(await call(STATIC)); samples.jwt.push(await call(jwt)); }
    else { samples.jwt.push(await call(jwt)); samples.static.push(await call(STATIC)); }
  }
  const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  const row = (label, list) => {
    const sorted = [...list].sort((a, b) => a - b);
    console.log(`| ${label} | ${sorted.length} | ${pct(sorted, 50).toFixed(3)} | ${pct(sorted, 90).toFixed(3)} | ${pct(sorted, 99).toFixed(3)} |`);
    return pct(sorted, 50);
  };
  const plain = row('warm HTTP resources/templates/list, static token', samples.static);
  const oauth = row('warm HTTP resources/templates/list, JWT (RS256, cached JWKS)', samples.jwt);
  console.log(`| JWT minus static, p50 (target <= 0.1 ms) | | ${(oauth - plain).toFixed(3)} | | |`);
  agent.destroy();
} finally {
  await server.stop();
  await issuer.stop();
}
