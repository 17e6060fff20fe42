// Saved sessions budgeted per subject (docs/many-users.md "Saved sessions per subject"; issue #36, defect 2)
// through the official SDK client, with OAuth on: a real OpenID provider (oidc-provider) on
// loopback issues tokens for two subjects. SANDBOX_SAVED_MAX_BYTES=4m, hibernation after 2 s:
// alice's session hibernates; bob hibernates a session with a 1.5 MiB file and forks it twice,
// which would need 4.5 MiB: the second fork is refused with a tool error naming the cap, his saves
// are counted in his list, and alice's next call resumes her saved work. On the namespace backend
// and the Docker fallback, each server on a state dir of its own (the shared store's images
// borrowed), so no other test's saves count against the cap.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { callError, callOk, connectHttp, runtimeStatus, spawnHttpServer, tempDir } from './lib/harness.mjs';
import { OidcIssuer, signingKey } from './lib/oidc_issuer.mjs';

const runtime = runtimeStatus();
const SHARED_STORE = process.env.SANDBOX_STATE_DIR ?? '/var/lib/mcp-sandbox';
const DOCKER_IMAGE = 'mcp-sandbox/python:latest';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function dockerSkip() {
  if (!runtime.ok) return runtime.reason;
  try {
    execFileSync('docker', ['image', 'inspect', DOCKER_IMAGE], { stdio: 'ignore', timeout: 30000 });
    return false;
  } catch {
    return `no Docker daemon with ${DOCKER_IMAGE}`;
  }
}

// A state dir of its own whose images (and their Docker archives) are the shared store's.
function borrowedStore() {
  const dir = tempDir('mcp-saved-budget-');
  for (const part of ['images', 'archives']) {
    const shared = path.join(SHARED_STORE, part);
    if (fs.existsSync(shared)) fs.symlinkSync(shared, path.join(dir, part));
  }
  return dir;
}

async function waitFor(what, predicate, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await sleep(250);
  }
  assert.fail(`timed out waiting for ${what}`);
}

const VARIANTS = [
  { label: 'namespace backend', env: {}, skip: runtime.ok ? false : runtime.reason },
  { label: 'docker backend', env: { SANDBOX_BACKEND: 'docker' }, skip: dockerSkip() },
];

for (const { label, env, skip } of VARIANTS) describe(`saved sessions per subject, OAuth on (${label})`, { skip }, () => {
  const issuer = new OidcIssuer({ clients: ['alice', 'bob'] });
  let stateDir;
  let server;
  const clients = [];
  before(async () => {
    await issuer.start([signingKey('k1')]);
    stateDir = borrowedStore();
    server = await spawnHttpServer({
      ...env,
      SANDBOX_STATE_DIR: stateDir,
      SANDBOX_OAUTH_ISSUER: issuer.url,
      SANDBOX_OAUTH_SCOPES: 'sandbox',
      SANDBOX_SAVED_MAX_BYTES: '4m',
      SANDBOX_HIBERNATE_AFTER_S: '2',
      SANDBOX_POOL_SIZE: '0',
    });
  });
  after(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await server?.stop();
    await issuer.stop();
    if (stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
  });
  const connect = async (subject) => {
    const token = await issuer.token(subject, server.url);
    const { client } = await connectHttp(server.url, { Authorization: `Bearer ${token}` });
    clients.push(client);
    return client;
  };
  const state = async (client, id) =>
    (await callOk(client, 'sandbox_session_status', { session_id: id })).structured.state;

  test('one subject\'s forks never evict another subject\'s saved session', async () => {
    const alice = await connect('alice');
    const bob = await connect('bob');
    const { structured: mine } = await callOk(alice, 'sandbox_run_python', { code: 'work = "alice keeps this"' });
    const alices = mine.session_id;
    await waitFor('alice\'s session to hibernate', async () => (await state(alice, alices)) === 'hibernated');

    const { structured: his } = await callOk(bob, 'sandbox_run_python', {
      code: 'import os\nopen("/mnt/data/blob", "wb").write(os.urandom(3 << 19))',
    });
    const bobs = his.session_id;
    await waitFor('bob\'s session to hibernate', async () => (await state(bob, bobs)) === 'hibernated');
    const { structured: fork } = await callOk(bob, 'sandbox_fork_session', { session_id: bobs });
    assert.ok(fork.saved_bytes > 3 << 19, `the fork holds the blob: ${fork.saved_bytes}`);
    // The second copy would need 4.5 MiB of the 4 MiB: refused, naming the cap, evicting no one.
    const refused = await callError(bob, 'sandbox_fork_session', { session_id: bobs }, 'max_sessions');
    assert.equal(refused.structuredContent.reason, 'saved_budget');
    assert.equal(refused.structuredContent.budget, 'SANDBOX_SAVED_MAX_BYTES');
    assert.match(refused.content[0].text, /SANDBOX_SAVED_MAX_BYTES/);
    // His saves count where a quota sees them: his list, not alice's.
    const { structured: listed } = await callOk(bob, 'sandbox_list_sessions');
    assert.equal(listed.saved.count, 2);
    assert.ok(listed.saved.bytes > 3 << 20, `bob's saved bytes: ${listed.saved.bytes}`);
    assert.equal(listed.saved.server_max_bytes, 4 << 20);
    assert.equal((await callOk(alice, 'sandbox_list_sessions')).structured.saved.count, 1);

    // Alice's saved work is still there: her next call resumes it.
    const { structured: resumed } = await callOk(alice, 'sandbox_run_python', { session_id: alices, code: 'print(work)' });
    assert.equal(resumed.stdout, 'alice keeps this\n');
    assert.equal(resumed.resumed, true);

    for (const [client, id] of [[alice, alices], [bob, bobs], [bob, fork.session_id]]) {
      await callOk(client, 'sandbox_close_session', { session_id: id });
    }
  });
});
