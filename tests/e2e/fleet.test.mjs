// Where the features meet (issue #36): a multi-tenant fleet that keeps every session through a
// deploy. Three replicas, each in a network namespace of its own (tests/e2e/lib/cluster.mjs),
// behind the HAProxy router, with the shipped defaults (hibernation on) and OAuth on: a real
// OpenID provider (oidc-provider, tests/e2e/lib/oidc_issuer.mjs) issues the tokens, listening on
// the host side of the first replica's link, which every replica's namespace is given a route to.
// Two subjects, alice and bob, each with sessions of both client eras (the SDK v1 client for
// 2025-11-25, the v2 client pinned to 2026-07-28): live ones (in use by a steady load), one
// hibernated (idle past SANDBOX_HIBERNATE_AFTER_S) and one forked, each with variables and a file,
// all within the subject's saved budget (SANDBOX_SUBJECT_MAX_SAVED). Then a rolling restart of
// the three (SIGTERM, the drain hibernates what is idle, the replica exits 0 and starts again
// under its id on the same state dir) while the load goes on against the replicas not being
// restarted. Asserted: no call of that load fails; afterwards every session answers with its
// variables and its file (a resumed one counts on from where it was, a fork from its copy);
// before and after, a subject naming the other's session ids is told session_not_found exactly
// as for an unknown id, sees none of them in any replica's list, and the owner's sessions are
// intact (a hibernated one not resumed by the stranger's call).
// On both engines: the namespace backend and the Docker fallback. Root only; skips, saying why,
// without root, ip, nsenter, HAProxy, iptables or an image (the Docker variant: without a Docker
// daemon holding the image).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import {
  Cluster, clusterSupport, connectClient, replicaOf, sleep, storeImage, waitFor,
} from './lib/cluster.mjs';
import { runtimeStatus, text } from './lib/harness.mjs';
import { OidcIssuer, signingKey } from './lib/oidc_issuer.mjs';

const REPLICAS = ['r1', 'r2', 'r3'];
const SUBJECTS = ['alice', 'bob'];
const ERAS = ['modern', 'legacy'];
// 198.18.0.64/27: this suite's links (one /28 per engine), apart from scaleout.test.mjs's
// (.0/28) and the scale-out benchmarks' (.128, .160), should two run at once.
const BASE = 64;

function skipReason() {
  const support = clusterSupport();
  if (!support.ok) return support.reason;
  const runtime = runtimeStatus();
  if (!runtime.ok && !/image .* missing/.test(runtime.reason)) return runtime.reason;
  if (!storeImage()) return 'neither python-small nor python is in the image store (mcp-sandbox image build --variant small)';
  return '';
}

// The engine the describe block running now tests ('namespace' | 'docker').
let expectedBackend;

// A session of the test: { id, owner, era, kind: 'live' | 'hibernated' | 'fork', client, replica,
// me, n, file }. `me` and `n` are Python variables in it; `file` the content of fleet.txt.
async function newSession(owner, era, kind, client) {
  const created = await client.callOk('sandbox_create_session', {});
  const id = created.session_id;
  assert.equal(created.backend, expectedBackend, `${id} runs on the backend under test`);
  const session = { id, owner, era, kind, client, replica: replicaOf(id), me: id, n: 0, file: `${owner}'s file of ${id}` };
  await client.callOk('sandbox_run_python', {
    session_id: id,
    code: `me = ${JSON.stringify(id)}\nn = 0\nopen('/mnt/data/fleet.txt', 'w').write(${JSON.stringify(session.file)})`,
  });
  return session;
}

// One counted call: n += 1, printing the marker and n; asserts both (a call that reached another
// session, or a session that lost its state, cannot print them).
async function step(session) {
  const result = await session.client.call('sandbox_run_python', { session_id: session.id, code: 'n += 1\nprint(me, n)' });
  assert.ok(!result.isError, `${session.owner}'s ${session.kind} ${session.era} session ${session.id}: ${text(result)}`);
  session.n += 1;
  assert.equal(result.structuredContent.stdout.trim(), `${session.me} ${session.n}`, `${session.id}'s variables`);
  return result.structuredContent;
}

