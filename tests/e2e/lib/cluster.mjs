// A cluster of mcp-sandbox replicas on one machine, each "host" a network namespace the test
// makes (a veth pair in 198.18.0.0/24, RFC 2544 benchmarking space: special-use and never
// routed, so a leak would stand out), with the HAProxy router of tools/deploy/haproxy on
// loopback in front. Everything it starts is a child stopped by pid; every namespace and link it
// makes is removed by teardown(). Root only (see clusterSupport()). Also: Router (HAProxy from
// the template, for replicas anywhere, e.g. Swarm tasks) and connectClient (the official SDK
// clients of both eras, recording what they send).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { freePort } from './free_port.mjs';
import { BIN, ROOT, text } from './harness.mjs';

export const RENDER = path.join(ROOT, 'tools/deploy/haproxy/render.sh');
const PORT = 8080;
// The image store the replicas read (root's, shared by the other e2e tests), linked into the
// cluster's own state dir.
const SHARED_STATE_DIR = process.env.SANDBOX_STATE_DIR || '/var/lib/mcp-sandbox';

function run(command, args, options = {}) {
  return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options });
}

function which(command) {
  try {
    run('sh', ['-c', `command -v ${command}`]);
    return true;
  } catch {
    return false;
  }
}

// { ok, reason }: whether this process can build the cluster (root, ip, nsenter, haproxy).
export function clusterSupport() {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'needs root (network namespaces, veth pairs)' };
  for (const command of ['ip', 'nsenter', 'haproxy', 'iptables']) {
    if (!which(command)) return { ok: false, reason: `${command} is not installed` };
  }
  if (!fs.existsSync(BIN)) return { ok: false, reason: `${BIN} is not built` };
  return { ok: true, reason: '' };
}

// The image replicas should use: `preferred` when the store has it (the small variant starts
// sessions fastest), else the default image, else null.
export function storeImage(preferred = 'python-small') {
  try {
    const listed = JSON.parse(execFileSync(BIN, ['image', 'ls', '--json'], { encoding: 'utf8', timeout: 60000 }));
    const names = (listed.images ?? []).flatMap((image) => image.names ?? []);
    if (names.includes(preferred)) return preferred;
    if (names.includes('python')) return 'python';
  } catch {
    // no store, or no binary: the caller's skip says why
  }
  return null;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls `probe` (sync or async) every `everyMs` until it returns a truthy value; that value, or
// throws after `timeoutMs` with `what` and the last value seen.
export async function waitFor(what, probe, { timeoutMs = 10000, everyMs = 100 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (error) {
      last = error.message;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    await sleep(everyMs);
  }
}

function captureText(stream, sink) {
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk) => {
    sink.text += chunk;
    if (sink.text.length > 4 << 20) sink.text = sink.text.slice(-(2 << 20));
  });
}

// A raw HTTP/1.1 request (fetch forbids nothing we need, but keep the test independent of its
// header normalisation): resolves { status, headers, body } with the body as text.
export async function httpRequest(url, { method = 'GET', headers = {}, body } = {}) {
  const response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(30000) });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

