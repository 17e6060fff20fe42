// Issue 26's usage columns, end to end over stdio with the official SDK client: a 50 MB file in
// /mnt/data (and one in /tmp) shows in the session's disk use in sandbox_session_status and
// sandbox_list_sessions; a download from a loopback HTTP server through the egress allowlist
// shows in the session's egress bytes; a second session that did neither reports ~nothing.
// `mcp-sandbox sessions ls --json` reads the same disk figures from the host while it lives, and
// the egress bytes the server publishes; `mcp-sandbox top` (one frame: stdout is a pipe) shows
// the same columns, and a session busy in the background at the top with its CPU %.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { BIN, callOk, runtimeStatus, startStdio } from './lib/harness.mjs';

const runtime = runtimeStatus();
const MB = 1 << 20;
const BLOB = Buffer.alloc(3 * MB, 0x61);
// The images live in the state dir: the server and `sessions ls` use the usual one.
const STATE_DIR = process.env.SANDBOX_STATE_DIR ?? '/var/lib/mcp-sandbox';

describe('usage: disk and egress bytes per session', { skip: runtime.ok ? false : runtime.reason }, () => {
  let blobServer;
  let port;
  let server;
  before(async () => {
    blobServer = http.createServer((request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': BLOB.length });
      response.end(BLOB);
    });
    await new Promise((resolve) => blobServer.listen(0, '127.0.0.1', resolve));
    port = blobServer.address().port;
    server = await startStdio({
      SANDBOX_EGRESS_ALLOW: `127.0.0.1:${port}`,
      SANDBOX_STATE_DIR: STATE_DIR,
      SANDBOX_IMAGE: 'python-small',
    });
  });
  after(async () => {
    await server?.close();
    await new Promise((resolve) => blobServer?.close(resolve) ?? resolve());
  });

  test('a 50 MB file shows in disk use; a download shows in egress bytes', async () => {
    const { client } = server;
    const made = await callOk(client, 'sandbox_run_python', {
      code: "open('/mnt/data/big.bin', 'wb').write(b'x' * (50 << 20))\n"
        + "open('/tmp/scratch.bin', 'wb').write(b'y' * (5 << 20))",
    });
    const session = made.structured.session_id;
    const idle = await callOk(client, 'sandbox_run_python', { code: 'print(1)' });
    const other = idle.structured.session_id;
    assert.notEqual(other, session);

    const status = (await callOk(client, 'sandbox_session_status', { session_id: session })).structured;
    assert.ok(status.usage.data_bytes >= 50 * MB, JSON.stringify(status.usage));
    assert.ok(status.usage.data_bytes < 60 * MB, JSON.stringify(status.usage));
    assert.ok(status.usage.tmp_bytes >= 5 * MB && status.usage.tmp_bytes < 15 * MB, JSON.stringify(status.usage));
    const quiet = (await callOk(client, 'sandbox_session_status', { session_id: other })).structured;
    assert.ok(quiet.usage.data_bytes < MB, JSON.stringify(quiet.usage));
    assert.equal(quiet.usage.egress_bytes, 0);

    // The host's view, while the sandbox lives (namespace backend: `sessions ls` lists those).
    const listed = JSON.parse(execFileSync(BIN, ['sessions', 'ls', '--json', '--state-dir', STATE_DIR], { encoding: 'utf8' }));
    const record = listed.sessions.find((entry) => entry.session_id === session);
    if (status.backend === 'namespace') assert.ok(record, JSON.stringify(listed.sessions));
    if (record) {
      assert.ok(record.usage.data_bytes >= 50 * MB, JSON.stringify(record));
      assert.ok(record.usage.memory_bytes > 0, JSON.stringify(record));
    }

    // A download from the loopback server, through the egress proxy (NO_PROXY would send the
    // host's 127.0.0.1 to the sandbox's own loopback).
    const fetched = await callOk(client, 'sandbox_run_python', {
      session_id: session,
      code: "import os, urllib.request\nos.environ['NO_PROXY'] = os.environ['no_proxy'] = ''\n"
        + `print(len(urllib.request.urlopen('http://127.0.0.1:${port}/blob', timeout=30).read()))`,
    });
    assert.equal(fetched.structured.stdout.trim(), String(BLOB.length), JSON.stringify(fetched.structured));
    const after = (await callOk(client, 'sandbox_session_status', { session_id: session })).structured;
    assert.ok(after.usage.egress_bytes >= BLOB.length, JSON.stringify(after.usage));
    assert.equal(after.usage.egress_bytes, after.egress.bytes);
    if (status.backend === 'namespace') {
      // The host's view of the egress bytes: what the server published, both directions.
      const hostView = JSON.parse(execFileSync(BIN, ['sessions', 'ls', '--json', '--state-dir', STATE_DIR], { encoding: 'utf8' }));
      const byId = (id) => hostView.sessions.find((entry) => entry.session_id === id);
      assert.equal(byId(session).usage.egress_bytes, after.usage.egress_bytes, JSON.stringify(byId(session)));
      assert.equal(byId(other).usage.egress_bytes, 0, JSON.stringify(byId(other)));
      const table = execFileSync(BIN, ['sessions', 'ls', '--state-dir', STATE_DIR], { encoding: 'utf8' });
      assert.match(table.split('\n')[0], /\bTMP\s+EGRESS\s+SERVER PID\b/);
      const row = table.split('\n').find((line) => line.startsWith(`${session} `));
      assert.ok(row, table);
      // SESSION INIT PID HOST UID ALIVE MEMORY CPU S PIDS DATA TMP EGRESS ...: the 10th column.
      assert.match(row.trim().split(/\s+/)[9], /^[0-9.]+(B|KiB|MiB)$/, row);
      assert.notEqual(row.trim().split(/\s+/)[9], '0B', row);
    }
    const sessions = (await callOk(client, 'sandbox_list_sessions', {})).structured.sessions;
    const mine = sessions.find((entry) => entry.session_id === session);
    assert.ok(mine.usage.data_bytes >= 50 * MB && mine.usage.egress_bytes >= BLOB.length, JSON.stringify(mine));
    assert.equal(sessions.find((entry) => entry.session_id === other).usage.egress_bytes, 0);

    // Deleting the file shows after the next run.
    await callOk(client, 'sandbox_run_python', { session_id: session, code: "import os; os.remove('/mnt/data/big.bin')" });
    const emptied = (await callOk(client, 'sandbox_session_status', { session_id: session })).structured;
    assert.ok(emptied.usage.data_bytes < 5 * MB, JSON.stringify(emptied.usage));
  });

  test('mcp-sandbox top: one frame without a terminal, the busy session first', async (t) => {
    const { client } = server;
    // A process of the session's own spinning in the background while top samples.
    const busy = await callOk(client, 'sandbox_run_python', {
      code: "import subprocess, sys\n"
        + "spinner = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\nprint(spinner.pid)",
    });
    const session = busy.structured.session_id;
    const status = (await callOk(client, 'sandbox_session_status', { session_id: session })).structured;
    if (status.backend !== 'namespace') {
      t.skip('top lists namespace sandboxes; this server runs another backend');
      return;
    }
    const quiet = (await callOk(client, 'sandbox_run_python', { code: 'print(1)' })).structured.session_id;
    try {
      // stdout is a pipe here: one frame and out, no --once needed.
      const frame = execFileSync(BIN, ['top', '--interval', '1', '--state-dir', STATE_DIR], { encoding: 'utf8', timeout: 30_000 });
      const lines = frame.split('\n');
      assert.match(lines[0], /^mcp-sandbox top - /, frame);
      const header = lines.findIndex((line) => line.startsWith('SESSION '));
      assert.ok(header > 0, frame);
      assert.match(lines[header], /CPU %\s+MEMORY\s+PIDS\s+DATA\s+TMP\s+EGRESS\s+SERVER/);
      const rows = lines.slice(header + 1).filter((line) => line.startsWith('sess_'));
      const columns = (id) => rows.find((line) => line.startsWith(`${id} `))?.trim().split(/\s+/);
      const spinning = columns(session);
      const idle = columns(quiet);
      assert.ok(spinning && idle, frame);
      // One core's worth, more or less, on a loaded host; the idle one next to nothing.
      assert.ok(Number(spinning[1]) >= 30, frame);
      assert.ok(Number(idle[1]) < 20, frame);
      assert.ok(Number(spinning[3]) >= 2, frame);  // the worker and its spinner at least
      assert.equal(spinning[6], '0B', frame);       // egress: allowed, nothing carried
      assert.equal(spinning[7], 'alive', frame);
      // Busiest first.
      assert.ok(rows.indexOf(rows.find((line) => line.startsWith(`${session} `))) <
        rows.indexOf(rows.find((line) => line.startsWith(`${quiet} `))), frame);
    } finally {
      await callOk(client, 'sandbox_close_session', { session_id: session });
    }
    // Bad flags are usage errors (exit 2), never a frame.
    for (const args of [['--interval', '0'], ['--interval', 'soon'], ['extra']]) {
      assert.throws(() => execFileSync(BIN, ['top', ...args], { stdio: 'pipe' }), (error) => error.status === 2, args.join(' '));
    }
  });
});
