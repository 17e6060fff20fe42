// MCP latency benchmark (run by tools/bench.d/mcp_latency.sh): prints markdown tables.
//  1. stdio: a warm sandbox_run_python of print(1), request line out -> response line in
//     (raw JSON-RPC on the pipes, so the figure is the server's, not a client library's);
//     ping on the same pipes as the transport's floor.
//  2. HTTP: N sessions x M calls at once, each session its own SDK client (Streamable HTTP):
//     errors, per-call latency percentiles, throughput; then the same load from a minimal
//     HTTP/1.1 keep-alive JSON-RPC client, which shows the server's share (the SDK client's
//     own CPU per call is several times the server's).
//  3. Both eras side by side: a warm sandbox_run_python from one client, sequentially, in the
//     2025-11-25 era (initialize, session) and in the 2026-07-28 era (per-request _meta, and on
//     HTTP the Mcp-Method/Mcp-Name/Mcp-Param-Session-Id headers the server checks), over stdio
//     and over HTTP, in alternating rounds so load on the host hits both alike.
// Environment: MCP_SANDBOX_BIN, BENCH_STDIO_CALLS (500), BENCH_HTTP_SESSIONS (50),
// BENCH_HTTP_CALLS (20), BENCH_ERA_CALLS (400 per era and transport).
import http from 'node:http';
import os from 'node:os';

import { callOk, connectHttp, spawnHttpServer } from '../lib/harness.mjs';
import { RawStdioClient } from '../lib/raw_stdio_client.mjs';

const STDIO_CALLS = Number(process.env.BENCH_STDIO_CALLS ?? 500);
const HTTP_SESSIONS = Number(process.env.BENCH_HTTP_SESSIONS ?? 50);
const HTTP_CALLS = Number(process.env.BENCH_HTTP_CALLS ?? 20);
const ERA_CALLS = Number(process.env.BENCH_ERA_CALLS ?? 400);
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)];
}

function summary(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1],
  };
}

const ms = (value) => (Number.isFinite(value) ? value.toFixed(2) : 'n/a');

async function stdioBench() {
  const client = new RawStdioClient();
  await client.initialize();
  const first = await client.request('tools/call', { name: 'sandbox_run_python', arguments: { code: 'print(1)' } });
  if (first.result?.isError) throw new Error(`run_python failed: ${JSON.stringify(first.result)}`);
  const session = first.result.structuredContent.session_id;
  const time = async (method, params) => {
    const started = process.hrtime.bigint();
    const response = await client.request(method, params);
    const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
    if (response.error || response.result?.isError) throw new Error(JSON.stringify(response));
    return elapsed;
  };
  for (let i = 0; i < 20; i++) await time('tools/call', { name: 'sandbox_run_python', arguments: { session_id: session, code: 'print(1)' } });
  const runs = [];
  for (let i = 0; i < STDIO_CALLS; i++) {
    runs.push(await time('tools/call', { name: 'sandbox_run_python', arguments: { session_id: session, code: 'print(1)' } }));
  }
  const pings = [];
  for (let i = 0; i < STDIO_CALLS; i++) pings.push(await time('ping', {}));
  await client.close();
  return { runs: summary(runs), pings: summary(pings) };
}

