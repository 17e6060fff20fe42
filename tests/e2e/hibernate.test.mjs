// Hibernate, resume, fork (docs/sessions.md "Hibernate, resume, fork") through the official SDK client,
// over stdio and over Streamable HTTP, on the namespace backend and the Docker fallback, as root
// and as an ordinary user: a session full of state hibernated by idle time (no process, no
// cgroup, no container left) and resumed intact; the same across a server stopped in an orderly
// way (stdin closed; SIGTERM over HTTP) and a new one on the same state dir; a socket and a
// thread reported by name; fork diverges; close deletes; kill -9 loses only what was not saved
// and leaves nothing behind; a state above the cap, a tampered and a crafted saved state (stdio
// only: the transport plays no part there) are clear errors or stay inside the session's own
// sandbox.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { BIN, b64, call, callError, callOk, runtimeStatus, startHttp, startStdio, text } from './lib/harness.mjs';

const runtime = runtimeStatus();
// The state dir root's servers share (the image store is in it): the test's servers and doctor's.
const STATE_DIR = process.env.SANDBOX_STATE_DIR ?? '/var/lib/mcp-sandbox';
const BASE_ENV = {
  SANDBOX_HIBERNATE_AFTER_S: '2',
  SANDBOX_POOL_SIZE: '0', // every sandbox is named after its session: its cgroup can be found
};
const DOCKER = { SANDBOX_BACKEND: 'docker' };
const DOCKER_IMAGE = 'mcp-sandbox/python:latest';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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

// The server's descendants: with no pool, the namespace backend's only ones are its sessions'
// sandboxes. The check that holds without cgroups (an ordinary user's server has none).
function descendantsOf(pid) {
  const children = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  const found = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const next = queue.shift();
    found.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return found;
}

const alive = (pid) => fs.existsSync(`/proc/${pid}`);