async function assertFile(session) {
  const file = await session.client.callOk('sandbox_read_file', { session_id: session.id, path: 'fleet.txt' });
  assert.equal(file.content, session.file, `${session.id}'s file`);
}

const stateOf = async (session) =>
  (await session.client.callOk('sandbox_session_status', { session_id: session.id })).state;

const reason = skipReason();
const DOCKER_IMAGE = 'mcp-sandbox/python:latest';
function dockerSkip() {
  if (reason) return reason;
  try {
    execFileSync('docker', ['image', 'inspect', DOCKER_IMAGE], { stdio: 'ignore', timeout: 30000 });
    return '';
  } catch {
    return `no Docker daemon with ${DOCKER_IMAGE}`;
  }
}

// Both engines: the namespace backend, and the Docker fallback (sibling containers, saved into
// the state dir and removed); each on links of its own.
const VARIANTS = [
  { label: 'namespace backend', backend: 'namespace', base: BASE, env: {}, skip: reason },
  { label: 'docker backend', backend: 'docker', base: BASE + 16, env: { SANDBOX_BACKEND: 'docker', SANDBOX_IMAGE: 'python' }, skip: dockerSkip() },
];

for (const variant of VARIANTS) describe(`fleet (${variant.label}): a rolling restart of 3 replicas behind the router, OAuth on, 2 subjects, live, hibernated and forked sessions of both eras`, { skip: variant.skip || false }, () => {
  let issuer;
  let cluster;
  const clients = { alice: {}, bob: {} }; // subject -> { modern, legacy: [..] }
  const allClients = [];
  const sessions = [];
  const tokens = {};
  const of = (owner) => sessions.filter((session) => session.owner === owner);

  // The steady load: every live session, over and over, except those of the replica being
  // restarted (`restarting`), whose sessions are left idle from just before its SIGTERM until
  // it is back (the drain hibernates them; their next call resumes them). Every failure is kept.
  const load = { running: false, restarting: null, calls: 0, failures: [], inFlight: new Map(), loops: null };
  function startLoad() {
    load.running = true;
    load.loops = Promise.all(sessions.filter((session) => session.kind === 'live').map(async (session) => {
      while (load.running) {
        if (session.replica === load.restarting) {
          await sleep(100);
          continue;
        }
        const call = step(session);
        load.inFlight.set(session.id, call);
        try {
          await call;
          load.calls += 1;
        } catch (error) {
          load.failures.push(`${session.id} (on ${session.replica}, ${load.restarting ?? 'no replica'} restarting): ${error.message}`);
          return;
        } finally {
          load.inFlight.delete(session.id);
        }
        await sleep(250);
      }
    }));
  }
  // Stops the load's calls on `replica`'s sessions; resolves once none is on its way.
  async function holdOff(replica) {
    load.restarting = replica;
    const pending = sessions.filter((session) => session.replica === replica).map((session) => load.inFlight.get(session.id));
    await Promise.allSettled(pending.filter(Boolean));
  }

  // `stranger` names each of `owner`'s sessions in every tool that takes one: each answer is
  // session_not_found, word for word what an unknown id on that replica gets; nothing of the
  // owner's is in any replica's list for the stranger.
  async function assertStrangerSeesNothing(stranger, owner) {
    const theirs = of(owner);
    for (const era of ERAS) {
      const client = era === 'modern' ? clients[stranger].modern : clients[stranger].legacy[0];
      for (const session of theirs) {
        const unknown = `sess_${session.replica}_${'0'.repeat(32)}`;
        const expected = await client.call('sandbox_run_python', { session_id: unknown, code: 'print(me)' });
        const named = await client.call('sandbox_run_python', { session_id: session.id, code: 'print(me)' });
        assert.equal(named.structuredContent?.error, 'session_not_found', `${stranger} (${era}) naming ${owner}'s ${session.kind} ${session.id}: ${text(named)}`);
        assert.equal(text(named).replaceAll(session.id, '<id>'), text(expected).replaceAll(unknown, '<id>'));
        for (const [name, args] of [
          ['sandbox_read_file', { session_id: session.id, path: 'fleet.txt' }],
          ['sandbox_session_status', { session_id: session.id }],
          ['sandbox_fork_session', { session_id: session.id }],
          ['sandbox_close_session', { session_id: session.id }],
        ]) {
          const result = await client.call(name, args);
          assert.equal(result.structuredContent?.error, 'session_not_found', `${stranger} ${name} ${session.id}: ${text(result)}`);
        }
      }
    }
    for (const replica of REPLICAS) {
      const direct = await connectClient('modern', cluster.directUrl(replica), { Authorization: `Bearer ${tokens[stranger]}` });
      try {
        const listed = JSON.stringify(await direct.callOk('sandbox_list_sessions', {}));
        for (const session of theirs) assert.ok(!listed.includes(session.id), `${stranger} sees ${owner}'s ${session.id} on ${replica}`);
      } finally {
        await direct.close();
      }
    }
  }

  // Each replica lists exactly `owner`'s sessions it holds (live or saved), none lost, none extra.
  async function assertOwnerListsAll(owner) {
    for (const replica of REPLICAS) {
      const direct = await connectClient('modern', cluster.directUrl(replica), { Authorization: `Bearer ${tokens[owner]}` });
      try {
        const listed = await direct.callOk('sandbox_list_sessions', {});
        const ids = listed.sessions.map((session) => session.session_id).sort();
        const want = of(owner).filter((session) => session.replica === replica).map((session) => session.id).sort();
        assert.deepEqual(ids, want, `${owner}'s sessions on ${replica}`);
      } finally {
        await direct.close();
      }
    }
  }

  before(async () => {
    expectedBackend = variant.backend;
    cluster = new Cluster({
      base: variant.base,
      env: {
        SANDBOX_IMAGE: process.env.SANDBOX_SCALEOUT_IMAGE ?? storeImage() ?? 'python-small',
        SANDBOX_MAX_SESSIONS: '40',
        SANDBOX_AUTH_TOKEN: '', // OAuth only: every caller is a subject the issuer named
        SANDBOX_HIBERNATE_AFTER_S: '3',
        SANDBOX_DRAIN_TIMEOUT_S: '30',
        SANDBOX_DRAIN_IDLE_S: '2',
        // Each subject's budget: room for all of its sessions saved at once (a drain saves
        // the live ones beside the hibernated and forked ones), and no more.
        SANDBOX_SUBJECT_MAX_SAVED: '10',
        ...variant.env,
      },
    });
    cluster.setupNetwork();
    // The issuer on the host side of r1's link; r2 and r3 reach it through theirs.
    const issuerHost = cluster.replica('r1').hostAddress;
    cluster.reachHostAddress(issuerHost);
    issuer = new OidcIssuer({ clients: SUBJECTS, accessTokenTTL: 3600, host: issuerHost });
    await issuer.start([signingKey('k1')]);
    // The router first: its URL is the replicas' resource identifier (the tokens' audience).
    await cluster.startRouter();
    Object.assign(cluster.env, {
      SANDBOX_OAUTH_ISSUER: issuer.url,
      // The issuer speaks http:// on a link this test made, not on loopback: the server accepts
      // that only when told to (and warns), as an operator would tell it.
      SANDBOX_OAUTH_ALLOW_HTTP_ISSUER: 'on',
      SANDBOX_OAUTH_SCOPES: 'sandbox',
      SANDBOX_OAUTH_RESOURCE: cluster.url,
    });
    for (const id of REPLICAS) await cluster.startReplica(id);
    for (const id of REPLICAS) await cluster.waitServer(id, 'UP');
    for (const subject of SUBJECTS) {
      tokens[subject] = await issuer.token(subject, cluster.url);
      const headers = { Authorization: `Bearer ${tokens[subject]}` };
      clients[subject].modern = await connectClient('modern', cluster.url, headers);
      // 2025 clients: a session is placed with its client's transport, so several clients
      // spread a subject's 2025 sessions over the replicas.
      clients[subject].legacy = [];
      for (let i = 0; i < 3; i++) clients[subject].legacy.push(await connectClient('legacy', cluster.url, headers));
      allClients.push(clients[subject].modern, ...clients[subject].legacy);
    }
  });

  after(async () => {
    load.running = false;
    await load.loops?.catch(() => {});
    await Promise.all(allClients.map((client) => client.close()));
    try {
      // An orderly stop (every live session saved, its sandbox or container removed), so that
      // nothing is left for the teardown's kill: it removes the saves with the cluster's dir.
      for (const id of REPLICAS) await cluster?.stopNow(id).catch(() => {});
      await cluster?.teardown();
    } finally {
      await issuer?.stop().catch(() => {});
      if (process.env.SANDBOX_SCALEOUT_LOGS) {
        for (const replica of cluster.replicas.values()) console.log(`--- ${replica.id}\n${replica.log.text}`);
        console.log(`--- router\n${cluster.router?.log.text}`);
      }
    }
  });

  test('each subject holds live, hibernated and forked sessions of both eras, with variables and files', async () => {
    for (const owner of SUBJECTS) {
      const { modern, legacy } = clients[owner];
      // Live: three 2026 ones (the router spreads them), one per 2025 client.
      for (let i = 0; i < 3; i++) sessions.push(await newSession(owner, 'modern', 'live', modern));
      for (const client of legacy) sessions.push(await newSession(owner, 'legacy', 'live', client));
      // To be left idle until they hibernate.
      sessions.push(await newSession(owner, 'modern', 'hibernated', modern));
      sessions.push(await newSession(owner, 'legacy', 'hibernated', legacy[1]));
      // A fork of a live session of each era: a saved copy, with the variables and file as
      // they were (its `me` is its origin's id), untouched until after the restart.
      for (const era of ERAS) {
        const origin = sessions.find((session) => session.owner === owner && session.era === era && session.kind === 'live');
        await step(origin);
        const fork = await origin.client.callOk('sandbox_fork_session', { session_id: origin.id });
        assert.equal(fork.forked_from, origin.id);
        sessions.push({ ...origin, id: fork.session_id, kind: 'fork', replica: replicaOf(fork.session_id) });
      }
    }
    for (const session of sessions) assert.match(session.id, /^sess_r[123]_[0-9a-f]{32}$/);
    for (const session of sessions.filter((s) => s.era === 'legacy' && s.kind !== 'fork')) {
      assert.equal(session.replica, replicaOf(session.client.transportId), `a 2025 session is placed with its transport: ${session.id}`);
    }
    const live = sessions.filter((session) => session.kind === 'live');
    for (const replica of REPLICAS) assert.ok(live.some((session) => session.replica === replica), `no live session on ${replica}: ${live.map((s) => s.id).join(' ')}`);

    startLoad();
    await waitFor('the idle sessions to hibernate', async () => {
      for (const session of sessions.filter((s) => s.kind === 'hibernated')) {
        if (await stateOf(session) !== 'hibernated') return false;
      }
      return true;
    }, { timeoutMs: 60000, everyMs: 500 });
    for (const owner of SUBJECTS) {
      for (const era of ERAS) {
        const mine = sessions.filter((session) => session.owner === owner && session.era === era);
        for (const kind of ['live', 'hibernated', 'fork']) {
          const ofKind = mine.filter((session) => session.kind === kind);
          assert.ok(ofKind.length > 0, `${owner} has no ${kind} ${era} session`);
          for (const session of ofKind) {
            const state = await stateOf(session);
            if (kind === 'live') assert.ok(['idle', 'busy'].includes(state), `${session.id} (live) is ${state}`);
            else assert.equal(state, 'hibernated', `${session.id} (${kind})`);
          }
        }
      }
    }
    assert.deepEqual(load.failures, []);
    assert.ok(load.calls > 0, 'the load made no call');
  });

  test('before the restart: neither subject sees or touches the other\'s sessions', async () => {
    await assertStrangerSeesNothing('bob', 'alice');
    await assertStrangerSeesNothing('alice', 'bob');
    // The strangers' calls resumed nothing of the owner's.
    for (const session of sessions.filter((s) => s.kind !== 'live')) assert.equal(await stateOf(session), 'hibernated', session.id);
    for (const owner of SUBJECTS) await assertOwnerListsAll(owner);
    assert.deepEqual(load.failures, []);
  });

  test('a rolling restart under load: no call fails on the replicas not restarting; each replica drains, exits 0, comes back', async () => {
    const before = load.calls;
    for (const id of REPLICAS) {
      // Its live sessions were in use a moment ago: live when the drain starts, so the drain
      // (not idle hibernation) decides what becomes of them.
      await holdOff(id);
      const started = Date.now();
      cluster.signal(id, 'SIGTERM');
      await cluster.waitServer(id, 'NOLB', 3000);
      const exit = await Promise.race([cluster.replica(id).exit, sleep(60000).then(() => null)]);
      assert.deepEqual(exit, { code: 0, signal: null }, `${id} did not drain and exit 0 within 60 s`);
      assert.match(cluster.replica(id).log.text, /drain/i);
      await cluster.startReplica(id);
      await cluster.waitServer(id, 'UP', 10000);
      console.log(`# ${variant.label}, ${id}: drained, exited 0 and UP again in ${Date.now() - started} ms; ${load.calls - before} calls so far, ${load.failures.length} failed`);
      assert.deepEqual(load.failures, [], `calls failed on replicas not restarting (${load.calls - before} made)`);
      load.restarting = null; // its sessions join the load again: their next call resumes them
    }
    await sleep(2000);
    load.running = false;
    await load.loops;
    assert.deepEqual(load.failures, [], `calls failed (${load.calls - before} made during the restart)`);
    assert.ok(load.calls - before > 20, `only ${load.calls - before} calls during the restart`);
  });

  test('after the restart: a stranger naming the other\'s sessions is told session_not_found, and resumes none of them', async () => {
    for (const session of sessions.filter((s) => s.kind !== 'live')) assert.equal(await stateOf(session), 'hibernated', session.id);
    await assertStrangerSeesNothing('bob', 'alice');
    await assertStrangerSeesNothing('alice', 'bob');
    for (const session of sessions.filter((s) => s.kind !== 'live')) assert.equal(await stateOf(session), 'hibernated', session.id);
  });

  test('after the restart: every session of both subjects and eras answers with its variables and its file', async () => {
    for (const session of sessions) {
      const answered = await step(session);
      if (session.kind !== 'live') assert.equal(answered.resumed, true, `${session.id} (${session.kind}) was not resumed from its save`);
      await assertFile(session);
      const status = await session.client.callOk('sandbox_session_status', { session_id: session.id });
      assert.equal(status.replica, session.replica);
    }
    for (const owner of SUBJECTS) await assertOwnerListsAll(owner);
    // A fork and its origin went their own ways: the origin counts on from its own n.
    for (const fork of sessions.filter((s) => s.kind === 'fork')) {
      const origin = sessions.find((s) => s.id === fork.me);
      assert.ok(origin.n > fork.n, `${origin.id} n=${origin.n}, its fork ${fork.id} n=${fork.n}`);
    }
    console.log(`# fleet (${variant.label}): ${sessions.length} sessions of 2 subjects kept through the rolling restart`);
  });
});