// HAProxy on loopback with the configuration rendered from the one template
// (tools/deploy/haproxy/render.sh) for `servers` ([{ id, address: 'host:port' }]); checked with
// `haproxy -c` first. Files (configuration, runtime API socket) go to `dir`.
export class Router {
  static async start(dir, servers) {
    const port = await freePort();
    const admin = path.join(dir, 'admin.sock');
    const args = ['--bind', `127.0.0.1:${port}`, '--admin-socket', admin];
    for (const server of servers) args.push('--server', `${server.id}=${server.address}`);
    const config = path.join(dir, 'haproxy.cfg');
    fs.writeFileSync(config, run(RENDER, args));
    run('haproxy', ['-c', '-q', '-f', config]);
    const proc = spawn('haproxy', ['-db', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    const log = { text: '' };
    captureText(proc.stdout, log);
    captureText(proc.stderr, log);
    const router = new Router();
    Object.assign(router, { proc, port, admin, config, log });
    router.exit = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    await waitFor('router /router-healthz', async () => {
      if (proc.exitCode !== null) throw new Error(`haproxy exited ${proc.exitCode}:\n${log.text}`);
      return (await httpRequest(`${router.base}/router-healthz`)).status === 200;
    }, { timeoutMs: 10000 });
    return router;
  }

  get url() {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  get base() {
    return `http://127.0.0.1:${this.port}`;
  }

  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGKILL');
      await Promise.race([this.exit, sleep(5000)]);
    }
  }

  // One command on HAProxy's runtime API; its answer.
  async adminCommand(command) {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.admin);
      let answer = '';
      socket.setEncoding('utf8');
      socket.setTimeout(5000, () => socket.destroy(new Error('admin socket timed out')));
      socket.on('data', (chunk) => { answer += chunk; });
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
      socket.write(`${command}\n`);
    });
  }

  // { r1: 'UP' | 'DOWN' | 'NOLB' | 'MAINT' | 'UP 1/2' ..., ... } from `show stat`.
  async serverStates() {
    const csv = await this.adminCommand('show stat');
    const lines = csv.split('\n').filter(Boolean);
    const header = lines[0].replace(/^# /, '').split(',');
    const at = (name) => header.indexOf(name);
    const states = {};
    for (const line of lines.slice(1)) {
      const fields = line.split(',');
      if (fields[at('pxname')] !== 'replicas') continue;
      const name = fields[at('svname')];
      if (name === 'BACKEND' || name === 'FRONTEND') continue;
      states[name] = fields[at('status')];
    }
    return states;
  }

  // Waits until server `id` is in `state` (a string or a predicate on it); the ms it took.
  async waitServer(id, state, timeoutMs = 10000) {
    const started = Date.now();
    const matches = typeof state === 'function' ? state : (value) => value === state;
    await waitFor(`router: ${id} ${typeof state === 'function' ? 'in the wanted state' : state}`, async () => {
      const states = await this.serverStates();
      return matches(states[id]) ? states : false;
    }, { timeoutMs, everyMs: 50 });
    return Date.now() - started;
  }

  // The router's log lines from `mark` on (a length of log.text).
  routerLog(mark = 0) {
    return this.log.text.slice(mark).split('\n').filter(Boolean);
  }

  logMark() {
    return this.log.text.length;
  }
}

export class Cluster {
  // ids: replica ids; base: first address offset in 198.18.0.0/24 (pairs are /30s from there);
  // env: environment for every replica.
  constructor({ ids = ['r1', 'r2', 'r3'], base = 0, env = {}, tag } = {}) {
    this.tag = tag ?? crypto.randomBytes(2).toString('hex');
    this.token = crypto.randomBytes(24).toString('hex');
    this.env = env;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-scaleout-'));
    // A state dir of the cluster's own, shared by its replicas as on one Swarm host: what they
    // hibernate (the shipped default is on) goes there and is removed with it. Its image store
    // is the shared one, through a symlink.
    this.stateDir = path.join(this.dir, 'state');
    fs.mkdirSync(this.stateDir, { mode: 0o755 });
    fs.symlinkSync(path.join(SHARED_STATE_DIR, 'images'), path.join(this.stateDir, 'images'));
    this.replicas = new Map();
    ids.forEach((id, index) => {
      const offset = base + 4 * index;
      this.replicas.set(id, {
        id,
        netns: `mcpso-${this.tag}-${id}`,
        veth: `mso${this.tag}${id}`.slice(0, 15),
        hostAddress: `198.18.0.${offset + 1}`,
        address: `198.18.0.${offset + 2}`,
        proc: null,
        log: { text: '' },
        exited: null,
      });
    });
    this.router = null;
    this.made = { netns: [], links: [] };
  }

  replica(id) {
    const replica = this.replicas.get(id);
    if (!replica) throw new Error(`no replica ${id}`);
    return replica;
  }

