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
// Then the issue's defects 1 to 8, each a case on the same fleet: a token header with CR LF gets a
// 401 through the router with no header line of its own; one subject's forks never evict the
// other's save and are refused over his budget (saved_budget); a drain hibernates an idle session
// that the replica, back under its id, resumes; a sibling on the shared state dir neither resumes
// nor lists a down replica's save; a 2025 client of a draining replica gets its sessions placed on
// a ready one; a call right after a kill -9 gets replica_unavailable, never a transport error; a
// routing header twice or comma-joined is refused (400) before anything runs, by the router and
// by a replica; a download link opens one file until it expires; the router's log holds no token
// and no whole id of all the suite used.
// On both engines: the namespace backend and the Docker fallback. Root only; skips, saying why,
// without root, ip, nsenter, HAProxy, iptables or an image (the Docker variant: without a Docker
// daemon holding the image).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import {
  assertReplicaUnavailable, Cluster, clusterSupport, connectClient, connectLegacyOn, httpRequest, replicaOf, sleep,
  storeImage, waitFor,
} from './lib/cluster.mjs';
import { runtimeStatus, text } from './lib/harness.mjs';
import { OidcIssuer, signJwt, signingKey } from './lib/oidc_issuer.mjs';
import { rawPost, rawStatus } from './lib/raw_http.mjs';

const REPLICAS = ['r1', 'r2', 'r3'];
const SUBJECTS = ['alice', 'bob'];
const ERAS = ['modern', 'legacy'];
// Each subject's saved budget on each replica (SANDBOX_SUBJECT_MAX_SAVED).
const MAX_SAVED = 10;
// 198.18.0.64/27: this suite's links (one /28 per engine), apart from scaleout.test.mjs's
// (.0/28) and the scale-out benchmarks' (.128, .160), should two run at once.
const BASE = 64;
// The issuer's signing key (defect 1 signs hostile headers with it).
const KEY = signingKey('k1');

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

// Every session and transport id the variant running now is given, for the check of its
// router's log.
const handles = new Set();

