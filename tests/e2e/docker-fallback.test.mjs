// Issue 5's acceptance test: the server is started where user namespaces are denied, chooses
// the Docker backend on its own (SANDBOX_BACKEND=auto), and the MCP workflow works through it.
//
// The denial is the kernel's own: the server runs in a child user namespace whose
// user.max_user_namespaces is 0, so every clone/unshare of a user namespace inside fails with
// ENOSPC, as on hosts that set the sysctl to 0. Root in that namespace is host root, so the
// server can still reach the Docker socket (owned by root), as a root service would.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import { BIN, b64, callError, callOk, startStdio, text } from './lib/harness.mjs';

const LABEL_SESSION = 'mcp-sandbox.session';  // runtime/docker/container_spec.h
const DENY_USERNS = [
  'unshare', '--user', '--map-root-user', '--',
  'sh', '-c', 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', 'deny-userns',
];

// Why the test cannot run here, or '' when it can.
function whyNot() {
  if (process.getuid() !== 0) return 'needs root (the Docker socket belongs to root)';
  let doctor;
  try {
    doctor = JSON.parse(execFileSync(BIN, ['doctor', '--json'], { encoding: 'utf8', timeout: 60000 }));
  } catch (error) {
    return `mcp-sandbox doctor --json failed: ${error.message.split('\n')[0]}`;
  }
  if (!doctor.docker?.api_ok) return `no Docker daemon: ${doctor.docker?.detail ?? 'unknown'}`;
  try {
    execFileSync(DENY_USERNS[0], [...DENY_USERNS.slice(1), 'true'], { stdio: 'ignore' });
  } catch (error) {
    return `cannot make a namespace without user namespaces here: ${error.message.split('\n')[0]}`;
  }
  return '';
}

// The ids of the containers labelled with a session id (the Docker backend labels each one).
function containersOf(session) {
  const socket = (process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');
  const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL_SESSION}=${session}`] }));
  const body = execFileSync('curl', ['-fsS', '--unix-socket', socket,
    `http://docker/containers/json?all=1&filters=${filters}`], { encoding: 'utf8' });
  return JSON.parse(body).map((container) => container.Id);
}

const skip = whyNot();
if (skip) console.log(`# docker fallback tests skipped: ${skip}`);

describe('docker fallback: user namespaces denied, SANDBOX_BACKEND=auto', { skip: skip || false }, () => {
  const server = {};
  before(async () => {
    Object.assign(server, await startStdio({ SANDBOX_BACKEND: 'auto' }, [], DENY_USERNS));
  });
  after(async () => {
    await server.close?.();
  });

  test('the denial is real: a nested user namespace cannot be made', () => {
    assert.throws(() => execFileSync(DENY_USERNS[0], [...DENY_USERNS.slice(1), 'unshare', '--user', 'true'],
      { stdio: 'ignore' }));
  });

  let session;
  test('a session starts on the Docker backend, and the log says why', async () => {
    const { structured } = await callOk(server.client, 'sandbox_create_session', {});
    session = structured.session_id;
    assert.equal(structured.backend, 'docker');
    assert.match(server.stderr.text, /backend: docker \(user namespaces unavailable: [^\n]*ENOSPC[^\n]*falling back to Docker/);
  });

  test('upload, pandas, a chart as an image, state kept across cells', async () => {
    const csv = 'city,temp\nOslo,3\nRome,18\nCairo,30\n';
    await callOk(server.client, 'sandbox_upload_file', { session_id: session, filename: 'w.csv', content: b64(csv) });
    const analysed = await callOk(server.client, 'sandbox_run_python', {
      session_id: session,
      code: "import pandas as pd\ndf = pd.read_csv('/mnt/data/w.csv')\nprint(df['temp'].mean())",
    });
    assert.equal(analysed.structured.stdout.trim(), '17.0');
    const chart = await callOk(server.client, 'sandbox_run_python', {
      session_id: session,
      code: "import matplotlib.pyplot as plt\nplt.bar(df['city'], df['temp'])\nplt.savefig('/mnt/data/t.png')",
    });
    assert.ok(chart.result.content.some((block) => block.type === 'image' && block.mimeType === 'image/png'),
      text(chart.result));
    const listed = await callOk(server.client, 'sandbox_list_artifacts', { session_id: session });
    assert.ok(JSON.stringify(listed.structured).includes('/mnt/data/t.png'));
  });

  test('a failing cell, then a fixed one, in the same session', async () => {
    const failing = await callOk(server.client, 'sandbox_run_python', { session_id: session, code: 'x = 1 / 0' });
    assert.notEqual(failing.structured.exit_code, 0);
    assert.match(failing.structured.stderr, /ZeroDivisionError/);
    const fixed = await callOk(server.client, 'sandbox_run_python', {
      session_id: session, code: 'x = 1 / 2\nprint(x, len(df))',
    });
    assert.equal(fixed.structured.stdout.trim(), '0.5 3');
  });

  test('a timeout stops the run for real: nothing keeps running, the session goes on', async () => {
    const timed = await callError(server.client, 'sandbox_run_python', {
      session_id: session,
      code: "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\ntime.sleep(300)",
      timeout_s: 2,
    }, 'timeout');
    assert.equal(timed.structuredContent.timed_out, true);
    // Every process of the container, from inside: no `sleep 300` survived the timeout.
    const ps = await callOk(server.client, 'sandbox_run_python', {
      session_id: session,
      code: "import os\nargs = []\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n" +
        "    try:\n        args.append(open(f'/proc/{pid}/cmdline', 'rb').read())\n" +
        "    except OSError:\n        pass\nprint(sum(a.startswith(b'sleep\\x00300') for a in args))",
    });
    assert.equal(ps.structured.stdout.trim(), '0');
    const after = await callOk(server.client, 'sandbox_run_python', { session_id: session, code: 'print(2 + 2)' });
    assert.equal(after.structured.stdout.trim(), '4');
  });

  test('a shell command, and close: the session and its container are gone', async () => {
    const shell = await callOk(server.client, 'sandbox_run_command', { session_id: session, command: 'id -u' });
    assert.equal(shell.structured.stdout.trim(), '1000');
    await callOk(server.client, 'sandbox_close_session', { session_id: session });
    await callError(server.client, 'sandbox_session_status', { session_id: session }, 'session_not_found');
    assert.deepEqual(containersOf(session), []);
  });
});
