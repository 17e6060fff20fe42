// MCP Apps views benchmark (run by tools/bench.d/apps_views.sh): prints markdown rows.
//  1. The view resources' size, raw and gzip-compressed (target <= 300 KB compressed each).
//  2. sandbox_view_table on a 1,000,000-row DataFrame over stdio (raw JSON-RPC, so the figure
//     is the server's and the session's): a page of 50 rows at random offsets, in the frame's
//     order, sorted (after the first sort, whose order the session keeps) and filtered; and the
//     first sort itself (target: a page <= 50 ms p50).
// Environment: MCP_SANDBOX_BIN, BENCH_APPS_PAGES (200 per kind).
import zlib from 'node:zlib';

import { RawStdioClient } from '../lib/raw_stdio_client.mjs';

const PAGES = Number(process.env.BENCH_APPS_PAGES ?? 200);
const UI = 'io.modelcontextprotocol/ui';

function summary(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  return { n: sorted.length, p50: at(50), p90: at(90), p99: at(99) };
}

const server = new RawStdioClient();
const init = await server.request('initialize', {
  protocolVersion: '2025-11-25',
  capabilities: { extensions: { [UI]: { mimeTypes: ['text/html;profile=mcp-app'] } } },
  clientInfo: { name: 'bench', version: '1' },
});
if (!init.result?.capabilities?.extensions?.[UI]) throw new Error('the server did not declare MCP Apps');
server.notify('notifications/initialized', {});

console.log('| view resource | bytes | gzip bytes | target |');
console.log('|---|---:|---:|---|');
const listed = await server.request('resources/list', {});
for (const resource of listed.result.resources.filter((entry) => entry.uri.startsWith('ui://'))) {
  const read = await server.request('resources/read', { uri: resource.uri });
  const bytes = Buffer.from(read.result.contents[0].text);
  const compressed = zlib.gzipSync(bytes, { level: 9 }).length;
  console.log(`| \`${resource.uri}\` | ${bytes.length} | ${compressed} | ≤ 300 KB: ${compressed <= 300 << 10 ? 'met' : '**not met**'} |`);
}

const built = await server.tool('sandbox_run_python', {
  code: 'import numpy as np, pandas as pd\nn = np.arange(1_000_000)\n'
    + 'big = pd.DataFrame({"n": n, "x": np.random.default_rng(1).random(1_000_000), '
    + '"label": pd.Series(n).map("row-{}".format)})\nNone',
  timeout_s: 120,
});
const session = built.session_id;
const page = async (extra) => {
  const started = process.hrtime.bigint();
  const result = await server.tool('sandbox_view_table', { session_id: session, source: 'big', limit: 50, ...extra });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.rows.length === 0) throw new Error(JSON.stringify(result));
  return ms;
};
const offset = () => Math.floor(Math.random() * 19_999) * 50;

console.log('');
console.log('| sandbox_view_table, 1,000,000 rows x 3 columns, 50 rows a page | n | p50 ms | p90 ms | p99 ms | target |');
console.log('|---|---:|---:|---:|---:|---|');
const row = (label, s, target = '') => console.log(
  `| ${label} | ${s.n} | ${s.p50.toFixed(2)} | ${s.p90.toFixed(2)} | ${s.p99.toFixed(2)} | ${target} |`);
const goal = (s) => `p50 ≤ 50 ms: ${s.p50 <= 50 ? 'met' : '**not met**'}`;

const plain = [];
for (let i = 0; i < PAGES; i++) plain.push(await page({ offset: offset() }));
row('a page in the frame\'s order', summary(plain), goal(summary(plain)));

const firstSorts = [];
for (const [column, descending] of [['x', false], ['x', true], ['label', false], ['label', true], ['n', true]]) {
  firstSorts.push(await page({ sort_by: column, descending }));
}
row('the first page of a new sort (the session sorts the frame)', summary(firstSorts));
const sorted = [];
for (let i = 0; i < PAGES; i++) sorted.push(await page({ sort_by: 'x', descending: true, offset: offset() }));
row('a page of a sorted frame, order kept', summary(sorted), goal(summary(sorted)));

const firstFilter = await page({ filter: 'row-9' });
row('the first page of a new filter (every cell compared)', summary([firstFilter]));
const filtered = [];
for (let i = 0; i < PAGES; i++) filtered.push(await page({ filter: 'row-9', offset: Math.floor(Math.random() * 2000) * 50 }));
row('a page of a filtered frame, order kept', summary(filtered), goal(summary(filtered)));

await server.tool('sandbox_close_session', { session_id: session });
await server.close();
