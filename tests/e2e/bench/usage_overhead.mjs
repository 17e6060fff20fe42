// Usage and metrics benchmark (run by tools/bench.d/usage.sh): prints markdown rows.
//  1. A warm sandbox_run_python of print(1) over stdio (raw JSON-RPC on the pipes, so the figure
//     is the server's), on two servers side by side: SANDBOX_USAGE=on (the default: every run
//     measures its CPU and memory peak, the metrics count events) and SANDBOX_USAGE=off, in
//     alternating rounds so load on the host hits both alike (target: on within 3 % of off),
//     and the median of the per-round differences.
//  2. GET /metrics (SANDBOX_METRICS_ADDR, one keep-alive connection) of a server holding N live
//     sessions (BENCH_SCRAPE_SESSIONS, 500), against the same server with none (target <= 10 ms).
// Environment: MCP_SANDBOX_BIN, BENCH_USAGE_CALLS (1000 per server), BENCH_SCRAPE_SESSIONS (500),
// BENCH_SCRAPES (200).
import http from 'node:http';

import { freePort } from '../lib/free_port.mjs';
import { RawStdioClient } from '../lib/raw_stdio_client.mjs';

const CALLS = Number(process.env.BENCH_USAGE_CALLS ?? 1000);
const SESSIONS = Number(process.env.BENCH_SCRAPE_SESSIONS ?? 500);
const SCRAPES = Number(process.env.BENCH_SCRAPES ?? 200);

function summary(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  return { n: sorted.length, p50: at(50), p90: at(90), p99: at(99) };
}
const row = (label, s, note = '') => console.log(
  `| ${label} | ${s.n} | ${s.p50.toFixed(3)} | ${s.p90.toFixed(3)} | ${s.p99.toFixed(3)} | ${note} |`);

async function runOverhead() {
  const servers = { on: new RawStdioClient({ SANDBOX_USAGE: 'on' }), off: new RawStdioClient({ SANDBOX_USAGE: 'off' }) };
  const sessions = {};
  for (const [mode, server] of Object.entries(servers)) {
    await server.initialize();
    sessions[mode] = (await server.tool('sandbox_run_python', { code: 'print(1)' })).session_id;
  }
  const run = async (mode) => {
    const started = process.hrtime.bigint();
    const result = await servers[mode].tool('sandbox_run_python', { session_id: sessions[mode], code: 'print(1)' });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (result.stdout !== '1\n') throw new Error(JSON.stringify(result));
    return { ms, result };
  };
  for (let i = 0; i < 30; i++) { await run('on'); await run('off'); }
  const samples = { on: [], off: [] };
  const measured = { on: {}, off: {} };
  for (let i = 0; i < CALLS; i++) {
    for (const mode of i % 2 ? ['on', 'off'] : ['off', 'on']) {
      const { ms, result } = await run(mode);
      samples[mode].push(ms);
      measured[mode] = result.usage ?? {};
    }
  }
  const on = summary(samples.on);
  const off = summary(samples.off);
  // Off, a run result still says its wall time, but no memory peak (nothing was measured).
  row('warm sandbox_run_python, SANDBOX_USAGE=on (ms)', on,
    `memory_peak_scope: ${measured.on.memory_peak_scope ?? 'absent'}`);
  row('warm sandbox_run_python, SANDBOX_USAGE=off (ms)', off,
    `memory_peak_scope: ${measured.off.memory_peak_scope ?? 'absent'}`);
  console.log(`| on / off, p50 (target <= 1.03) | | ${(on.p50 / off.p50).toFixed(3)} | | | |`);
  // The calls alternate, so call i of one server and call i of the other ran under the same
  // load: the median of those differences is what usage adds, with less of the host's noise
  // than the ratio of two medians.
  const paired = summary(samples.on.map((ms, i) => (ms - samples.off[i]) * 1000));
  console.log(`| on - off, paired per round (µs) | ${paired.n} | ${paired.p50.toFixed(1)} | | | `
    + `${((paired.p50 / 1000 / off.p50) * 100).toFixed(1)} % of the off p50 |`);
  for (const server of Object.values(servers)) await server.close();
}

async function scrapeTimes(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const scrape = () => new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    http.get({ host: '127.0.0.1', port, path: '/metrics', agent }, (response) => {
      let bytes = 0;
      response.on('data', (chunk) => { bytes += chunk.length; });
      response.on('end', () => (response.statusCode === 200
        ? resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, bytes })
        : reject(new Error(`HTTP ${response.statusCode}`))));
    }).on('error', reject);
  });
  for (let i = 0; i < 20; i++) await scrape();
  const samples = [];
  let bytes = 0;
  for (let i = 0; i < SCRAPES; i++) {
    const one = await scrape();
    samples.push(one.ms);
    bytes = one.bytes;
  }
  agent.destroy();
  return { stats: summary(samples), bytes };
}

async function runScrape() {
  const port = await freePort();
  const server = new RawStdioClient({
    SANDBOX_METRICS_ADDR: `127.0.0.1:${port}`, SANDBOX_MAX_SESSIONS: String(SESSIONS + 10),
    SANDBOX_MEMORY_LIMIT: process.env.BENCH_SCRAPE_MEMORY ?? '64m', SANDBOX_IMAGE: process.env.SANDBOX_IMAGE ?? 'python-small',
  });
  await server.initialize();
  const empty = await scrapeTimes(port);
  row('GET /metrics, 0 sessions (ms)', empty.stats, `${empty.bytes} bytes`);
  // Sessions started four at a time (each is a sandbox with its Python worker).
  const started = Date.now();
  let made = 0;
  let retried = 0;
  // A start that fails (a host shared with other test runs) is tried again, at most twice.
  const worker = async () => {
    while (made < SESSIONS) {
      made++;
      for (let attempt = 1; ; attempt++) {
        try {
          await server.tool('sandbox_create_session', {});
          break;
        } catch (error) {
          if (attempt >= 3) throw error;
          retried++;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  const full = await scrapeTimes(port);
  row(`GET /metrics, ${SESSIONS} live sessions (ms; target p50 <= 10)`, full.stats,
    `${full.bytes} bytes; sessions started in ${((Date.now() - started) / 1000).toFixed(0)} s, ${retried} start(s) retried`);
  await server.close();
}

await runOverhead();
await runScrape();