  directUrl(id) {
    return `http://${this.replica(id).address}:${PORT}/mcp`;
  }

  get url() {
    return this.router.url;
  }

  get base() {
    return this.router.base;
  }

  authHeaders() {
    return { Authorization: `Bearer ${this.token}` };
  }

  // Point-to-point veth pairs, one end in each replica's namespace: no bridge, no forwarding.
  setupNetwork() {
    for (const replica of this.replicas.values()) {
      run('ip', ['netns', 'add', replica.netns]);
      this.made.netns.push(replica.netns);
      run('ip', ['link', 'add', replica.veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', replica.netns]);
      this.made.links.push(replica.veth);
      run('ip', ['addr', 'add', `${replica.hostAddress}/30`, 'dev', replica.veth]);
      run('ip', ['link', 'set', replica.veth, 'up']);
      run('ip', ['-n', replica.netns, 'addr', 'add', `${replica.address}/30`, 'dev', 'eth0']);
      run('ip', ['-n', replica.netns, 'link', 'set', 'eth0', 'up']);
      run('ip', ['-n', replica.netns, 'link', 'set', 'lo', 'up']);
    }
  }

  // Lets every replica reach `address`, the host side of one of this cluster's links (where a
  // test runs a service the replicas call, e.g. an OAuth issuer): a host route in each other
  // namespace through its own link. The host answers for its own addresses on any link, so
  // nothing is forwarded and no other address is involved.
  reachHostAddress(address) {
    for (const replica of this.replicas.values()) {
      if (replica.hostAddress === address) continue;
      run('ip', ['-n', replica.netns, 'route', 'add', `${address}/32`, 'via', replica.hostAddress]);
    }
  }

  // Runs a command in a replica's network namespace only. nsenter, not `ip netns exec`: that one
  // also mounts a fresh sysfs over /sys, which hides /sys/fs/cgroup from the server.
  nsCommand(id, argv) {
    return ['nsenter', [`--net=/run/netns/${this.replica(id).netns}`, ...argv]];
  }

  // Starts `serve --http` in the replica's namespace; resolves once /healthz answers.
  async startReplica(id, extraEnv = {}) {
    const replica = this.replica(id);
    if (replica.proc && replica.exited === null) throw new Error(`${id} is running`);
    const env = {
      ...process.env,
      SANDBOX_STATE_DIR: this.stateDir,
      SANDBOX_LOG_LEVEL: 'info',
      SANDBOX_LOG_FILE: '',
      SANDBOX_REPLICA_ID: id,
      SANDBOX_HTTP_HOST: replica.address,
      SANDBOX_HTTP_PORT: String(PORT),
      SANDBOX_AUTH_TOKEN: this.token,
      SANDBOX_POOL_SIZE: '0',
      ...this.env,
      ...extraEnv,
    };
    // tests/e2e/run.sh turns hibernation off for the servers that use the shared state dir;
    // replicas run with the shipped default (idle sessions hibernate after the idle time-out,
    // an orderly stop saves the live ones), unless a test sets it.
    if (!('SANDBOX_HIBERNATE_AFTER_S' in this.env) && !('SANDBOX_HIBERNATE_AFTER_S' in extraEnv)) {
      delete env.SANDBOX_HIBERNATE_AFTER_S;
    }
    const [command, args] = this.nsCommand(id, [BIN, 'serve', '--http']);
    replica.log.text += `\n--- start ${new Date().toISOString()}\n`;
    const proc = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    captureText(proc.stderr, replica.log);
    replica.proc = proc;
    replica.exited = null;
    replica.exit = new Promise((resolve) => proc.on('exit', (code, signal) => {
      replica.exited = { code, signal };
      resolve(replica.exited);
    }));
    await waitFor(`${id} /healthz`, async () => {
      if (replica.exited) throw new Error(`${id} exited ${JSON.stringify(replica.exited)}:\n${replica.log.text.slice(-3000)}`);
      const response = await httpRequest(`http://${replica.address}:${PORT}/healthz`);
      return response.status === 200;
    }, { timeoutMs: 30000, everyMs: 100 });
    return proc;
  }

  signal(id, signal) {
    const replica = this.replica(id);
    if (replica.proc && replica.exited === null) replica.proc.kill(signal);
  }

  async stopReplica(id, signal = 'SIGKILL') {
    const replica = this.replica(id);
    if (!replica.proc || replica.exited) return replica.exited;
    replica.proc.kill('SIGCONT');
    replica.proc.kill(signal);
    return replica.exit;
  }

  // An orderly stop without a drain: SIGTERM starts the drain, a second one stops at once
  // (hibernation on: every live session is saved first). Resolves the exit.
  async stopNow(id, timeoutMs = 60000) {
    const replica = this.replica(id);
    if (!replica.proc || replica.exited) return replica.exited;
    replica.proc.kill('SIGCONT');
    replica.proc.kill('SIGTERM');
    await sleep(200);
    if (!replica.exited) replica.proc.kill('SIGTERM');
    const exit = await Promise.race([replica.exit, sleep(timeoutMs).then(() => null)]);
    if (!exit) throw new Error(`${id} did not stop within ${timeoutMs} ms of two SIGTERMs`);
    return exit;
  }

  // Drops every TCP segment to the replica's port inside its namespace (a silent partition:
  // no RST, so the router sees time-outs, as with a lost host); heal() removes the rule.
  partition(id) {
    const [command, args] = this.nsCommand(id, ['iptables', '-w', '-I', 'INPUT', '-p', 'tcp', '--dport', String(PORT), '-j', 'DROP']);
    run(command, args);
  }

  heal(id) {
    const [command, args] = this.nsCommand(id, ['iptables', '-w', '-D', 'INPUT', '-p', 'tcp', '--dport', String(PORT), '-j', 'DROP']);
    run(command, args);
  }

  // The router in front of this cluster's replicas (see Router).
  async startRouter() {
    this.router = await Router.start(this.dir, [...this.replicas.values()].map((r) => ({ id: r.id, address: `${r.address}:${PORT}` })));
    return this.router;
  }

  serverStates() { return this.router.serverStates(); }
  waitServer(id, state, timeoutMs) { return this.router.waitServer(id, state, timeoutMs); }
  routerLog(mark) { return this.router.routerLog(mark); }
  logMark() { return this.router.logMark(); }

  async teardown() {
    const errors = [];
    for (const replica of this.replicas.values()) {
      try {
        await Promise.race([this.stopReplica(replica.id, 'SIGKILL'), sleep(5000)]);
      } catch (error) {
        errors.push(error.message);
      }
    }
    await this.router?.stop();
    // Sandboxes, cgroups and records a killed replica left in the cluster's state dir.
    try {
      // Not the Docker daemon's leftovers: those are other tests' business (no daemon named).
      run(BIN, ['sessions', 'gc', '--state-dir', this.stateDir], {
        env: { ...process.env, DOCKER_HOST: `unix://${path.join(this.dir, 'no-docker.sock')}` }, timeout: 60000,
      });
    } catch (error) {
      errors.push(`sessions gc: ${error.stderr || error.message}`);
    }
    for (const link of this.made.links) {
      try { run('ip', ['link', 'del', link]); } catch { /* gone with its namespace */ }
    }
    for (const netns of this.made.netns) {
      try { run('ip', ['netns', 'del', netns]); } catch (error) { errors.push(`ip netns del ${netns}: ${error.message}`); }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
    if (errors.length) throw new Error(`teardown: ${errors.join('; ')}`);
  }
}

// --- Clients of both eras ---------------------------------------------------------------------
// Through the router or straight to a replica: the official SDK v1 client (2025-11-25,
// Mcp-Session-Id transport sessions) and the SDK v2 client pinned to 2026-07-28 (stateless,
// Mcp-Param-Session-Id). Each records the last POST it sent, so a test can replay it altered.

const CALL_TIMEOUT_MS = 60000;

// A fetch that remembers the last POST it sent (headers and body) for replays.
function recordingFetch(sink) {
  return async (url, init = {}) => {
    if ((init.method ?? 'GET') === 'POST') {
      sink.last = { url: String(url), headers: Object.fromEntries(new Headers(init.headers).entries()), body: init.body };
    }
    return fetch(url, init);
  };
}

// era: 'legacy' | 'modern'. Resolves { era, client, transport, call, callOk, readResource, close, sent }.
export async function connectClient(era, url, headers = {}) {
  const sent = {};
  let client;
  let transport;
  if (era === 'modern') {
    client = new ModernClient({ name: 'mcp-sandbox-scaleout', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    transport = new ModernTransport(new URL(url), { requestInit: { headers }, fetch: recordingFetch(sent) });
    await client.connect(transport);
    // The client mirrors Mcp-Param-* only for tools it has listed; list them once, as a real
    // client does before its first call.
    await client.listTools();
  } else {
    client = new LegacyClient({ name: 'mcp-sandbox-scaleout', version: '1.0.0' });
    transport = new LegacyTransport(new URL(url), { requestInit: { headers }, fetch: recordingFetch(sent) });
    await client.connect(transport);
  }
  const call = (name, args = {}, options = {}) => (era === 'modern'
    ? client.callTool({ name, arguments: args }, { timeout: CALL_TIMEOUT_MS, ...options })
    : client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS, ...options }));
  const callOk = async (name, args = {}, options = {}) => {
    const result = await call(name, args, options);
    if (result.isError) throw new Error(`${era} ${name} failed: ${text(result)}`);
    return result.structuredContent;
  };
  return {
    era,
    client,
    transport,
    sent,
    call,
    callOk,
    // The 2025 transport session id (mcps_<replica>_...), or undefined for a modern client.
    get transportId() { return transport.sessionId; },
    readResource: (uri) => client.readResource({ uri }),
    async close() {
      try {
        if (era === 'legacy') await transport.terminateSession();
      } catch {
        // the replica that held it may be gone: that is what some tests do
      }
      await client.close().catch(() => {});
    },
  };
}

// A 2025 client (through `url`) whose transport session `replica` issued: initializes until the
// router's placement puts one there (ten tries), closing the others; throws when none did.
export async function connectLegacyOn(replica, url, headers = {}, tries = 10) {
  for (let i = 0; i < tries; i++) {
    const candidate = await connectClient('legacy', url, headers);
    if (replicaOf(candidate.transportId) === replica) return candidate;
    await candidate.close();
  }
  throw new Error(`no 2025 transport session on ${replica} after ${tries} initializes`);
}

// Asserts that a tool result is the answer for a session whose replica is not serving it:
// session_not_found, reason replica_unavailable, naming the replica (and the id, when given).
export function assertReplicaUnavailable(result, replica, sessionId) {
  assert.ok(result.isError, `expected session_not_found, got: ${text(result)}`);
  assert.equal(result.structuredContent?.error, 'session_not_found', text(result));
  assert.equal(result.structuredContent?.reason, 'replica_unavailable', text(result));
  assert.equal(result.structuredContent?.replica, replica, text(result));
  if (sessionId) assert.match(text(result), new RegExp(sessionId));
}

// A handle as the router's log may show it: every run of more than 6 hex digits cut to 6
// (tools/deploy/haproxy/mcp-router.cfg.in, log-format).
export function logged(handle) {
  return handle.replace(/([0-9a-f]{6})[0-9a-f]+/g, '$1...');
}

// The replica a handle names: sess_<replica>_<hex> or mcps_<replica>_<hex>.
export function replicaOf(handle) {
  const match = /^(?:sess|mcps)_([a-z][a-z0-9-]*)_[0-9a-f]+$/.exec(handle ?? '');
  return match ? match[1] : null;
}

export function percentile(values, p) {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
