// The scale-out benchmark (tools/bench.d/scaleout.sh runs it; a benchmark, not a test): three
// replicas in network namespaces behind the HAProxy router, as in scaleout.test.mjs.
//  1. What the router adds to a warm sandbox_run_python print(1): the same request sent through
//     the router and straight to the replica, alternating in rounds of 20 on keep-alive
//     connections (a minimal client replaying a real SDK request, so the client's own cost is
//     small and the same on both sides); both eras (2026: routed by Mcp-Param-Session-Id; 2025:
//     by the JSON body). Target: added p50 <= 0.3 ms, p99 <= 2 ms.
//  2. Placement spread: 30 new sessions, sequentially and 6 at a time. Target: within +-1 of even.
//  3. A dead replica out of placement: kill -9, then the time until the router marks it DOWN
//     (the admin socket polled every 20 ms), 3 times. Target: <= 3 s.
// Prints markdown; the load average before and after, since the machine is shared.
import fs from 'node:fs';
import http from 'node:http';

import { Cluster, connectClient, httpRequest, percentile, replicaOf, sleep, storeImage } from './lib/cluster.mjs';

class NotApplicable extends Error {}

const ROUNDS = Number(process.env.BENCH_SCALEOUT_ROUNDS ?? 50); // x 20 calls per side
const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