// A session of the test: { id, owner, era, kind: 'live' | 'hibernated' | 'fork' | 'case', client,
// replica, me, n, file }. `me` and `n` are Python variables in it; `file` the content of
// fleet.txt. Created by `creator` (a client straight to one replica places it there), then used
// through `client`.
async function newSession(owner, era, kind, client, creator = client) {
  const created = await creator.callOk('sandbox_create_session', {});
  const id = created.session_id;
  handles.add(id);
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

// Closes session `id` through `client`, once: a close that meets the reaper saving the session
// waits for the save as a call does, then deletes it.
async function closeOk(client, id) {
  const result = await client.call('sandbox_close_session', { session_id: id });
  assert.ok(!result.isError, `close ${id}: ${text(result)}`);
}

const stateOf = async (session) =>
  (await session.client.callOk('sandbox_session_status', { session_id: session.id })).state;
const runsOf = async (session) =>
  (await session.client.callOk('sandbox_session_status', { session_id: session.id })).runs;

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

  // The steady load: every live session, over and over from its creation on (an idle one would
  // hibernate), except while it is paused (`paused`: a fork is taken of it) or its replica is
  // being restarted (`restarting`): then it is left idle, from just before the SIGTERM until the
  // replica is back (the drain hibernates it; its next call resumes it). Every failure is kept.
  const load = { running: true, restarting: null, paused: new Set(), calls: 0, failures: [], inFlight: new Map(), loops: [] };
  function keepBusy(session) {
    load.loops.push((async () => {
      while (load.running) {
        if (session.replica === load.restarting || load.paused.has(session.id)) {
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
    })());
  }
  async function stopLoad() {
    load.running = false;
    await Promise.all(load.loops);
  }
  // Takes `session` out of the load; resolves once its call on the way (if any) is done.
  async function pause(session) {
    load.paused.add(session.id);
    await load.inFlight.get(session.id)?.catch(() => {});
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
    handles.clear();
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
        SANDBOX_SUBJECT_MAX_SAVED: String(MAX_SAVED),
        // Download links expire within a test's patience (defect 7), not the default hour.
        SANDBOX_DOWNLOAD_TTL: '5s',
        ...variant.env,
      },
    });
    cluster.setupNetwork();
    // The issuer on the host side of r1's link; r2 and r3 reach it through theirs.
    const issuerHost = cluster.replica('r1').hostAddress;
    cluster.reachHostAddress(issuerHost);
    issuer = new OidcIssuer({ clients: SUBJECTS, accessTokenTTL: 3600, host: issuerHost });
    await issuer.start([KEY]);
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
      for (const client of clients[subject].legacy) handles.add(client.transportId);
    }
  });

  after(async () => {
    load.running = false;
    await Promise.allSettled(load.loops);
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
      // Live: three 2026 ones (the router spreads them), one per 2025 client; each in the load
      // at once, so none idles long enough to hibernate.
      const live = [];
      for (let i = 0; i < 3; i++) live.push(await newSession(owner, 'modern', 'live', modern));
      for (const client of legacy) live.push(await newSession(owner, 'legacy', 'live', client));
      for (const session of live) keepBusy(session);
      sessions.push(...live);
      // To be left idle until they hibernate.
      sessions.push(await newSession(owner, 'modern', 'hibernated', modern));
      sessions.push(await newSession(owner, 'legacy', 'hibernated', legacy[1]));
      // A fork of a live session of each era: a saved copy, with the variables and file as
      // they were (its `me` is its origin's id), untouched until after the restart.
      for (const era of ERAS) {
        const origin = sessions.find((session) => session.owner === owner && session.era === era && session.kind === 'live');
        await pause(origin);
        await step(origin);
        const fork = await origin.client.callOk('sandbox_fork_session', { session_id: origin.id });
        load.paused.delete(origin.id);
        assert.equal(fork.forked_from, origin.id);
        handles.add(fork.session_id);
        sessions.push({ ...origin, id: fork.session_id, kind: 'fork', replica: replicaOf(fork.session_id) });
      }
    }
    for (const session of sessions) assert.match(session.id, /^sess_r[123]_[0-9a-f]{32}$/);
    for (const session of sessions.filter((s) => s.era === 'legacy' && s.kind !== 'fork')) {
      assert.equal(session.replica, replicaOf(session.client.transportId), `a 2025 session is placed with its transport: ${session.id}`);
    }
    const live = sessions.filter((session) => session.kind === 'live');
    for (const replica of REPLICAS) assert.ok(live.some((session) => session.replica === replica), `no live session on ${replica}: ${live.map((s) => s.id).join(' ')}`);

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
    await stopLoad();
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
    // Closed by their owners: the cases below start from a fleet with no saved budget in use.
    for (const session of sessions) await closeOk(session.client, session.id);
  });

  // --- Issue #36's defects 1 to 8, each a case on this fleet as the restart left it (OAuth on,
  // hibernation on, both subjects' clients of both eras): first the ones that leave every replica
  // up, then those that stop or kill one, the router's log last (it has seen them all).

  const bearer = (subject) => ({ Authorization: `Bearer ${tokens[subject]}` });
  const nowS = () => Math.floor(Date.now() / 1000);

  // A 2026 session of `owner` placed on `replica` (created straight there: the router would place
  // it by load), used through the router like the others.
  async function sessionOn(owner, replica) {
    const direct = await connectClient('modern', cluster.directUrl(replica), bearer(owner));
    try {
      return await newSession(owner, 'modern', 'case', clients[owner].modern, direct);
    } finally {
      await direct.close();
    }
  }

  // What each of `replicas` (straight, as `subject`) says of `session`: replica_unavailable for
  // its status, and none of its lists holds it (it neither resumed nor shows the save).
  async function assertSiblingsLeaveIt(session, subject, replicas) {
    for (const replica of replicas) {
      const direct = await connectClient('modern', cluster.directUrl(replica), bearer(subject));
      try {
        assertReplicaUnavailable(await direct.call('sandbox_session_status', { session_id: session.id }), session.replica, session.id);
        const listed = JSON.stringify(await direct.callOk('sandbox_list_sessions', {}));
        assert.ok(!listed.includes(session.id), `${replica} lists ${session.id}: ${listed}`);
      } finally {
        await direct.close();
      }
    }
  }

  // SIGTERM: the drain, then exit 0 within a minute.
  async function drain(replica) {
    cluster.signal(replica, 'SIGTERM');
    await cluster.waitServer(replica, 'NOLB', 3000);
  }
  async function drained(replica) {
    const exit = await Promise.race([cluster.replica(replica).exit, sleep(60000).then(() => null)]);
    assert.deepEqual(exit, { code: 0, signal: null }, `${replica} did not drain and exit 0 within 60 s`);
  }
  async function restart(replica) {
    await cluster.startReplica(replica);
    await cluster.waitServer(replica, 'UP', 10000);
  }

  test('defect 1: a token whose header has CR LF in kid or alg gets, through the router, a 401 with no header line of its making', async () => {
    const claims = { iss: issuer.url, aud: cluster.url, sub: 'alice', scope: 'sandbox', iat: nowS(), exp: nowS() + 300 };
    const hostile = 'k9\r\nX-Injected: 1';
    // Read off the router's socket: a header line the replica wrote would be one HAProxy passes on.
    const post = (token) => rawPost('127.0.0.1', cluster.router.port, {
      headers: [['Accept', 'application/json, text/event-stream'], ['Content-Type', 'application/json'],
        ['Authorization', `Bearer ${token}`]],
    });
    for (const [label, header] of [['kid', { alg: 'RS256', kid: hostile }], ['alg', { alg: hostile, kid: 'k1' }]]) {
      const raw = await post(signJwt(header, claims, KEY.privateKey));
      assert.equal(rawStatus(raw), 401, `${label}: ${raw}`);
      assert.doesNotMatch(raw, /[\r\n]X-Injected:/i, `${label}: ${raw}`);
      assert.ok(!raw.includes('k9'), `${label}: the token's bytes came back: ${raw}`);
      assert.match(raw.slice(0, raw.indexOf('\r\n\r\n')), /\r\nwww-authenticate: Bearer [^\r\n]*error="invalid_token"/i, label);
    }
    // The same request with the subject's own token gets past authentication.
    assert.notEqual(rawStatus(await post(tokens.alice)), 401);
  });

  test('defect 2: one subject\'s forks never evict the other\'s save; over his budget, his fork is refused (saved_budget)', async () => {
    const hers = await sessionOn('alice', 'r1');
    await hers.client.callOk('sandbox_run_python', { session_id: hers.id, code: 'work = "alice keeps this"' });
    const his = await sessionOn('bob', 'r1');
    await waitFor('both sessions to hibernate', async () => (await stateOf(hers)) === 'hibernated' && (await stateOf(his)) === 'hibernated',
      { timeoutMs: 30000, everyMs: 500 });
    // Copies of his save, until his budget says no: with the restart's sessions closed, his save
    // and MAX_SAVED - 1 forks fit.
    const forks = [];
    let refused;
    while (!refused && forks.length < MAX_SAVED) {
      const result = await his.client.call('sandbox_fork_session', { session_id: his.id });
      if (result.isError) refused = result;
      else forks.push(result.structuredContent.session_id);
    }
    forks.forEach((id) => handles.add(id));
    assert.ok(refused, `${forks.length} forks, none refused`);
    assert.equal(refused.structuredContent.error, 'max_sessions', text(refused));
    assert.equal(refused.structuredContent.reason, 'saved_budget', text(refused));
    assert.equal(refused.structuredContent.budget, 'SANDBOX_SUBJECT_MAX_SAVED', text(refused));
    assert.equal(forks.length, MAX_SAVED - 1);
    // Her saved work is still there: her next call resumes it.
    const resumed = await hers.client.callOk('sandbox_run_python', { session_id: hers.id, code: 'print(work)' });
    assert.equal(resumed.stdout, 'alice keeps this\n');
    assert.equal(resumed.resumed, true);
    for (const id of [...forks, his.id]) await closeOk(his.client, id);
    await closeOk(hers.client, hers.id);
  });

  test('defect 8: Mcp-Param-Session-Id twice, or two ids in one, through the router and straight to the replica: 400 before anything runs', async () => {
    const first = await sessionOn('alice', 'r1');
    const second = await sessionOn('alice', 'r2');
    await step(first);
    // That call's POST, replayed with its routing header doubled: read one way by HAProxy
    // (req.hdr() takes the last value) and another by a replica that took the first.
    const recorded = first.client.sent.last;
    const body = JSON.stringify({ ...JSON.parse(recorded.body), id: 9001 });
    const headers = Object.entries(recorded.headers)
      .filter(([name]) => !['mcp-param-session-id', 'host', 'content-length', 'connection'].includes(name));
    const runs = await Promise.all([first, second].map(runsOf));
    const name = 'Mcp-Param-Session-Id';
    for (const [label, routing] of [
      ['twice, the body\'s first', [[name, first.id], [name, second.id]]],
      ['twice, the body\'s last', [[name, second.id], [name, first.id]]],
      ['comma-joined, the body\'s first', [[name, `${first.id}, ${second.id}`]]],
      ['comma-joined, the body\'s last', [[name, `${second.id},${first.id}`]]],
    ]) {
      for (const [where, host, port] of [['the router', '127.0.0.1', cluster.router.port], ['r1', cluster.replica('r1').address, 8080]]) {
        const raw = await rawPost(host, port, { headers: [...headers, ...routing], body });
        assert.equal(rawStatus(raw), 400, `${label}, to ${where}: ${raw}`);
        assert.match(raw, /"code":\s*-32020/, `${label}, to ${where}: ${raw}`);
        assert.match(raw, /more than once/, `${label}, to ${where}: ${raw}`);
      }
    }
    assert.deepEqual(await Promise.all([first, second].map(runsOf)), runs, 'a refused call ran');
    await step(first); // the same call, its header once: it runs
    for (const session of [first, second]) await closeOk(session.client, session.id);
  });

  test('defect 3: a drain (SIGTERM) hibernates the replica\'s idle session; started again under its id, the replica resumes it with its variable and file', async () => {
    const session = await sessionOn('alice', 'r2');
    await step(session);
    await drain('r2');
    await drained('r2');
    assert.match(cluster.replica('r2').log.text, new RegExp(`session ${session.id} hibernated`));
    await restart('r2');
    const answered = await step(session);
    assert.equal(answered.resumed, true, `${session.id} was not resumed from its save`);
    await assertFile(session);
    await closeOk(session.client, session.id);
  });

  test('defect 4: replicas sharing a state dir: while a replica is down a sibling neither resumes nor lists its save; back, the replica resumes it, live once', async () => {
    const session = await sessionOn('bob', 'r3');
    await step(session);
    assert.deepEqual(await cluster.stopNow('r3'), { code: 0, signal: null });
    await cluster.waitServer('r3', 'DOWN', 5000);
    // Through the router a sibling answers: the save lies in the state dir it shares.
    assertReplicaUnavailable(await session.client.call('sandbox_run_python', { session_id: session.id, code: 'print(n)' }), 'r3', session.id);
    await assertSiblingsLeaveIt(session, 'bob', ['r1', 'r2']);
    await restart('r3');
    const answered = await step(session);
    assert.equal(answered.resumed, true);
    await assertFile(session);
    await assertSiblingsLeaveIt(session, 'bob', ['r1', 'r2']);
    await closeOk(session.client, session.id);
  });

  test('defect 5: a 2025 client whose transport a draining replica issued gets its new sessions on a ready replica', async () => {
    const stuck = await connectLegacyOn('r1', cluster.url, bearer('alice'));
    handles.add(stuck.transportId);
    // A session in use on r1 all along keeps it draining (it exits once that idles).
    const kept = await sessionOn('alice', 'r1');
    let busy = true;
    const keeper = (async () => {
      while (busy) await kept.client.callOk('sandbox_run_python', { session_id: kept.id, code: 'import time\ntime.sleep(0.3)' });
    })();
    try {
      await drain('r1');
      for (let i = 0; i < 3; i++) {
        const created = await stuck.call('sandbox_create_session', {});
        assert.ok(!created.isError, `a 2025 client of draining r1: ${text(created)}`);
        const id = created.structuredContent.session_id;
        handles.add(id);
        assert.notEqual(replicaOf(id), 'r1', `${id} placed on draining r1`);
        await closeOk(stuck, id);
      }
    } finally {
      busy = false;
      await keeper;
      await stuck.close();
    }
    await drained('r1');
    await restart('r1');
  });

  test('defect 6: kill -9 of a replica, then at once a call on its session, four times: the tool error replica_unavailable, never a transport error', async () => {
    for (let round = 1; round <= 4; round++) {
      // Made and used through the router: HAProxy holds a connection to r3 that the kill closes.
      const victim = await sessionOn('bob', 'r3');
      await cluster.stopReplica('r3', 'SIGKILL');
      let result;
      try {
        result = await victim.client.call('sandbox_run_python', { session_id: victim.id, code: 'print(2)' });
      } catch (error) {
        assert.fail(`round ${round}: the first call after kill -9 failed with a transport error: ${error.message}`);
      }
      assertReplicaUnavailable(result, 'r3', victim.id);
      await restart('r3');
    }
  });

  test('defect 7: a download link opens one file and expires; the router\'s log holds no token and no whole id', async () => {
    const session = await sessionOn('alice', 'r2');
    await session.client.callOk('sandbox_run_python', {
      session_id: session.id, code: "open('/mnt/data/a.txt', 'w').write('file a')\nopen('/mnt/data/b.txt', 'w').write('file b')",
    });
    const { files } = await session.client.callOk('sandbox_list_artifacts', { session_id: session.id });
    const link = (name) => new URL(files.find((file) => file.path === `/mnt/data/${name}`).download_url);
    const [a, b] = [link('a.txt'), link('b.txt')];
    assert.equal(a.host, `127.0.0.1:${cluster.router.port}`, 'the link names the address the client used');
    for (const [url, content] of [[a, 'file a'], [b, 'file b']]) {
      const fetched = await httpRequest(url);
      assert.equal(fetched.status, 200, fetched.body);
      assert.equal(fetched.body, content);
    }
    // a's token names a's path: on b's it opens nothing.
    const crossed = new URL(b);
    for (const key of ['expires', 'token']) crossed.searchParams.set(key, a.searchParams.get(key));
    assert.equal((await httpRequest(crossed)).status, 403);
    // Past its expiry (SANDBOX_DOWNLOAD_TTL), the link is refused, saying so.
    await sleep(Math.max(0, Number(a.searchParams.get('expires')) * 1000 - Date.now()) + 1100);
    const late = await httpRequest(a);
    assert.equal(late.status, 403, late.body);
    assert.match(late.body, /expired/);
    await closeOk(session.client, session.id);

    const log = cluster.router.log.text;
    assert.doesNotMatch(log, /[?&]token=/);
    for (const url of [a, b]) assert.ok(!log.includes(url.searchParams.get('token')), 'a download token is in the router\'s log');
    assert.doesNotMatch(log, /(?:sess|mcps)_[a-z0-9-]+_[0-9a-f]{7}/, 'a whole (or longer than cut) id is in the router\'s log');
    for (const handle of handles) assert.ok(!log.includes(handle.slice(-26)), `${handle} is in the router's log`);
    // What it does show: each id cut to its replica and 6 hex digits (so the checks saw them).
    assert.match(log, new RegExp(`"GET /files/sess_r2_${session.id.slice(8, 14)}\\.\\.\\./a\\.txt HTTP/1\\.1"`));
    assert.match(log, /sid=sess_r[123]_[0-9a-f]{6}\.\.\. /);
    assert.match(log, /mcps=mcps_r[123]_[0-9a-f]{6}\.\.\. /);
    console.log(`# fleet (${variant.label}): ${handles.size} ids, none whole in the router's log`);
  });
});