// The Docker fallback's containers are named mcp-sandbox-<session id> (runtime/docker).
function containersOf(id) {
  return execFileSync('docker', ['ps', '-aq', '--filter', `name=mcp-sandbox-${id}`], {
    encoding: 'utf8',
    timeout: 30000,
  }).split('\n').filter(Boolean);
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

// --- Transports: how a server is started, stopped in an orderly way, and killed.
const STDIO = {
  start: (env, wrapper) => startStdio(env, [], wrapper),
  pid: (server) => server.client.transport._process.pid,
  // Closes the server's stdin and waits for it to exit by itself (the SDK's close() would
  // send SIGTERM after 2 s: also an orderly stop, but not the one this checks).
  async orderlyStop(server) {
    const proc = server.client.transport._process;
    const exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.stdin.end();
    assert.equal(await exited, 0);
    return server.close();
  },
  async kill9(server) {
    const proc = server.client.transport._process;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGKILL');
    await exited;
    await server.close();
  },
};
const HTTP = {
  start(env, wrapper) {
    assert.deepEqual(wrapper, [], 'the HTTP variants run the server as this user');
    return startHttp(env);
  },
  pid: (server) => server.server.proc.pid,
  // SIGTERM, as a service manager stops it; the MCP session is left open, as a client that
  // is still running would leave it.
  async orderlyStop(server) {
    assert.deepEqual(await server.server.stop(), { code: 0, signal: null });
    await server.client.close();
  },
  async kill9(server) {
    const exited = new Promise((resolve) => server.server.proc.once('exit', resolve));
    server.server.proc.kill('SIGKILL');
    await exited;
    await server.client.close();
  },
};

// --- Who runs the server. Root uses the shared state dir; an ordinary user (uid 65534, or
// SANDBOX_TEST_UNPRIV_UID, as tests/runtime/ns/as_unprivileged.sh runs the namespace suites) a
// state dir of its own, whose image store is root's (readable by all) through a symlink.
const UNPRIV_UID = Number(process.env.SANDBOX_TEST_UNPRIV_UID ?? 65534);
const UNPRIV_WRAPPER = ['setpriv', `--reuid=${UNPRIV_UID}`, `--regid=${UNPRIV_UID}`, '--clear-groups',
  '--inh-caps=-all', '--'];

function dockerSkip() {
  if (!runtime.ok) return runtime.reason;
  try {
    execFileSync('docker', ['image', 'inspect', DOCKER_IMAGE], { stdio: 'ignore', timeout: 30000 });
    return false;
  } catch {
    return `no Docker daemon with ${DOCKER_IMAGE}`;
  }
}

function makeUnprivileged() {
  const none = (reason) => ({ skip: reason, dockerSkip: reason, stateDir: '' });
  if (!runtime.ok) return none(runtime.reason);
  if (process.getuid() !== 0) return none('already an ordinary user: the variants above are that run');
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-hibernate-unpriv-'));
  fs.chownSync(stateDir, UNPRIV_UID, UNPRIV_UID);
  fs.symlinkSync(path.join(STATE_DIR, 'images'), path.join(stateDir, 'images'));
  let doctor;
  try {
    doctor = JSON.parse(execFileSync(UNPRIV_WRAPPER[0], [...UNPRIV_WRAPPER.slice(1), BIN, 'doctor', '--json'], {
      encoding: 'utf8',
      timeout: 60000,
      env: { ...process.env, SANDBOX_STATE_DIR: stateDir },
    }));
  } catch (error) {
    return { ...none(`doctor as uid ${UNPRIV_UID} failed: ${error.message.split('\n')[0]}`), stateDir };
  }
  const skip = doctor.backend?.usable && doctor.backend?.name === 'namespace'
    ? false
    : `uid ${UNPRIV_UID} has no namespace backend: ${doctor.backend?.reason}`;
  // The Docker fallback needs the daemon's socket, which is root's (or the docker group's, which
  // is root in all but name): an ordinary user's server has none and uses namespaces.
  const docker = doctor.docker?.reachable
    ? dockerSkip()
    : `an ordinary user reaches no Docker daemon (${doctor.docker?.detail ?? 'unknown'}): the Docker ` +
      'fallback needs the daemon socket, i.e. root or the docker group (root in all but name)';
  return { skip, dockerSkip: docker, stateDir };
}

const unprivileged = makeUnprivileged();
after(() => {
  if (unprivileged.stateDir) fs.rmSync(unprivileged.stateDir, { recursive: true, force: true });
});

const ROOT = { env: { SANDBOX_STATE_DIR: STATE_DIR }, wrapper: [], stateDir: STATE_DIR, uid: process.getuid() };
const UNPRIV = {
  env: { SANDBOX_STATE_DIR: unprivileged.stateDir },
  wrapper: UNPRIV_WRAPPER,
  stateDir: unprivileged.stateDir,
  uid: UNPRIV_UID,
};
const nsSkip = runtime.ok ? false : runtime.reason;
const VARIANTS = [
  { label: 'stdio', transport: STDIO, backend: {}, user: ROOT, skip: nsSkip, hostile: true, bigState: true },
  { label: 'stdio, docker backend', transport: STDIO, backend: DOCKER, user: ROOT, skip: dockerSkip(), hostile: true },
  { label: 'HTTP', transport: HTTP, backend: {}, user: ROOT, skip: nsSkip },
  { label: 'HTTP, docker backend', transport: HTTP, backend: DOCKER, user: ROOT, skip: dockerSkip() },
  { label: 'stdio, ordinary user', transport: STDIO, backend: { SANDBOX_BACKEND: 'namespace' }, user: UNPRIV,
    skip: unprivileged.skip, hostile: true },
  { label: 'stdio, ordinary user, docker backend', transport: STDIO, backend: DOCKER, user: UNPRIV,
    skip: unprivileged.dockerSkip },
];

for (const { label, transport, backend, user, skip, hostile, bigState } of VARIANTS) describe(`hibernate, resume, fork (${label})`, { skip }, () => {
  const ENV = { ...BASE_ENV, ...user.env, ...backend };
  const isDocker = backend.SANDBOX_BACKEND === 'docker';
  const start = (env = {}) => transport.start({ ...ENV, ...env }, user.wrapper);
  const savedDir = (id) => path.join(user.stateDir, 'hibernated', id);
  // What is left of a session's sandbox: its processes (by cgroup, else by the server's
  // descendants), its cgroups, its container.
  const leftOf = (id, serverPid) => ({
    processes: [...processesOf(id), ...(serverPid ? descendantsOf(serverPid) : [])],
    cgroups: cgroupsOf(id),
    containers: isDocker ? containersOf(id) : [],
  });
  const NOTHING = { processes: [], cgroups: [], containers: [] };

  test('idle hibernation frees the sandbox; resume, a new server, fork and close', async (t) => {
    let server = await start();
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
      // The live sandbox is found by each check that applies, so their emptiness below means
      // something: the namespace backend's processes are the server's descendants (and in the
      // session's cgroup when there are cgroups); the Docker fallback's are in its container.
      const pid = transport.pid(server);
      const live = leftOf(id, pid);
      if (isDocker) assert.equal(live.containers.length, 1, 'the session has a container');
      else assert.ok(live.processes.length > 0, 'the sandbox is the server\'s descendant');
      if (live.cgroups.length === 0) t.diagnostic('no cgroup names the session (rlimits only, or Docker\'s own)');

      // Idle for 2 s: hibernated, no process, no cgroup and no container left.
      await waitFor('hibernation', async () => (await status(server.client, id)).state === 'hibernated');
      const saved = await status(server.client, id);
      assert.ok(saved.saved_bytes > 0);
      assert.deepEqual(leftOf(id, pid), NOTHING);
      // Written by the server's user: the ordinary user's run really is one.
      assert.equal(fs.statSync(path.join(savedDir(id), 'state.tar')).uid, user.uid);
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

      // An orderly stop saves every live session; a new server on the state dir resumes them.
      await python(server.client, id, 'after_stop = "kept"');
      await transport.orderlyStop(server);
      await waitFor('the old sandboxes to go', async () => processesOf(id).length === 0 &&
        (!isDocker || containersOf(id).length === 0));
      server = await start();
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
    let server = await start();
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
    server = await start({ SANDBOX_HIBERNATE_AFTER_S: '600' });
    const changed = await python(server.client, id, 'saved = "after"; print("changed")');
    assert.equal(changed.resumed, true);
    const orphans = descendantsOf(transport.pid(server));
    await transport.kill9(server);
    // The next server sweeps what the killed one left, and resumes from the last save.
    server = await start();
    try {
      const back = await python(server.client, id, 'print(saved)');
      assert.equal(back.stdout, 'before\n');
      assert.equal(back.resumed, true);
      await callOk(server.client, 'sandbox_close_session', { session_id: id });
      assert.equal(fs.existsSync(savedDir(id)), false);
    } finally {
      await server.close();
    }
    // The killed server's sandbox goes when the next one sweeps it, and its container or cgroup
    // a moment after its processes.
    await waitFor('nothing left', async () => !orphans.some(alive) &&
      JSON.stringify(leftOf(id, 0)) === JSON.stringify(NOTHING));
  });

  // The hostile cases run over stdio only (the transport plays no part), the cap and the tmp dir
  // as root only (nor does the user), the tmp dir on one backend (the check runs in the sandbox).
  if (hostile && user === ROOT) test('a state above the cap is refused, by name, and the session goes on', async () => {
    const server = await start({ SANDBOX_SAVED_MAX_BYTES: '1m' });
    try {
      const { structured } = await callOk(server.client, 'sandbox_run_python', {
        code: 'big = bytes(4 << 20)\nkeep = 1',
      });
      const id = structured.session_id;
      await waitFor('the refusal', async () => server.stderr.text.includes(`session ${id} could not be hibernated`));
      assert.match(server.stderr.text, /larger than its cap of \d+ bytes \(at 'big', bytes\)/);
      assert.equal((await status(server.client, id)).state, 'idle');
      assert.equal(fs.existsSync(savedDir(id)), false);
      assert.equal((await python(server.client, id, 'print(keep, len(big))')).stdout, `1 ${4 << 20}\n`);
      await callOk(server.client, 'sandbox_close_session', { session_id: id });
    } finally {
      await server.close();
    }
  });

  // The archive is written in the sandbox's /tmp (a tmpfs, 128 MiB by default) before the server
  // reads it: a state below the memory limit that cannot fit there is refused up front.
  if (bigState) test('a state too large for the sandbox\'s tmp dir is refused, and the session goes on', async () => {
    const server = await start();
    try {
      const { structured } = await callOk(server.client, 'sandbox_run_python', {
        code: 'big = bytearray(150 << 20)\nkeep = 1',
      });
      const id = structured.session_id;
      await waitFor('the refusal', async () => server.stderr.text.includes(`session ${id} could not be hibernated`));
      assert.match(server.stderr.text, /ValueError: the session's state and files take about \d+ bytes, above its cap here: the \d+ bytes free in the sandbox's tmp dir/);
      assert.equal((await status(server.client, id)).state, 'idle');
      assert.equal((await python(server.client, id, 'print(keep, len(big))')).stdout, `1 ${150 << 20}\n`);
      await callOk(server.client, 'sandbox_close_session', { session_id: id });
    } finally {
      await server.close();
    }
  });

  if (hostile) test('a tampered or crafted saved state is a clear error or stays in the session\'s sandbox', async () => {
    const server = await start();
    try {
      // Tampered on disk: refused before any sandbox loads it; close still removes it.
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

      // Crafted in the sandbox: a cell replaces the save with an archive whose pickle runs
      // code when loaded and whose member climbs out. The server stores it without loading
      // it; the resumed session's own new sandbox loads it, so the code runs there (its /tmp)
      // and nothing appears on the host.
      const marker = `hibernate-crafted-${process.pid}-${Date.now()}`;
      const { structured: hostile } = await callOk(server.client, 'sandbox_run_python', {
        code: `
import io, json, os, pickle, sys, tarfile
class Payload:
    def __reduce__(self):
        return (exec, ("open('/tmp/${marker}', 'w').write('ran')",))
def crafted(action, argument):
    if action != "save":
        return
    path = os.path.join(os.environ.get("SANDBOX_AGENT_TMP_DIR", "/tmp"), ".sandbox-session-state.tar")
    state = {"mechanism": "pickle", "modules": {}, "env": {}, "skipped": []}
    with tarfile.open(path, "w") as archive:
        for name, data in (("state/namespace.pkl", pickle.dumps({"payload": Payload()})),
                           ("state/state.json", json.dumps(state).encode()),
                           ("data/../../../../../../tmp/${marker}-climbed", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    print(json.dumps({"size": os.path.getsize(path), "mechanism": "pickle", "saved": [], "skipped": []}))
sys.modules["_sandbox_worker"]._session_state = crafted
`,
      });
      const crafted = hostile.session_id;
      await waitFor('hibernation', async () => (await status(server.client, crafted)).state === 'hibernated');
      assert.equal(fs.existsSync(`/tmp/${marker}`), false);
      const inside = await python(server.client, crafted, `print(open("/tmp/${marker}").read())`);
      assert.equal(inside.resumed, true);
      assert.equal(inside.stdout, 'ran\n');
      assert.ok(inside.not_restored.some((item) => item.includes('unsafe path in the saved archive')),
        inside.not_restored);
      assert.equal(fs.existsSync(`/tmp/${marker}`), false);
      assert.equal(fs.existsSync(`/tmp/${marker}-climbed`), false);
      await callOk(server.client, 'sandbox_close_session', { session_id: crafted });
    } finally {
      await server.close();
    }
  });
});
