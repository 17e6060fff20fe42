// Issue 26's proof: a real Prometheus (Debian's `prometheus`, started here on loopback) scrapes
// `serve --http` while the official SDK client runs an MCP workflow (calls, one OOM, one
// timeout, a pool claim), and queries through Prometheus's HTTP API return the counters and the
// histogram. Prometheus scrapes both ways /metrics is served: the HTTP listener with the bearer
// token (`authorization` in the scrape config, job "mcp") and SANDBOX_METRICS_ADDR (job
// "node"). `promtool check metrics` judges the server's own exposition after the workflow.
// Runs on the namespace backend, and on Docker when a daemon answers (as docker-fallback does).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freePort } from './lib/free_port.mjs';
import { BIN, callError, callOk, runtimeStatus, startHttp, tempDir } from './lib/harness.mjs';

const TOKEN = 'metrics-e2e-token-7f3a9c';
const OOM_CODE = 'blocks = []\nwhile True:\n    blocks.append(bytearray(16 << 20))';

function which(command) {
  try {
    return execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

function whyNot() {
  const runtime = runtimeStatus();
  if (!runtime.ok) return runtime.reason;
  if (!which('prometheus')) return 'prometheus is not installed (apt-get install prometheus)';
  if (!which('promtool')) return 'promtool is not installed (apt-get install prometheus)';
  return '';
}

// The backends to run on: namespace when doctor says it is usable, docker when a daemon answers.
function backends() {
  const doctor = JSON.parse(execFileSync(BIN, ['doctor', '--json'], { encoding: 'utf8', timeout: 60000 }));
  const list = [];
  if (doctor.backend?.usable && doctor.backend.name === 'namespace') list.push('namespace');
  if (doctor.docker?.api_ok) list.push('docker');
  else console.log(`# metrics on the docker backend skipped: ${doctor.docker?.detail ?? 'no daemon'}`);
  return list;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Prometheus on loopback scraping `targets` ({ mcp: "host:port", node: "host:port" }) every
// second; resolves once its API answers.
async function startPrometheus(dir, targets) {
  const port = await freePort();
  const config = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: mcp
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials: ${TOKEN}
    static_configs:
      - targets: ['${targets.mcp}']
  - job_name: node
    metrics_path: /metrics
    static_configs:
      - targets: ['${targets.node}']
`;
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), config);
  execFileSync('promtool', ['check', 'config', path.join(dir, 'prometheus.yml')], { stdio: 'pipe' });
  const log = { text: '' };
  const proc = spawn('prometheus', [
    `--config.file=${path.join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (chunk) => { log.text = (log.text + chunk).slice(-20000); });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const api = `http://127.0.0.1:${port}/api/v1`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/-/ready`)).ok) break;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null || i > 300) throw new Error(`prometheus did not start:\n${log.text}`);
    await sleep(100);
  }
  return {
    api,
    log,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

// The value of an instant PromQL query that returns one series (NaN when it returns none).
async function queryValue(api, promql) {
  const response = await fetch(`${api}/query?query=${encodeURIComponent(promql)}`);
  const body = await response.json();
  assert.equal(body.status, 'success', `${promql}: ${JSON.stringify(body)}`);
  const result = body.data.result;
  if (result.length === 0) return NaN;
  assert.equal(result.length, 1, `${promql} returned ${result.length} series`);
  return Number(result[0].value[1]);
}

// Waits until `promql` satisfies `ok` (Prometheus scrapes every second), then returns its value.
async function eventually(api, promql, ok, seconds = 20) {
  let value;
  for (let i = 0; i < seconds * 4; i++) {
    value = await queryValue(api, promql);
    if (ok(value)) return value;
    await sleep(250);
  }
  assert.fail(`${promql} is ${value} after ${seconds} s`);
}

const skip = whyNot();
if (skip) console.log(`# metrics tests skipped: ${skip}`);

for (const backend of skip ? ['namespace'] : backends()) {
  describe(`metrics: Prometheus scrapes the ${backend} backend`, { skip: skip || false }, () => {
    let server;
    let prometheus;
    let dir;
    let metricsAddr;
    let session;
    let oomEnforced = false;
    const job = `job="mcp",backend="${backend}"`;

    before(async () => {
      dir = tempDir('mcp-metrics-e2e-');
      metricsAddr = `127.0.0.1:${await freePort()}`;
      server = await startHttp({
        SANDBOX_AUTH_TOKEN: TOKEN,
        SANDBOX_BACKEND: backend,
        SANDBOX_METRICS_ADDR: metricsAddr,
        SANDBOX_POOL_SIZE: '1',
        SANDBOX_POOL_PRELOAD: '',
        SANDBOX_MEMORY_LIMIT: '256m',
        SANDBOX_REPLICA_ID: 'm1',
        SANDBOX_LOG_FORMAT: 'json',
      });
      prometheus = await startPrometheus(dir, { mcp: `127.0.0.1:${server.server.port}`, node: metricsAddr });
    });

    after(async () => {
      await server?.close();
      await prometheus?.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('both listeners are up in Prometheus, and /metrics asks for the token', async () => {
      assert.equal(await eventually(prometheus.api, 'up{job="mcp"}', (v) => v === 1), 1);
      assert.equal(await eventually(prometheus.api, 'up{job="node"}', (v) => v === 1), 1);
      const refused = await fetch(`http://127.0.0.1:${server.server.port}/metrics`);
      assert.equal(refused.status, 401);
      await eventually(prometheus.api, 'mcp_sandbox_http_refusals_total{job="mcp",status="401"}', (v) => v >= 1);
      const info = await queryValue(prometheus.api,
        `mcp_sandbox_info{job="mcp",replica="m1",backend="${backend}"}`);
      assert.equal(info, 1);
      assert.ok(await queryValue(prometheus.api, 'process_resident_memory_bytes{job="mcp"}') > 1e6);
      assert.ok(await queryValue(prometheus.api, 'process_open_fds{job="node"}') > 3);
    });

    test('a session takes the warm pool\'s sandbox and runs calls', async () => {
      // The pool has its sandbox once it reads 1 (the session then claims it, not a cold start).
      await eventually(prometheus.api, 'mcp_sandbox_pool_ready{job="mcp"}', (v) => v === 1, 60);
      const created = await callOk(server.client, 'sandbox_create_session', {});
      session = created.structured.session_id;
      const memory = created.structured.enforced?.limits?.find((limit) => limit.name === 'memory');
      oomEnforced = ['cgroup2', 'cgroup1', 'docker'].includes(memory?.mechanism);
      for (let i = 0; i < 3; i++) {
        const run = await callOk(server.client, 'sandbox_run_python', { session_id: session, code: `print(${i} * 7)` });
        assert.equal(run.structured.stdout.trim(), String(i * 7));
        // Every run result carries what the call used (call_usage.h).
        assert.equal(typeof run.structured.usage.wall_seconds, 'number');
        assert.equal(typeof run.structured.usage.cpu_seconds, 'number');
        if (oomEnforced) assert.equal(run.structured.usage.memory_peak_scope, 'call');
      }
    });

    test('one timeout and one OOM', async (t) => {
      await callError(server.client, 'sandbox_run_python',
        { session_id: session, code: 'import time\nwhile True:\n    time.sleep(0.05)', timeout_s: 1 }, 'timeout');
      if (!oomEnforced) {
        t.skip('memory is not enforced by a cgroup here: no OOM kill to count');
        return;
      }
      await callError(server.client, 'sandbox_run_python', { session_id: session, code: OOM_CODE }, 'oom');
    });

    test('Prometheus has the counters and the histogram', async () => {
      const api = prometheus.api;
      const runs = 'tool="sandbox_run_python"';
      await eventually(api, `mcp_sandbox_tool_calls_total{job="mcp",${runs},outcome="timeout"}`, (v) => v === 1);
      assert.equal(await eventually(api, `mcp_sandbox_tool_calls_total{job="mcp",${runs},outcome="ok"}`, (v) => v === 3), 3);
      assert.equal(await queryValue(api, `mcp_sandbox_runs_timed_out_total{${job}}`), 1);
      const ooms = oomEnforced ? 1 : 0;
      assert.equal(await eventually(api, `mcp_sandbox_runs_oom_killed_total{${job}}`, (v) => v === ooms), ooms);
      assert.equal(await queryValue(api, `mcp_sandbox_tool_calls_total{job="mcp",${runs},outcome="oom"}`),
        oomEnforced ? 1 : NaN);
      assert.equal(await queryValue(api, `mcp_sandbox_runs_cancelled_total{${job}}`), 0);
      // The histogram: every run observed once, the 1 s timeout in a bucket above 1 s.
      const calls = 4 + ooms;
      assert.equal(await queryValue(api,
        `mcp_sandbox_tool_call_duration_seconds_count{job="mcp",${runs}}`), calls);
      assert.equal(await queryValue(api,
        `mcp_sandbox_tool_call_duration_seconds_bucket{job="mcp",${runs},le="+Inf"}`), calls);
      const underOne = await queryValue(api,
        `mcp_sandbox_tool_call_duration_seconds_bucket{job="mcp",${runs},le="1"}`);
      assert.ok(underOne <= calls - 1, `${underOne} runs of ${calls} took at most 1 s (one timed out after 1 s)`);
      assert.ok(await queryValue(api, `mcp_sandbox_tool_call_duration_seconds_sum{job="mcp",${runs}}`) >= 1);
      const p99 = await queryValue(api,
        `histogram_quantile(0.99, sum by (le) (mcp_sandbox_tool_call_duration_seconds_bucket{job="mcp",${runs}}))`);
      assert.ok(p99 > 1, `p99 ${p99}`);
      // Sessions and the pool.
      assert.equal(await queryValue(api, 'mcp_sandbox_pool_claims_total{job="mcp"}'), 1);
      assert.equal(await queryValue(api, `mcp_sandbox_sessions_started_total{${job}}`), 1);
      assert.equal(await queryValue(api, `mcp_sandbox_sessions_live{${job}}`), 1);
      assert.equal(await queryValue(api, 'mcp_sandbox_pool_size{job="mcp"}'), 1);
      assert.ok(await queryValue(api, 'mcp_sandbox_http_connections_total{job="mcp"}') >= 1);
      // The same figures on the listener of its own.
      assert.equal(await queryValue(api, `mcp_sandbox_sessions_live{job="node",backend="${backend}"}`), 1);
    });

    test('closing the session shows in the gauges and counters', async () => {
      await callOk(server.client, 'sandbox_close_session', { session_id: session });
      await eventually(prometheus.api, `mcp_sandbox_sessions_live{${job}}`, (v) => v === 0);
      assert.equal(await queryValue(prometheus.api, `mcp_sandbox_sessions_closed_total{${job}}`), 1);
    });

    test('the JSON log parses line by line and carries the client\'s traceparent', async () => {
      const traceparent = `00-${'4bf92f3577b34da6a3ce929d0e0e4736'}-${backend === 'docker' ? 'a0f067aa0ba902b7' : '00f067aa0ba902b7'}-01`;
      const created = await callOk(server.client, 'sandbox_create_session', {});
      const traced = await server.client.callTool(
        { name: 'sandbox_run_python', arguments: { session_id: created.structured.session_id, code: 'print("traced")' },
          _meta: { traceparent } },
        undefined, { timeout: 120000 });
      assert.ok(!traced.isError);
      // A traceparent of the wrong shape is not logged.
      await server.client.callTool({ name: 'sandbox_list_sessions', arguments: {},
        _meta: { traceparent: 'not-a-traceparent"injected' } });
      await callOk(server.client, 'sandbox_close_session', { session_id: created.structured.session_id });
      const lines = server.stderr.text.split('\n').filter((line) => line.length > 0);
      assert.ok(lines.length > 5);
      const entries = lines.map((line) => {
        try {
          return JSON.parse(line);
        } catch (error) {
          assert.fail(`not one JSON object: ${line}`);
        }
      });
      for (const entry of entries) {
        for (const key of ['time', 'level', 'event', 'msg']) assert.ok(key in entry, `${key} missing: ${JSON.stringify(entry)}`);
        assert.equal(entry.replica, 'm1');
      }
      const call = entries.find((entry) => entry.event === 'tool_call' && entry.traceparent === traceparent);
      assert.ok(call, 'a tool_call line with the traceparent');
      assert.equal(call.tool, 'sandbox_run_python');
      assert.equal(call.session_id, created.structured.session_id);
      assert.equal(call.outcome, 'ok');
      assert.equal(typeof call.duration_ms, 'number');
      assert.ok(call.request_id !== undefined);
      assert.ok(!server.stderr.text.includes('injected'), 'an invalid traceparent is not logged');
      assert.ok(!server.stderr.text.includes(TOKEN), 'the token is never logged');
    });

    test('promtool finds no problem in the exposition', async () => {
      const body = await (await fetch(`http://127.0.0.1:${server.server.port}/metrics`,
        { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
      assert.match(body, /^# HELP mcp_sandbox_info /m);
      assert.ok(!body.includes(TOKEN));
      assert.ok(!body.includes(session), 'no session id in a label');
      execFileSync('promtool', ['check', 'metrics'], { input: body, stdio: ['pipe', 'pipe', 'pipe'] });
    });
  });
}