async function httpBench() {
  const server = await spawnHttpServer({ SANDBOX_MAX_SESSIONS: String(HTTP_SESSIONS + 10) });
  const clients = await Promise.all(Array.from({ length: HTTP_SESSIONS }, () => connectHttp(server.url)));
  const createStarted = Date.now();
  const sessions = await Promise.all(clients.map(async ({ client }) => {
    const { structured } = await callOk(client, 'sandbox_run_python', { code: 'print(1)' });
    return structured.session_id;
  }));
  const createMs = Date.now() - createStarted;
  const latencies = [];
  let errors = 0;
  const started = Date.now();
  await Promise.all(clients.map(async ({ client }, index) => {
    for (let i = 0; i < HTTP_CALLS; i++) {
      const t0 = process.hrtime.bigint();
      try {
        const result = await client.callTool({ name: 'sandbox_run_python', arguments: { session_id: sessions[index], code: 'print(1)' } });
        if (result.isError || result.structuredContent?.stdout !== '1\n') errors++;
      } catch {
        errors++;
      }
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }));
  const wallMs = Date.now() - started;
  for (const { client, transport } of clients) {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
  await server.stop();
  return { calls: summary(latencies), errors, wallMs, createMs };
}

// A minimal Streamable HTTP client: one keep-alive connection, JSON-RPC POSTs.
class RawHttpClient {
  constructor(url) {
    this.url = new URL(url);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    this.nextId = 1;
    this.session = '';
  }
  post(body, extraHeaders = {}) {
    const payload = JSON.stringify(body);
    const headers = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Content-Length': Buffer.byteLength(payload),
      ...extraHeaders,
    };
    if (this.session) {
      headers['Mcp-Session-Id'] = this.session;
      headers['MCP-Protocol-Version'] = '2025-11-25';
    }
    return new Promise((resolve, reject) => {
      const request = http.request({
        host: this.url.hostname, port: this.url.port, path: this.url.pathname, method: 'POST',
        agent: this.agent, headers,
      }, (response) => {
        let data = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => { data += chunk; });
        response.on('end', () => {
          if (response.headers['mcp-session-id']) this.session = response.headers['mcp-session-id'];
          if (!data) return resolve(null);
          if ((response.headers['content-type'] ?? '').startsWith('text/event-stream')) {
            const lines = data.split('\n').filter((line) => line.startsWith('data: '));
            return resolve(JSON.parse(lines[lines.length - 1].slice(6)));
          }
          resolve(JSON.parse(data));
        });
      });
      request.on('error', reject);
      request.end(payload);
    });
  }
  request(method, params) {
    return this.post({ jsonrpc: '2.0', id: this.nextId++, method, params });
  }
  // A 2026-07-28 request: no session, _meta in the body, the headers mirroring it.
  modernCall(name, args) {
    const headers = { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': name };
    if (args.session_id) headers['Mcp-Param-Session-Id'] = args.session_id;
    return this.post({
      jsonrpc: '2.0', id: this.nextId++, method: 'tools/call',
      params: { name, arguments: args, _meta: MODERN_META },
    }, headers);
  }
  close() {
    this.agent.destroy();
  }
}

async function rawHttpBench() {
  const server = await spawnHttpServer({ SANDBOX_MAX_SESSIONS: String(HTTP_SESSIONS + 10) });
  const clients = Array.from({ length: HTTP_SESSIONS }, () => new RawHttpClient(server.url));
  const sessions = await Promise.all(clients.map(async (client) => {
    await client.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
    await client.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const first = await client.request('tools/call', { name: 'sandbox_run_python', arguments: { code: 'print(1)' } });
    return first.result.structuredContent.session_id;
  }));
  const latencies = [];
  let errors = 0;
  const started = Date.now();
  await Promise.all(clients.map(async (client, index) => {
    for (let i = 0; i < HTTP_CALLS; i++) {
      const t0 = process.hrtime.bigint();
      try {
        const response = await client.request('tools/call', { name: 'sandbox_run_python', arguments: { session_id: sessions[index], code: 'print(1)' } });
        if (response.result?.isError || response.result?.structuredContent?.stdout !== '1\n') errors++;
      } catch {
        errors++;
      }
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }));
  const wallMs = Date.now() - started;
  for (const client of clients) client.close();
  await server.stop();
  return { calls: summary(latencies), errors, wallMs };
}

// Warm run_python, one client, both eras, over stdio and HTTP (see 3. above).
async function eraBench() {
  const check = (response) => {
    if (response.error || response.result?.isError || response.result?.structuredContent?.stdout !== '1\n') {
      throw new Error(JSON.stringify(response));
    }
  };
  const timed = async (samples, fn) => {
    const t0 = process.hrtime.bigint();
    check(await fn());
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  };
  const stdio = new RawStdioClient();
  await stdio.initialize();
  const first = await stdio.request('tools/call', { name: 'sandbox_run_python', arguments: { code: 'print(1)' } });
  const stdioSession = first.result.structuredContent.session_id;
  const server = await spawnHttpServer();
  const legacy = new RawHttpClient(server.url);
  await legacy.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  await legacy.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const created = await legacy.request('tools/call', { name: 'sandbox_run_python', arguments: { code: 'print(1)' } });
  const httpSession = created.result.structuredContent.session_id;
  const modern = new RawHttpClient(server.url);
  const args = (session) => ({ session_id: session, code: 'print(1)' });
  const samples = { stdioLegacy: [], stdioModern: [], httpLegacy: [], httpModern: [] };
  const rounds = ERA_CALLS / 20;
  for (let round = -1; round < rounds; round++) {
    // Round -1 warms up every path; its samples are dropped.
    const sink = (name) => (round < 0 ? [] : samples[name]);
    for (let i = 0; i < 20; i++) {
      await timed(sink('stdioLegacy'), () => stdio.request('tools/call', { name: 'sandbox_run_python', arguments: args(stdioSession) }));
    }
    for (let i = 0; i < 20; i++) {
      await timed(sink('stdioModern'), () => stdio.request('tools/call',
        { name: 'sandbox_run_python', arguments: args(stdioSession), _meta: MODERN_META }));
    }
    for (let i = 0; i < 20; i++) {
      await timed(sink('httpLegacy'), () => legacy.request('tools/call', { name: 'sandbox_run_python', arguments: args(httpSession) }));
    }
    for (let i = 0; i < 20; i++) {
      await timed(sink('httpModern'), () => modern.modernCall('sandbox_run_python', args(httpSession)));
    }
  }
  await stdio.close();
  legacy.close();
  modern.close();
  await server.stop();
  return Object.fromEntries(Object.entries(samples).map(([name, list]) => [name, summary(list)]));
}

const eras = await eraBench();
const stdio = await stdioBench();
const sdk = await httpBench();
const raw = await rawHttpBench();
console.log(`host: ${os.cpus().length} cpus, load average ${os.loadavg().map((v) => v.toFixed(1)).join(' ')}`);
console.log('');
console.log('| measurement | n | p50 ms | p90 ms | p99 ms | max ms | target |');
console.log('|---|---|---|---|---|---|---|');
console.log(`| stdio: warm sandbox_run_python print(1), request to response | ${stdio.runs.n} | ${ms(stdio.runs.p50)} | ${ms(stdio.runs.p90)} | ${ms(stdio.runs.p99)} | ${ms(stdio.runs.max)} | p50 <= 3 |`);
console.log(`| stdio: ping (transport floor) | ${stdio.pings.n} | ${ms(stdio.pings.p50)} | ${ms(stdio.pings.p90)} | ${ms(stdio.pings.p99)} | ${ms(stdio.pings.max)} | |`);
console.log(`| HTTP, SDK clients: ${HTTP_SESSIONS} sessions x ${HTTP_CALLS} calls at once, print(1) | ${sdk.calls.n} | ${ms(sdk.calls.p50)} | ${ms(sdk.calls.p90)} | ${ms(sdk.calls.p99)} | ${ms(sdk.calls.max)} | p99 <= 50, no errors |`);
console.log(`| HTTP, minimal keep-alive clients: the same load | ${raw.calls.n} | ${ms(raw.calls.p50)} | ${ms(raw.calls.p90)} | ${ms(raw.calls.p99)} | ${ms(raw.calls.max)} | p99 <= 50, no errors |`);
console.log('');
const rate = (run) => (run.calls.n / (run.wallMs / 1000)).toFixed(0);
console.log(`HTTP, SDK clients: ${sdk.errors} error(s), ${rate(sdk)} calls/s; ${HTTP_SESSIONS} sessions created at ` +
  `once (first run included) in ${sdk.createMs} ms. Minimal clients: ${raw.errors} error(s), ${rate(raw)} calls/s.`);
console.log('');
console.log('| warm sandbox_run_python print(1), one client | n | p50 ms | p90 ms | p99 ms | modern vs legacy (p50) |');
console.log('|---|---|---|---|---|---|');
for (const [transport, legacyName, modernName] of [['stdio', 'stdioLegacy', 'stdioModern'], ['HTTP', 'httpLegacy', 'httpModern']]) {
  const before = eras[legacyName];
  const after = eras[modernName];
  const change = ((after.p50 / before.p50 - 1) * 100).toFixed(1);
  console.log(`| ${transport}, 2025-11-25 (initialize) | ${before.n} | ${ms(before.p50)} | ${ms(before.p90)} | ${ms(before.p99)} | |`);
  console.log(`| ${transport}, 2026-07-28 (per-request _meta${transport === 'HTTP' ? ', headers checked' : ''}) | ${after.n} | ${ms(after.p50)} | ${ms(after.p90)} | ${ms(after.p99)} | ${change > 0 ? '+' : ''}${change} % |`);
}
process.exitCode = sdk.errors + raw.errors > 0 ? 1 : 0;
