// The rolling-restart benchmark (tools/bench.d/rolling_restart.sh runs it; a benchmark, not a
// test; issue #36): three replicas in network namespaces behind the HAProxy router, as in
// scaleout.test.mjs, with the shipped defaults (hibernation on) and a drain
// (SANDBOX_DRAIN_TIMEOUT_S=30, SANDBOX_DRAIN_IDLE_S=2). A steady load of 20 clients, 10 of each
// era (the SDK v1 client for 2025-11-25, v2 pinned to 2026-07-28), each in a session of its own,
// each calling sandbox_run_python `n += 1; print(me, n)` with 100 ms between calls (a call that
// prints anything else counts as failed). After a baseline, each replica in turn gets SIGTERM,
// drains, exits and starts again under its id on the same state dir; the clients whose session
// is on it hold off from just before its SIGTERM until it is back (an operator's deploy does
// not pause clients, but a call on a replica that is gone can only fail: what this measures is
// what the others see, and what comes back). Figures: calls failed (goal 0), p50/p99 before and
// during the restart and the p99 added, the first call of a held-off session (its resume), the
// time per replica, and sessions kept / sessions before. Prints markdown; the load average
// before and after, since the machine is shared.
import fs from 'node:fs';

import { Cluster, connectClient, httpRequest, percentile, replicaOf, sleep, storeImage } from './lib/cluster.mjs';

class NotApplicable extends Error {}

const CLIENTS = 20;
const BASELINE_MS = Number(process.env.BENCH_ROLLING_BASELINE_S ?? 20) * 1000;
const THINK_MS = 100;
const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

