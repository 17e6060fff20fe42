// Hibernate, resume, fork (README "Hibernate, resume, fork") through the official SDK client
// over stdio, on the backend doctor picks: a session full of state hibernated by idle time
// (no process, no cgroup left) and resumed intact; the same across a server stopped by closing
// stdin and a new one on the same state dir; a socket and a thread reported by name; fork
// diverges; close deletes; kill -9 loses only what was not saved and leaves nothing behind.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { BIN, b64, call, callError, callOk, runtimeStatus, startStdio, text } from './lib/harness.mjs';

const runtime = runtimeStatus();
// The state dir the servers share (the image store is in it): the test's servers and doctor's.
const STATE_DIR = process.env.SANDBOX_STATE_DIR ?? '/var/lib/mcp-sandbox';
const BASE_ENV = {
  SANDBOX_HIBERNATE_AFTER_S: '2',
  SANDBOX_POOL_SIZE: '0', // every sandbox is named after its session: its cgroup can be found
  SANDBOX_STATE_DIR: STATE_DIR,
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function savedDir(id) {
  return path.join(STATE_DIR, 'hibernated', id);
}

// Processes whose cgroup names the session (the namespace backend's cgroup is the session id).
function processesOf(id) {
  const pids = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cgroup`, 'utf8').includes(id)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function cgroupsOf(id) {
  try {
    return execFileSync('find', ['/sys/fs/cgroup', '-maxdepth', '8', '-type', 'd', '-name', `*${id}*`], {
      encoding: 'utf8',
    }).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

async function status(client, id) {
  return (await callOk(client, 'sandbox_session_status', { session_id: id })).structured;
}

async function waitFor(what, predicate, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await sleep(250);
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function python(client, id, code) {
  const { structured } = await callOk(client, 'sandbox_run_python', { session_id: id, code });
  assert.equal(structured.exit_code, 0, structured.stderr);
  return structured;
}

const SETUP = `
import os, socket, threading
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
n = 41
s = "text"
df = pd.read_csv("/mnt/data/input.csv")
arr = np.arange(10) * 2
def add(x):
    return x + n
class Point:
    def __init__(self, x):
        self.x = x
p = Point(7)
square = lambda v: v * v
fig = plt.figure(); plt.plot([1, 2, 3]); fig.savefig("/mnt/data/plot.png"); plt.close(fig)
del fig
os.makedirs("/mnt/data/work", exist_ok=True)
os.chdir("/mnt/data/work")
os.environ["MY_SETTING"] = "on"
conn = socket.socket()
stop = threading.Event()
worker = threading.Thread(target=stop.wait, daemon=True)
worker.start()
`;
const CHECK = `print(n + 1, s, int(df.b.sum()), int(arr.sum()), add(1), isinstance(p, Point), p.x,
      square(3), pd.__name__, np.__name__, plt.__name__, os.getcwd(), os.environ.get("MY_SETTING"),
      os.path.getsize("/mnt/data/plot.png") > 0)`;
const EXPECTED = '42 text 5 90 42 True 7 9 pandas numpy matplotlib.pyplot /mnt/data/work on True\n';

// Closes the server's stdin and waits for it to exit by itself (the SDK's close() would send
// SIGTERM after 2 s: also an orderly stop, but not the one this checks).
async function stopByClosingStdin(server) {
  const proc = server.client.transport?._process;
  if (!proc) return server.close();
  const exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
  proc.stdin.end();
  assert.equal(await exited, 0);
  return server.close();
}

function serveRawWith(env) {
  const proc = spawn(BIN, ['serve'], {
    env: { ...process.env, SANDBOX_LOG_LEVEL: 'info', ...BASE_ENV, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  proc.stdout.resume();
  proc.stderr.resume();
  return proc;
}

// The Docker fallback too, when a daemon has the default image (tools/test loads it).
function dockerSkip() {
  if (!runtime.ok) return runtime.reason;
  try {
    execFileSync('docker', ['image', 'inspect', 'mcp-sandbox/python:latest'], { stdio: 'ignore', timeout: 30000 });
    return false;
  } catch {
    return 'no Docker daemon with mcp-sandbox/python:latest';
  }
}

for (const [label, backend, skip] of [
  ['', {}, runtime.ok ? false : runtime.reason],
  [', docker backend', { SANDBOX_BACKEND: 'docker' }, dockerSkip()],
]) describe(`hibernate, resume, fork (stdio${label})`, { skip }, () => {
  const ENV = { ...BASE_ENV, ...backend };
  const serveRaw = (env) => serveRawWith({ ...backend, ...env });
  test('idle hibernation frees the sandbox; resume, a new server, fork and close', async (t) => {
    let server = await startStdio(ENV);
    try {
      const { structured: first } = await callOk(server.client, 'sandbox_run_python', {
        code: 'import importlib.util; print(importlib.util.find_spec("dill") is not None)',
      });
      const id = first.session_id;
      if (first.stdout.trim() !== 'True') {
        await callOk(server.client, 'sandbox_close_session', { session_id: id });
        t.skip('the image has no dill (rebuild it: mcp-sandbox image build)');
        return;
      }
      await callOk(server.client, 'sandbox_upload_file', {
        session_id: id, filename: 'input.csv', content_base64: b64('a,b\n1,2\n3,3\n'),
      });
      await python(server.client, id, SETUP);
      // Without cgroups (rlimits only) a sandbox's processes cannot be told apart from here.
      const tracked = processesOf(id).length > 0;
      if (!tracked) t.diagnostic('no cgroup names the session: the process checks are vacuous');
      const cgroupsLive = cgroupsOf(id);

      // Idle for 2 s: hibernated, no process and no cgroup left.
      await waitFor('hibernation', async () => (await status(server.client, id)).state === 'hibernated');
      const saved = await status(server.client, id);
      assert.ok(saved.saved_bytes > 0);
      assert.deepEqual(processesOf(id), []);
      if (cgroupsLive.length > 0) assert.deepEqual(cgroupsOf(id), []);
      const listed = (await callOk(server.client, 'sandbox_list_sessions')).structured.sessions;
      assert.equal(listed.find((session) => session.session_id === id)?.state, 'hibernated');

      // The next call resumes it with everything intact, and names what could not come back.
      let resumed = await python(server.client, id, CHECK);
      assert.equal(resumed.stdout, EXPECTED);
      assert.equal(resumed.resumed, true);
      assert.ok(resumed.not_restored.some((item) => item.startsWith('conn (socket.socket)')), resumed.not_restored);
      assert.ok(resumed.not_restored.some((item) => item.startsWith('worker (threading.Thread)')), resumed.not_restored);

      // Fork: two sessions from one point, diverging.
      const { structured: fork } = await callOk(server.client, 'sandbox_fork_session', { session_id: id });
      assert.notEqual(fork.session_id, id);
      await python(server.client, id, 'n = 100');
      const forked = await python(server.client, fork.session_id, 'n = -1\nprint(n, add(1), df.shape)');
      assert.equal(forked.stdout, '-1 0 (2, 2)\n');
      assert.equal((await python(server.client, id, 'print(add(1))')).stdout, '101\n');

      // An orderly stop (stdin closed) saves every live session; a new server resumes them.
      await python(server.client, id, 'after_stop = "kept"');
      await stopByClosingStdin(server);
      await waitFor('the old sandboxes to go', async () => processesOf(id).length === 0);
      server = await startStdio(ENV);
      resumed = await python(server.client, id, 'print(after_stop, n, add(1), square(4))');
      assert.equal(resumed.stdout, 'kept 100 101 16\n');
      assert.equal(resumed.resumed, true);

      // Close deletes what was saved; so does closing a hibernated session (the fork).
      await callOk(server.client, 'sandbox_close_session', { session_id: id });
      assert.equal(fs.existsSync(savedDir(id)), false);
      await callError(server.client, 'sandbox_session_status', { session_id: id }, 'session_not_found');
      await callOk(server.client, 'sandbox_close_session', { session_id: fork.session_id });
      assert.equal(fs.existsSync(savedDir(fork.session_id)), false);
    } finally {
      await server.close();
    }
  });

  test('kill -9 loses only what was not saved and leaves nothing behind', async (t) => {
    let server = await startStdio(ENV);
    let id;
    try {
      const { structured } = await callOk(server.client, 'sandbox_run_python', {
        code: 'import importlib.util; saved = "before"; print(importlib.util.find_spec("dill") is not None)',
      });
      id = structured.session_id;
      if (structured.stdout.trim() !== 'True') {
        await callOk(server.client, 'sandbox_close_session', { session_id: id });
        t.skip('the image has no dill (rebuild it: mcp-sandbox image build)');
        return;
      }
      await waitFor('hibernation', async () => (await status(server.client, id)).state === 'hibernated');
    } finally {
      await server.close();
    }
    // A server that resumes the session, changes it, and is killed before it saves again.
    const proc = serveRaw({ SANDBOX_HIBERNATE_AFTER_S: '600' });
    const rpc = (message) => proc.stdin.write(`${JSON.stringify(message)}\n`);
    let out = '';
    proc.stdout.removeAllListeners('data');
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (chunk) => { out += chunk; });
    rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'kill9', version: '0' } } });
    rpc({ jsonrpc: '2.0', method: 'notifications/initialized' });
    rpc({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'sandbox_run_python', arguments: { session_id: id, code: 'saved = "after"; print("changed")' } } });
    await waitFor('the resumed run', async () => out.includes('changed'), 60000);
    const exited = new Promise((resolve) => proc.on('exit', resolve));
    proc.kill('SIGKILL');
    await exited;
    // The next server sweeps what the killed one left, and resumes from the last save.
    server = await startStdio(ENV);
    try {
      const back = await python(server.client, id, 'print(saved)');
      assert.equal(back.stdout, 'before\n');
      assert.equal(back.resumed, true);
      await callOk(server.client, 'sandbox_close_session', { session_id: id });
      assert.equal(fs.existsSync(savedDir(id)), false);
    } finally {
      await server.close();
    }
    await waitFor('no process left', async () => processesOf(id).length === 0);
    assert.deepEqual(cgroupsOf(id), []);
  });

  test('a tampered saved state is a clear error, and close still removes it', async (t) => {
    let server = await startStdio(ENV);
    try {
      const { structured } = await callOk(server.client, 'sandbox_run_python', { code: 'x = 1' });
      const id = structured.session_id;
      await waitFor('hibernation', async () => (await status(server.client, id)).state === 'hibernated');
      const archive = path.join(savedDir(id), 'state.tar');
      const bytes = fs.readFileSync(archive);
      bytes[bytes.length >> 1] ^= 0xff;
      fs.writeFileSync(archive, bytes);
      const refused = await call(server.client, 'sandbox_run_python', { session_id: id, code: 'print(x)' });
      assert.equal(refused.isError, true);
      assert.match(text(refused), /damaged or was altered on disk/);
      await callOk(server.client, 'sandbox_close_session', { session_id: id });
      assert.equal(fs.existsSync(savedDir(id)), false);
    } finally {
      await server.close();
    }
  });
});