// Sends `request` ({ url, headers, body }) again and again on one keep-alive connection.
function replayer(request) {
  const url = new URL(request.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers = { ...request.headers };
  delete headers['content-length'];
  let id = 1000;
  return () => new Promise((resolve, reject) => {
    const body = JSON.parse(request.body);
    body.id = id++;
    const text = JSON.stringify(body);
    const started = process.hrtime.bigint();
    const req = http.request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent,
      headers: { ...headers, 'content-length': Buffer.byteLength(text) },
    }, (res) => {
      let answer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { answer += chunk; });
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        if (res.statusCode !== 200 || !answer.includes('"stdout":"1\\n"')) reject(new Error(`${res.statusCode}: ${answer.slice(0, 300)}`));
        else resolve(ms);
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

// A warm print(1) POST recorded from a client of `era` connected to `url`, in a session on `replica`.
async function recordedCall(era, url, headers, sessionId) {
  const client = await connectClient(era, url, headers);
  await client.callOk('sandbox_run_python', { session_id: sessionId, code: 'print(1)' });
  return { client, request: client.sent.last };
}

function row(label, through, direct) {
  const f = (v) => v.toFixed(3);
  const signed = (v) => (v < 0 ? '−' : '+') + Math.abs(v).toFixed(3);
  const p = (values, q) => percentile(values, q);
  return `| ${label} | ${f(p(direct, 50))} / ${f(p(direct, 99))} | ${f(p(through, 50))} / ${f(p(through, 99))} | ` +
    `${signed(p(through, 50) - p(direct, 50))} / ${signed(p(through, 99) - p(direct, 99))} |`;
}

// Benchmark servers run as tools/bench sets them (it turns hibernation off for all of them);
// the cluster would otherwise restore the shipped default for its replicas.
const benchEnv = process.env.SANDBOX_HIBERNATE_AFTER_S === undefined ? {} : { SANDBOX_HIBERNATE_AFTER_S: process.env.SANDBOX_HIBERNATE_AFTER_S };
const cluster = new Cluster({ base: 128, env: { SANDBOX_IMAGE: process.env.SANDBOX_IMAGE ?? storeImage() ?? 'python', SANDBOX_MAX_SESSIONS: '40', ...benchEnv } });
const before = loadavg();
const out = [];
try {
  cluster.setupNetwork();
  for (const id of ['r1', 'r2', 'r3']) await cluster.startReplica(id);
  const ready = await httpRequest(`http://${cluster.replica('r1').address}:8080/readyz`);
  if (ready.status !== 200) throw new NotApplicable(`this build has no GET /readyz (answered ${ready.status}), which the router's placement needs`);
  await cluster.startRouter();
  for (const id of ['r1', 'r2', 'r3']) await cluster.waitServer(id, 'UP');
  const auth = cluster.authHeaders();
  const modern = await connectClient('modern', cluster.url, auth);
  const created = await modern.callOk('sandbox_create_session', {});
  if (!/^sess_r[123]_/.test(created.session_id)) {
    await modern.close();
    throw new NotApplicable(`this build does not name its replica in session ids (got ${created.session_id})`);
  } else {
    const session = created.session_id;
    const replica = replicaOf(session);
    // 1. Router vs direct, both eras, alternating.
    const legacy = await connectClient('legacy', cluster.url, auth);
    const sides = {};
    for (const era of ['modern', 'legacy']) {
      const through = await recordedCall(era, cluster.url, auth, session);
      const direct = await recordedCall(era, cluster.directUrl(replica), auth, session);
      sides[era] = { through: replayer(through.request), direct: replayer(direct.request), clients: [through.client, direct.client] };
    }
    const times = { modern: { through: [], direct: [] }, legacy: { through: [], direct: [] } };
    for (let round = 0; round < ROUNDS + 2; round++) {
      for (const era of ['modern', 'legacy']) {
        for (const side of round % 2 ? ['through', 'direct'] : ['direct', 'through']) {
          for (let i = 0; i < 20; i++) {
            const ms = await sides[era][side]();
            if (round >= 2) times[era][side].push(ms); // two rounds of warm-up
          }
        }
      }
    }
    out.push(`Warm \`sandbox_run_python\` \`print(1)\`, request to response, ${ROUNDS * 20} calls per cell, one keep-alive connection each, alternating rounds of 20 (load average ${before} before):`);
    out.push('');
    out.push('| request | direct to the replica, p50 / p99 ms | through the router, p50 / p99 ms | added, p50 / p99 ms |');
    out.push('|---|---:|---:|---:|');
    out.push(row('2026-07-28, routed by `Mcp-Param-Session-Id`', times.modern.through, times.modern.direct));
    out.push(row('2025-11-25, routed by the JSON body', times.legacy.through, times.legacy.direct));
    for (const era of ['modern', 'legacy']) for (const client of sides[era].clients) await client.close();
    await legacy.close();

    // 2. Placement spread.
    const spread = async (concurrency) => {
      const counts = { r1: 0, r2: 0, r3: 0 };
      const ids = [];
      for (let done = 0; done < 30; done += concurrency) {
        const batch = await Promise.all(Array.from({ length: concurrency }, () => modern.callOk('sandbox_create_session', {})));
        for (const made of batch) { counts[replicaOf(made.session_id)] += 1; ids.push(made.session_id); }
      }
      await Promise.all(ids.map((id) => modern.call('sandbox_close_session', { session_id: id })));
      return counts;
    };
    const sequential = await spread(1);
    const parallel = await spread(6);
    const even = (counts) => Object.values(counts).every((n) => Math.abs(n - 10) <= 1);
    out.push('');
    out.push('| measure | figure | target |');
    out.push('|---|---:|---|');
    out.push(`| 30 new sessions one after another: r1 / r2 / r3 | ${sequential.r1} / ${sequential.r2} / ${sequential.r3} | within ±1 of even: ${even(sequential) ? 'met' : 'NOT met'} |`);
    out.push(`| 30 new sessions, 6 at a time: r1 / r2 / r3 | ${parallel.r1} / ${parallel.r2} / ${parallel.r3} | within ±1 of even: ${even(parallel) ? 'met' : 'NOT met'} |`);

    // 3. A dead replica out of placement.
    const downMs = [];
    for (let trial = 0; trial < 3; trial++) {
      const killedAt = Date.now();
      await cluster.stopReplica('r3', 'SIGKILL');
      for (;;) {
        const states = await cluster.serverStates();
        if (states.r3?.startsWith('DOWN')) break;
        if (Date.now() - killedAt > 10000) throw new Error(`r3 not DOWN 10 s after kill -9: ${JSON.stringify(states)}`);
        await sleep(20);
      }
      downMs.push(Date.now() - killedAt);
      // Nothing is placed on it now.
      const placed = await Promise.all(Array.from({ length: 3 }, () => modern.callOk('sandbox_create_session', {})));
      if (placed.some((made) => replicaOf(made.session_id) === 'r3')) throw new Error('a session was placed on a DOWN replica');
      await Promise.all(placed.map((made) => modern.call('sandbox_close_session', { session_id: made.session_id })));
      await cluster.startReplica('r3');
      await cluster.waitServer('r3', 'UP', 10000);
    }
    const worst = Math.max(...downMs);
    out.push(`| kill -9 of a replica → marked DOWN, out of placement (3 trials) | ${downMs.join(' / ')} ms | ≤ 3 s: ${worst <= 3000 ? 'met' : 'NOT met'} |`);
    out.push('');
    out.push(`Load average after: ${loadavg()}.`);
    console.log(out.join('\n'));
  }
  await modern.close();
} catch (error) {
  if (!(error instanceof NotApplicable)) throw error;
  console.log(`n/a: ${error.message}`);
} finally {
  await cluster.teardown();
}