const cluster = new Cluster({
  base: 160,
  env: {
    SANDBOX_IMAGE: process.env.SANDBOX_IMAGE ?? storeImage() ?? 'python',
    SANDBOX_MAX_SESSIONS: '40',
    SANDBOX_DRAIN_TIMEOUT_S: '30',
    SANDBOX_DRAIN_IDLE_S: '2',
  },
});
const loadBefore = loadavg();
const out = [];
const clients = [];
try {
  cluster.setupNetwork();
  for (const id of ['r1', 'r2', 'r3']) await cluster.startReplica(id);
  const ready = await httpRequest(`http://${cluster.replica('r1').address}:8080/readyz`);
  if (ready.status !== 200) throw new NotApplicable(`this build has no GET /readyz (answered ${ready.status}), which the router's placement needs`);
  await cluster.startRouter();
  for (const id of ['r1', 'r2', 'r3']) await cluster.waitServer(id, 'UP');

  // 20 clients, each with a session holding `me` and `n`.
  const sessions = [];
  for (let i = 0; i < CLIENTS; i++) {
    const client = await connectClient(i % 2 ? 'legacy' : 'modern', cluster.url, cluster.authHeaders());
    clients.push(client);
    const created = await client.callOk('sandbox_create_session', {});
    const id = created.session_id;
    if (!replicaOf(id)) throw new NotApplicable(`this build does not name its replica in session ids (got ${id})`);
    await client.callOk('sandbox_run_python', { session_id: id, code: `me = ${JSON.stringify(id)}\nn = 0` });
    sessions.push({ id, client, replica: replicaOf(id), n: 0 });
  }
  const placed = { r1: 0, r2: 0, r3: 0 };
  for (const session of sessions) placed[session.replica] += 1;

  let phase = 'warm-up'; // 'warm-up' | 'baseline' | 'restart' | 'after'
  let restarting = null;
  let running = true;
  const times = { baseline: [], restart: [] };
  const resumes = []; // ms of each held-off session's first call once its replica is back
  const failures = [];
  let calls = 0;
  const inFlight = new Map();
  const step = async (session) => {
    const result = await session.client.call('sandbox_run_python', { session_id: session.id, code: 'n += 1\nprint(me, n)' });
    const stdout = result.structuredContent?.stdout?.trim();
    if (result.isError || stdout !== `${session.id} ${session.n + 1}`) throw new Error(`${session.id}: ${JSON.stringify(result).slice(0, 300)}`);
    session.n += 1;
  };
  const loops = Promise.all(sessions.map(async (session) => {
    let heldOff = false;
    while (running) {
      if (session.replica === restarting) {
        heldOff = true;
        await sleep(50);
        continue;
      }
      const started = performance.now();
      const call = step(session);
      inFlight.set(session.id, call);
      try {
        await call;
        const ms = performance.now() - started;
        calls += 1;
        if (heldOff) resumes.push(ms);
        else if (times[phase]) times[phase].push(ms);
      } catch (error) {
        failures.push(`${phase}: ${error.message}`);
      } finally {
        inFlight.delete(session.id);
        heldOff = false;
      }
      await sleep(THINK_MS);
    }
  }));

  await sleep(5000);
  phase = 'baseline';
  await sleep(BASELINE_MS);
  phase = 'restart';
  const restartStarted = Date.now();
  const perReplica = [];
  for (const id of ['r1', 'r2', 'r3']) {
    restarting = id;
    await Promise.allSettled(sessions.filter((s) => s.replica === id).map((s) => inFlight.get(s.id)).filter(Boolean));
    const started = Date.now();
    cluster.signal(id, 'SIGTERM');
    const exit = await Promise.race([cluster.replica(id).exit, sleep(60000).then(() => null)]);
    if (!exit || exit.code !== 0) throw new Error(`${id} did not drain and exit 0: ${JSON.stringify(exit)}`);
    const exited = Date.now();
    await cluster.startReplica(id);
    await cluster.waitServer(id, 'UP', 10000);
    perReplica.push({ id, drained: exited - started, up: Date.now() - started });
    restarting = null;
  }
  const restartMs = Date.now() - restartStarted;
  phase = 'after';
  await sleep(3000);
  running = false;
  await loops;

  // Sessions kept: each answers with its own `me` and `n` counted on from before.
  let kept = 0;
  for (const session of sessions) {
    try {
      await step(session);
      kept += 1;
    } catch (error) {
      failures.push(`after: ${error.message}`);
    }
  }

  const f = (v) => v.toFixed(1);
  const p = (values, q) => percentile(values, q);
  const added = p(times.restart, 99) - p(times.baseline, 99);
  out.push(`A rolling restart of 3 replicas (SIGTERM, drain, the same id and state dir again, one after another) under 20 clients (10 per era), each calling \`sandbox_run_python\` in its own session with ${THINK_MS} ms between calls; sessions placed r1 / r2 / r3: ${placed.r1} / ${placed.r2} / ${placed.r3} (load average ${loadBefore} before):`);
  out.push('');
  out.push('| measure | figure | goal |');
  out.push('|---|---:|---|');
  out.push(`| calls failed (of ${calls + sessions.length}) | ${failures.length} | 0: ${failures.length === 0 ? 'met' : 'NOT met'} |`);
  out.push(`| p50 / p99 before the restart (${times.baseline.length} calls, ${BASELINE_MS / 1000} s) | ${f(p(times.baseline, 50))} / ${f(p(times.baseline, 99))} ms | |`);
  out.push(`| p50 / p99 during the restart, sessions on the replicas not restarting (${times.restart.length} calls, ${(restartMs / 1000).toFixed(1)} s) | ${f(p(times.restart, 50))} / ${f(p(times.restart, 99))} ms | |`);
  out.push(`| p99 added during the restart | ${added < 0 ? '−' : '+'}${f(Math.abs(added))} ms | |`);
  out.push(`| first call of a session whose replica restarted (its resume), p50 / max (${resumes.length}) | ${f(p(resumes, 50))} / ${f(Math.max(...resumes))} ms | |`);
  out.push(`| SIGTERM → exit 0 / → UP again, per replica | ${perReplica.map((r) => `${r.id} ${(r.drained / 1000).toFixed(1)} / ${(r.up / 1000).toFixed(1)} s`).join(', ')} | |`);
  out.push(`| sessions kept / sessions before (variables intact) | ${kept} / ${sessions.length} | all: ${kept === sessions.length ? 'met' : 'NOT met'} |`);
  out.push('');
  out.push(`Load average after: ${loadavg()}.`);
  if (failures.length) out.push('', 'Failed calls:', ...failures.slice(0, 10).map((line) => `- ${line}`));
  console.log(out.join('\n'));
} catch (error) {
  if (!(error instanceof NotApplicable)) throw error;
  console.log(`n/a: ${error.message}`);
} finally {
  await Promise.all(clients.map((client) => client.close()));
  await cluster.teardown();
}
