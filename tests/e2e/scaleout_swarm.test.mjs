// Scale-out on a real engine: Docker Swarm (built into Debian's docker.io), tools/deploy/swarm.
// Three replicas as the tasks of one service (stack.yml: host networking on loopback, the Docker
// backend through the host's socket), the router of tools/deploy/haproxy in front, clients of
// both eras through it: placement and state; a replica's container killed and restarted by
// Swarm in the same slot, under the same id; a rolling update (`docker service update --force`)
// during which each replica drains: no new sessions on it, its sessions still answered.
// Skips, saying why, without root, a Docker daemon, a swarm the daemon accepts (`docker swarm
// init` is tried; a swarm it makes is left active), or the sandbox image in the daemon.
// Everything it deploys is removed in after(): the stack, its image, sandbox containers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Router, connectClient, httpRequest, replicaOf, sleep, waitFor } from './lib/cluster.mjs';
import { BIN, ROOT, text } from './lib/harness.mjs';

const STACK = path.join(ROOT, 'tools/deploy/swarm/stack.yml');
const BUILD_IMAGE = path.join(ROOT, 'tools/deploy/swarm/build-image.sh');
const SANDBOX_IMAGE = 'mcp-sandbox/python:latest'; // the default image, as tools/test loads it
const IDS = ['r1', 'r2', 'r3'];
const SESSION_ID = /^sess_(r[123])_[0-9a-f]{32}$/;

function docker(args, options = {}) {
  return execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000, ...options }).trim();
}

function firstLine(error) {
  return `${error.stderr ?? ''}${error.message}`.split('\n').find((line) => line.trim()) ?? String(error);
}

// '' when the tier can run, else why not. May init a swarm (left active, as the brief of the
// test says: other work on this daemon is not disturbed by a swarm being active).
function prerequisites() {
  if (process.getuid?.() !== 0) return 'needs root (the Docker socket)';
  if (!fs.existsSync(BIN)) return `${BIN} is not built`;
  try {
    execFileSync('sh', ['-c', 'command -v haproxy'], { stdio: 'ignore' });
  } catch {
    return 'haproxy is not installed';
  }
  try {
    docker(['version', '--format', '{{.Server.Version}}']);
  } catch (error) {
    return `no Docker daemon: ${firstLine(error)}`;
  }
  try {
    docker(['image', 'inspect', SANDBOX_IMAGE]);
  } catch {
    return `the Docker daemon lacks ${SANDBOX_IMAGE} (tools/test loads it)`;
  }
  const state = docker(['info', '--format', '{{.Swarm.LocalNodeState}}']);
  if (state !== 'active') {
    try {
      docker(['swarm', 'init', '--advertise-addr', '127.0.0.1']);
    } catch (error) {
      return `the Docker daemon refused swarm mode: ${firstLine(error)}`;
    }
  }
  if (docker(['info', '--format', '{{.Swarm.ControlAvailable}}']) !== 'true') {
    return 'this daemon is a swarm worker, not a manager: cannot deploy a stack';
  }
  return '';
}

async function portFree(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

// A port prefix P such that P1, P2, P3 are free on loopback (ports 2001..2993).
async function freePrefix() {
  for (let i = 0; i < 50; i++) {
    const prefix = String(200 + crypto.randomInt(100));
    const ports = IDS.map((id) => Number(prefix + id.slice(1)));
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return prefix;
  }
  throw new Error('no free port prefix');
}

const reason = prerequisites();

describe('scale-out on Docker Swarm: replicas as tasks of one service, the Docker backend', { skip: reason || false }, () => {
  const tag = crypto.randomBytes(3).toString('hex');
  const stack = `mcpso${tag}`;
  const service = `${stack}_mcp-sandbox`;
  const image = `mcp-sandbox:scaleout-${tag}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-swarm-'));
  const token = crypto.randomBytes(24).toString('hex');
  const auth = { Authorization: `Bearer ${token}` };
  let prefix;
  let router;
  let modern;
  let unsupported = '';
  const sessions = [];
  // A build without replica ids or /readyz fails every case: those are the features under test.
  const stest = (name, fn) => test(name, async (t) => (unsupported ? assert.fail(unsupported) : fn(t)));
  const port = (id) => Number(prefix + id.slice(1));
  const healthy = async (id) => {
    try {
      return (await httpRequest(`http://127.0.0.1:${port(id)}/healthz`)).status === 200;
    } catch {
      return false;
    }
  };
  const tasksOf = (slot) => docker(['ps', '-q', '--filter', `name=${service}.${slot}.`]).split('\n').filter(Boolean);

  async function newSession(client) {
    const created = await client.callOk('sandbox_create_session', {});
    await client.callOk('sandbox_run_python', { session_id: created.session_id, code: `me = ${JSON.stringify(created.session_id)}\nn = 0` });
    return { id: created.session_id, replica: replicaOf(created.session_id), n: 0 };
  }
  async function step(client, session) {
    const result = await client.call('sandbox_run_python', { session_id: session.id, code: 'n += 1\nprint(me, n)' });
    assert.ok(!result.isError, `${session.id}: ${text(result)}`);
    session.n += 1;
    assert.equal(result.structuredContent.stdout.trim(), `${session.id} ${session.n}`);
  }

  before(async () => {
    prefix = await freePrefix();
    docker(['image', 'rm', '-f', image]);
    execFileSync(BUILD_IMAGE, [BIN, image], { stdio: ['ignore', 'ignore', 'pipe'] });
    fs.writeFileSync(path.join(dir, 'token'), token, { mode: 0o600 });
    const agent = path.join(path.dirname(BIN), 'agent');
    const env = {
      ...process.env,
      MCP_SANDBOX_IMAGE: image,
      MCP_SANDBOX_AGENT_DIR: fs.existsSync(agent) ? agent : path.resolve(path.dirname(BIN), '../lib/mcp-sandbox'),
      MCP_SANDBOX_TOKEN_FILE: path.join(dir, 'token'),
      MCP_SANDBOX_PORT_PREFIX: prefix,
      MCP_SANDBOX_REPLICAS: '3',
      MCP_SANDBOX_POOL_SIZE: '0',
      MCP_SANDBOX_DRAIN_TIMEOUT_S: '20',
      MCP_SANDBOX_DRAIN_IDLE_S: '4',
      MCP_SANDBOX_STOP_GRACE: '50s',
    };
    if (process.env.SANDBOX_STATE_DIR) env.MCP_SANDBOX_STATE_DIR = process.env.SANDBOX_STATE_DIR;
    docker(['stack', 'deploy', '--resolve-image', 'never', '-c', STACK, stack], { env });
    for (const id of IDS) await waitFor(`${id} (task slot ${id.slice(1)}) to answer /healthz`, () => healthy(id), { timeoutMs: 60000, everyMs: 250 });
    const probe = await connectClient('modern', `http://127.0.0.1:${port('r1')}/mcp`, auth);
    try {
      const created = await probe.callOk('sandbox_create_session', {});
      await probe.call('sandbox_close_session', { session_id: created.session_id });
      if (!SESSION_ID.test(created.session_id)) unsupported = `this build does not name its replica in session ids (got ${created.session_id})`;
      else if ((await httpRequest(`http://127.0.0.1:${port('r1')}/readyz`)).status !== 200) unsupported = 'this build has no GET /readyz';
    } finally {
      await probe.close();
    }
    if (unsupported) return;
    router = await Router.start(dir, IDS.map((id) => ({ id, address: `127.0.0.1:${port(id)}` })));
    for (const id of IDS) await router.waitServer(id, 'UP');
    modern = await connectClient('modern', router.url, auth);
  });

  after(async () => {
    await modern?.close();
    await router?.stop();
    const errors = [];
    try {
      docker(['stack', 'rm', stack]);
      await waitFor(`the tasks of ${stack} to stop`, () => docker(['ps', '-aq', '--filter', `label=com.docker.stack.namespace=${stack}`]) === '',
        { timeoutMs: 90000, everyMs: 500 });
    } catch (error) {
      errors.push(firstLine(error));
    }
    // Sandbox containers of these replicas (their host label names the task's hostname): a
    // killed replica's are orphans no sweep may judge (another pid namespace), so remove them.
    for (const id of IDS) {
      const left = docker(['ps', '-aq', '--filter', `label=mcp-sandbox.host=no-machine-id/mcp-sandbox-${id}`]).split('\n').filter(Boolean);
      if (left.length) docker(['rm', '-f', ...left]);
    }
    // The replicas hibernate (the shipped default) into the host's state dir, which the stack
    // binds: what they saved when the stack was removed (an orderly stop saves live sessions) is
    // theirs alone (no other test's server names replicas there), and goes.
    try {
      const stateEnv = { ...process.env };
      const listed = JSON.parse(execFileSync(BIN, ['sessions', 'ls', '--json'], { encoding: 'utf8', env: stateEnv, timeout: 60000 }));
      const ours = (listed.hibernated ?? []).map((entry) => entry.session_id).filter((id) => IDS.includes(replicaOf(id)));
      if (ours.length) execFileSync(BIN, ['sessions', 'rm', ...ours], { stdio: 'ignore', env: stateEnv, timeout: 60000 });
    } catch (error) {
      errors.push(`saved sessions: ${firstLine(error)}`);
    }
    try { docker(['image', 'rm', '-f', image]); } catch (error) { errors.push(firstLine(error)); }
    fs.rmSync(dir, { recursive: true, force: true });
    if (errors.length) throw new Error(`teardown: ${errors.join('; ')}`);
  });

  stest('S1: sessions spread over the three tasks; state holds through the router (both eras)', async () => {
    for (let i = 0; i < 6; i++) sessions.push(await newSession(modern));
    assert.deepEqual(new Set(sessions.map((s) => s.replica)), new Set(IDS));
    for (let i = 0; i < 5; i++) await Promise.all(sessions.map((session) => step(modern, session)));
    const legacy = await connectClient('legacy', router.url, auth);
    try {
      const created = await legacy.callOk('sandbox_create_session', {});
      assert.equal(replicaOf(created.session_id), replicaOf(legacy.transportId));
      await legacy.callOk('sandbox_run_python', { session_id: created.session_id, code: 'x = 41' });
      assert.equal((await legacy.callOk('sandbox_run_python', { session_id: created.session_id, code: 'print(x + 1)' })).stdout.trim(), '42');
      await legacy.callOk('sandbox_close_session', { session_id: created.session_id });
    } finally {
      await legacy.close();
    }
  });

  stest('S2: a task\'s container killed: replica_unavailable within 5 s; Swarm restarts the slot as r2; placement comes back', async () => {
    const victims = sessions.filter((s) => s.replica === 'r2');
    const [container] = tasksOf(2);
    assert.ok(container, 'no container for slot 2');
    // The sandboxes of r2's sessions: sibling containers, orphaned by the kill.
    const sandboxesOfR2 = () => docker(['ps', '-aq', '--filter', 'label=mcp-sandbox.host=no-machine-id/mcp-sandbox-r2'])
      .split('\n').filter(Boolean);
    const orphans = sandboxesOfR2();
    assert.ok(orphans.length >= victims.length, `r2 has ${orphans.length} sandbox containers for ${victims.length} sessions`);
    const killed = Date.now();
    docker(['kill', container]);
    const result = await waitFor('replica_unavailable for an r2 session', async () => {
      const answer = await modern.call('sandbox_run_python', { session_id: victims[0].id, code: 'print(1)' });
      return answer.structuredContent?.reason === 'replica_unavailable' ? answer : false;
    }, { timeoutMs: 5000, everyMs: 200 });
    assert.equal(result.structuredContent.replica, 'r2');
    console.log(`# S2: replica_unavailable ${Date.now() - killed} ms after docker kill`);
    for (const session of sessions.filter((s) => s.replica !== 'r2')) await step(modern, session);
    await waitFor('Swarm to restart slot 2', async () => tasksOf(2).some((id) => id !== container) && healthy('r2'), { timeoutMs: 30000, everyMs: 250 });
    await router.waitServer('r2', 'UP', 10000);
    console.log(`# S2: slot 2 back UP ${Date.now() - killed} ms after docker kill`);
    // The new r2 sweeps what its predecessor left (its replica id on the containers' labels).
    await waitFor('the restarted r2 to remove its predecessor\'s sandbox containers',
      () => orphans.every((id) => !sandboxesOfR2().includes(id)), { timeoutMs: 15000, everyMs: 500 });
    const old = await modern.call('sandbox_run_python', { session_id: victims[0].id, code: 'print(1)' });
    assert.equal(old.structuredContent?.error, 'session_not_found', text(old));
    for (const victim of victims) sessions.splice(sessions.indexOf(victim), 1);
    const again = [];
    for (let i = 0; i < 6 && !again.some((s) => s.replica === 'r2'); i++) again.push(await newSession(modern));
    assert.ok(again.some((s) => s.replica === 'r2'), again.map((s) => s.id).join());
    sessions.push(...again);
  });

  stest('S3: a rolling update drains one task at a time: its sessions answered, no placement on it', async () => {
    // One session per replica kept in use (a call every second), so the drain keeps it open
    // (a drain closes sessions idle for SANDBOX_DRAIN_IDLE_S, here 4 s).
    const active = new Map();
    for (const id of IDS) active.set(id, sessions.find((s) => s.replica === id) ?? await newSession(modern));
    const lastCall = new Map();
    for (const [id, session] of active) { await step(modern, session); lastCall.set(id, Date.now()); }
    const seen = new Set();
    const started = Date.now();
    const before = new Map(IDS.map((id) => [id, tasksOf(Number(id.slice(1)))[0]]));
    docker(['service', 'update', '--force', '--detach', service]);
    const replaced = () => IDS.every((id) => {
      const now = tasksOf(Number(id.slice(1)));
      return now.length === 1 && now[0] !== before.get(id);
    });
    // One loop, one call at a time: watch the router, keep the sessions in use, check each drain.
    while (Date.now() - started < 120000) {
      const states = await router.serverStates();
      for (const id of IDS) {
        if (states[id] === 'NOLB' && !seen.has(id)) {
          seen.add(id);
          // Draining: its session still answers, through the router, with its state.
          await step(modern, active.get(id));
          const placed = await newSession(modern);
          assert.notEqual(placed.replica, id, `a session was placed on draining ${id}`);
          active.delete(id); // left idle now, so the drain can end
        } else if (active.has(id) && Date.now() - lastCall.get(id) > 1000) {
          await step(modern, active.get(id));
          lastCall.set(id, Date.now());
        }
      }
      if (seen.size === IDS.length && replaced() && IDS.every((id) => states[id] === 'UP')) break;
      await sleep(100);
    }
    console.log(`# S3: rolling update of 3 tasks took ${Date.now() - started} ms; drains seen on ${[...seen].join(',')}`);
    assert.deepEqual([...seen].sort(), IDS, 'not every replica was seen draining (NOLB)');
    assert.ok(replaced(), 'the update did not replace every task');
    for (const id of IDS) await router.waitServer(id, 'UP', 10000);
    const fresh = await newSession(modern);
    await step(modern, fresh);
  });
});
