// The end-to-end behaviour suite, run once per transport (stdio.test.mjs, http.test.mjs) with
// the official SDK client. Tests that need a working sandbox skip, saying why, when
// `mcp-sandbox doctor` finds no backend or the image is missing.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { McpError } from '@modelcontextprotocol/sdk/types.js';

import {
  b64, call, callError, callOk, retryWhileBusy, runtimeStatus, tempDir, text,
} from './harness.mjs';

const TOOLS = [
  'sandbox_run_python', 'sandbox_upload_file', 'sandbox_read_artifact', 'sandbox_list_artifacts',
  'sandbox_close_session', 'sandbox_create_session', 'sandbox_list_sessions',
  'sandbox_session_status', 'sandbox_run_command', 'sandbox_install_packages',
  'sandbox_write_file', 'sandbox_read_file', 'sandbox_run_once', 'sandbox_fork_session',
];
const PNG_MAGIC = '89504e470d0a1a0a';

// A server for a describe block: started before its tests, closed after (not started at all
// when the block's tests are skipped).
function useServer(start, env = {}, args = [], skip = false) {
  const holder = {};
  before(async () => {
    if (skip) return;
    Object.assign(holder, await start(env, args));
  });
  after(async () => {
    await holder.close?.();
  });
  return holder;
}

// A minimal pure-Python wheel, made with the host's Python (zipfile), for the wheelhouse test.
function buildWheel(dir) {
  const script = `
import base64, hashlib, zipfile, sys
name, version = "mcpdemo", "1.0"
files = {
  "mcpdemo/__init__.py": b"VALUE = 'from the wheelhouse'\\n",
  f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n".encode(),
  f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\\nGenerator: e2e\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(data):
  return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{p},{digest(d)},{len(d)}\\n" for p, d in files.items())
record += f"{name}-{version}.dist-info/RECORD,,\\n"
with zipfile.ZipFile(sys.argv[1] + f"/{name}-{version}-py3-none-any.whl", "w") as z:
  for p, d in files.items():
    z.writestr(p, d)
  z.writestr(f"{name}-{version}.dist-info/RECORD", record)
`;
  execFileSync('python3', ['-c', script, dir]);
}

export function transportSuite(kind, start) {
  const runtime = runtimeStatus();
  const needsRuntime = runtime.ok ? false : `needs the sandbox runtime: ${runtime.reason}`;
  // Tests that need a working sandbox: registered either way, so skips are counted and say why.
  const rtest = needsRuntime ? (name, fn) => test(name, { skip: needsRuntime }, fn) : test;

  describe(`${kind}: protocol`, () => {
    const server = useServer(start);

    test('initialize: server info, tools and logging capabilities, instructions', () => {
      const info = server.client.getServerVersion();
      assert.equal(info.name, 'mcp-sandbox');
      const capabilities = server.client.getServerCapabilities();
      assert.ok(capabilities.tools);
      assert.ok(capabilities.logging);
      assert.match(server.client.getInstructions(), /sandbox_run_python/);
    });

    test('tools/list: every tool of DESIGN.md, with schemas, titles and annotations', async () => {
      const { tools } = await server.client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), [...TOOLS].sort());
      for (const tool of tools) {
        assert.match(tool.name, /^[A-Za-z0-9_.-]{1,128}$/);
        assert.equal(tool.inputSchema.type, 'object');
        assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
        assert.equal(tool.outputSchema?.type, 'object', tool.name);
        assert.ok(tool.title, tool.name);
        // These servers have no SANDBOX_EGRESS_ALLOW: no tool reaches an open world (with one,
        // the tools that run code say true; sandbox_tools_unit_test.cc checks both ways).
        assert.equal(tool.annotations.openWorldHint, false, tool.name);
        assert.equal(typeof tool.annotations.readOnlyHint, 'boolean', tool.name);
        assert.ok(tool.description.length > 40, tool.name);
      }
      const run = tools.find((tool) => tool.name === 'sandbox_run_python');
      assert.deepEqual(run.inputSchema.required, ['code']);
      for (const arg of ['code', 'session_id', 'timeout_s', 'fresh']) assert.ok(run.inputSchema.properties[arg], arg);
      const upload = tools.find((tool) => tool.name === 'sandbox_upload_file');
      for (const arg of ['filename', 'content_base64', 'session_id', 'overwrite']) {
        assert.ok(upload.inputSchema.properties[arg], arg);
      }
      // The seed server's argument name; `content` is still accepted but not listed.
      assert.deepEqual(upload.inputSchema.required.sort(), ['content_base64', 'filename']);
      assert.equal(upload.inputSchema.properties.content, undefined);
      assert.match(run.description.split('\n')[0], /stateful/);
    });

    test('ping and logging/setLevel', async () => {
      await server.client.ping();
      await server.client.setLoggingLevel('debug');
      await server.client.setLoggingLevel('info');
    });

    test('an unknown tool is a JSON-RPC -32602 error', async () => {
      await assert.rejects(call(server.client, 'no_such_tool', {}), (error) => {
        assert.ok(error instanceof McpError);
        assert.equal(error.code, -32602);
        return true;
      });
    });

    test('invalid_argument: arguments that break the schema', async () => {
      await callError(server.client, 'sandbox_run_python', {}, 'invalid_argument');
      await callError(server.client, 'sandbox_run_python', { code: 'print(1)', bogus: 1 }, 'invalid_argument');
      await callError(server.client, 'sandbox_run_python', { code: 'print(1)', timeout_s: -3 }, 'invalid_argument');
      await callError(server.client, 'sandbox_upload_file', { filename: 'a', content_base64: '!!not base64!!' },
        'invalid_argument');
      await callError(server.client, 'sandbox_install_packages', { packages: ['--index-url=http://evil'] },
        'invalid_argument');
    });

    test('invalid_session_id and session_not_found', async () => {
      await callError(server.client, 'sandbox_run_python', { code: 'print(1)', session_id: '../etc' },
        'invalid_session_id');
      await callError(server.client, 'sandbox_session_status', { session_id: 'sess_000000000000' },
        'session_not_found');
      await callError(server.client, 'sandbox_close_session', { session_id: 'sess_000000000000' },
        'session_not_found');
    });

    test('code_too_large and upload_too_large', async () => {
      await callError(server.client, 'sandbox_run_python', { code: '#'.repeat(200 * 1024) }, 'code_too_large');
      // Just above the 50 MiB default, and below the transports' message limits.
      const big = Buffer.alloc(50 * 1024 * 1024 + 4096, 1).toString('base64');
      await callError(server.client, 'sandbox_upload_file', { filename: 'big.bin', content: big }, 'upload_too_large');
    });

    test('invalid_filename and invalid_path', async () => {
      for (const filename of ['../escape.txt', '/etc/passwd', 'dir/', 'a/./b', '']) {
        await callError(server.client, 'sandbox_upload_file', { filename, content: b64('x') },
          filename === '' ? 'invalid_argument' : 'invalid_filename');
      }
      await callError(server.client, 'sandbox_read_artifact',
        { session_id: 'sess_000000000000', path: 'a\u0000b' }, 'invalid_path');
    });

    test('install_failed without a wheelhouse', async () => {
      const result = await callError(server.client, 'sandbox_install_packages', { packages: ['tabulate'] },
        'install_failed');
      assert.match(text(result), /wheelhouse/);
    });
  });

  describe(`${kind}: sandbox_unavailable`, () => {
    const server = useServer(start, { SANDBOX_IMAGE: 'no-such-image-e2e' });
    test('a missing image gives sandbox_unavailable with what to do', async () => {
      const result = await callError(server.client, 'sandbox_run_python', { code: 'print(1)' },
        'sandbox_unavailable');
      assert.match(text(result), /image|backend/);
    });
  });

  describe(`${kind}: data analysis session`, () => {
    const server = useServer(start, {}, [], needsRuntime);
    let session;

    rtest('upload a CSV as base64', async () => {
      const csv = 'city,temp\nOslo,3\nRome,18\nCairo,30\n';
      const { structured } = await callOk(server.client, 'sandbox_upload_file',
        { filename: 'weather.csv', content_base64: b64(csv) });
      session = structured.session_id;
      assert.match(session, /^sess_[0-9a-f]{32}$/);
      assert.equal(structured.path, '/mnt/data/weather.csv');
      assert.equal(structured.size, csv.length);
    });

    rtest('analyse it with pandas', async () => {
      const { structured, result } = await callOk(server.client, 'sandbox_run_python', {
        session_id: session,
        code: "import pandas as pd\ndf = pd.read_csv('/mnt/data/weather.csv')\nprint(df['temp'].mean())",
      });
      assert.equal(structured.exit_code, 0);
      assert.equal(structured.stdout.trim(), '17.0');
      assert.equal(result.content[0].type, 'text');
      assert.match(result.content[0].text, /exit_code: 0/);
    });

    rtest('draw a matplotlib chart and receive it as an image', async () => {
      const { structured, result } = await callOk(server.client, 'sandbox_run_python', {
        session_id: session,
        code: "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.bar(df['city'], df['temp'])\n" +
          "fig.savefig('/mnt/data/temps.png')",
      });
      const images = result.content.filter((block) => block.type === 'image');
      assert.ok(images.length >= 1, text(result));
      assert.equal(images[0].mimeType, 'image/png');
      assert.equal(Buffer.from(images[0].data, 'base64').subarray(0, 8).toString('hex'), PNG_MAGIC);
      assert.ok(structured.artifacts.some((file) => file.path === '/mnt/data/temps.png'));
      assert.ok(!JSON.stringify(structured).includes(images[0].data.slice(0, 64)), 'no base64 in structuredContent');
    });

    rtest('list and read artifacts', async () => {
      const { structured } = await callOk(server.client, 'sandbox_list_artifacts', { session_id: session });
      const paths = structured.files.map((file) => file.path);
      assert.ok(paths.includes('/mnt/data/weather.csv'), paths.join());
      assert.ok(paths.includes('/mnt/data/temps.png'), paths.join());
      const png = await callOk(server.client, 'sandbox_read_artifact', { session_id: session, path: 'temps.png' });
      const image = png.result.content.find((block) => block.type === 'image');
      assert.equal(Buffer.from(image.data, 'base64').subarray(0, 8).toString('hex'), PNG_MAGIC);
      const csv = await callOk(server.client, 'sandbox_read_artifact', { session_id: session, path: 'weather.csv' });
      const resource = csv.result.content.find((block) => block.type === 'resource');
      assert.match(resource.resource.text, /Cairo,30/);
      assert.equal(csv.structured.mime_type, 'text/csv');
    });

    rtest('a failing cell, then a fixed one, with state kept', async () => {
      const failing = await callOk(server.client, 'sandbox_run_python', {
        session_id: session, code: 'x = 41\nraise ValueError("boom")',
      });
      assert.equal(failing.structured.exit_code, 1);
      assert.match(failing.structured.stderr, /ValueError: boom/);
      const fixed = await callOk(server.client, 'sandbox_run_python', { session_id: session, code: 'print(x + 1)' });
      assert.equal(fixed.structured.stdout.trim(), '42');
      assert.equal(fixed.structured.state_lost, false);
    });

    rtest('run_command, write_file and read_file in the same session', async () => {
      await callOk(server.client, 'sandbox_write_file', { session_id: session, path: 'notes/a.txt', content: 'héllo\n' });
      const read = await callOk(server.client, 'sandbox_read_file', { session_id: session, path: 'notes/a.txt' });
      assert.equal(read.structured.content, 'héllo\n');
      const command = await callOk(server.client, 'sandbox_run_command',
        { session_id: session, command: 'cat notes/a.txt && echo done' });
      assert.equal(command.structured.stdout, 'héllo\ndone\n');
    });

    rtest('invalid UTF-8 from the sandbox comes back repaired', async () => {
      const { structured } = await callOk(server.client, 'sandbox_run_python', {
        session_id: session, code: "import sys\n_ = sys.stdout.buffer.write(b'bad \\xff\\xfe ok\\n')",
      });
      assert.equal(structured.stdout, 'bad \ufffd\ufffd ok\n');
    });

    rtest('truncated output is flagged', async () => {
      const { structured, result } = await callOk(server.client, 'sandbox_run_python',
        { session_id: session, code: "print('x' * 300000)" });
      assert.equal(structured.stdout_truncated, true);
      assert.ok(structured.stdout.length <= 110 * 1024);
      assert.match(text(result), /stdout was cut/);
    });

    rtest('session status and list', async () => {
      const status = await callOk(server.client, 'sandbox_session_status', { session_id: session });
      assert.equal(status.structured.state, 'idle');
      assert.ok(status.structured.runs >= 3);
      const list = await callOk(server.client, 'sandbox_list_sessions');
      assert.ok(list.structured.sessions.some((entry) => entry.session_id === session));
    });

    rtest('close the session', async () => {
      const closed = await callOk(server.client, 'sandbox_close_session', { session_id: session });
      assert.equal(closed.structured.closed, true);
      await callError(server.client, 'sandbox_session_status', { session_id: session }, 'session_not_found');
      await callError(server.client, 'sandbox_run_python', { session_id: session, code: '1' }, 'session_not_found');
    });
  });

  describe(`${kind}: runs in flight`, () => {
    const server = useServer(start, {}, [], needsRuntime);
    let session;
    before(async () => {
      if (needsRuntime) return;
      const { structured } = await callOk(server.client, 'sandbox_create_session', { name: 'runs' });
      session = structured.session_id;
      await callOk(server.client, 'sandbox_run_python', { session_id: session, code: 'kept = "yes"' });
    });

    rtest('a timeout stops the run and says whether state was kept', async () => {
      const started = Date.now();
      const result = await callError(server.client, 'sandbox_run_python',
        { session_id: session, code: 'import time\nwhile True:\n    time.sleep(0.05)', timeout_s: 1 }, 'timeout');
      assert.ok(Date.now() - started < 15000);
      assert.equal(result.structuredContent.timed_out, true);
      const after = await callOk(server.client, 'sandbox_run_python', { session_id: session, code: 'print(kept)' });
      if (result.structuredContent.state_lost) {
        assert.equal(after.structured.exit_code, 1);
      } else {
        assert.equal(after.structured.stdout.trim(), 'yes');
      }
    });

    rtest('session_busy while another call runs', async () => {
      // The other calls go out once the slow run is seen running (its first output arrives as
      // progress), not after a guessed delay.
      let running;
      const seenRunning = new Promise((resolve) => { running = resolve; });
      const slow = call(server.client, 'sandbox_run_python',
        { session_id: session, code: "import time\nprint('running', flush=True)\ntime.sleep(5)" },
        { onprogress: (progress) => { if (/running/.test(progress.message ?? '')) running(); } });
      await Promise.race([seenRunning, slow.then((result) => {
        throw new Error(`the slow run ended before its progress was seen: ${text(result)}`);
      })]);
      await callError(server.client, 'sandbox_run_python', { session_id: session, code: 'print(1)' }, 'session_busy');
      await callError(server.client, 'sandbox_close_session', { session_id: session }, 'session_busy');
      const done = await slow;
      assert.ok(!done.isError, text(done));
    });

    rtest('progress notifications carry the tail of the output', async () => {
      const events = [];
      const { structured } = await callOk(server.client, 'sandbox_run_python', {
        session_id: session,
        code: "import time\nfor i in range(5):\n    print('step', i, flush=True)\n    time.sleep(0.4)",
      }, { onprogress: (progress) => events.push(progress) });
      assert.equal(structured.exit_code, 0);
      assert.ok(events.length >= 2, `only ${events.length} progress notifications`);
      for (let i = 1; i < events.length; i++) assert.ok(events[i].progress > events[i - 1].progress);
      assert.ok(events.some((event) => /step \d/.test(event.message ?? '')), JSON.stringify(events));
    });

    rtest('cancellation stops the run; the session is usable right after', async () => {
      const controller = new AbortController();
      const started = Date.now();
      const pending = call(server.client, 'sandbox_run_python',
        { session_id: session, code: 'import time\ntime.sleep(60)' }, { signal: controller.signal });
      setTimeout(() => controller.abort('test'), 1000);
      await assert.rejects(pending);
      const after = await retryWhileBusy(() =>
        call(server.client, 'sandbox_run_python', { session_id: session, code: 'print("after")' }));
      assert.ok(!after.isError, text(after));
      assert.equal(after.structuredContent.stdout.trim(), 'after');
      assert.ok(Date.now() - started < 20000, 'the cancelled run went on');
    });

    rtest('file_exists, not_found', async () => {
      await callOk(server.client, 'sandbox_upload_file', { session_id: session, filename: 'once.txt', content: b64('1') });
      await callError(server.client, 'sandbox_upload_file',
        { session_id: session, filename: 'once.txt', content_base64: b64('2') }, 'file_exists');
      await callOk(server.client, 'sandbox_upload_file',
        { session_id: session, filename: 'once.txt', content_base64: b64('2'), overwrite: true });
      // Both names at once is a client's mistake, not a choice the server makes for it.
      await assert.rejects(server.client.callTool({ name: 'sandbox_upload_file',
        arguments: { session_id: session, filename: 'both.txt', content: b64('1'), content_base64: b64('1') } }));
      await callError(server.client, 'sandbox_read_artifact', { session_id: session, path: 'missing.txt' }, 'not_found');
    });

    rtest('run_once leaves nothing behind', async () => {
      const before = (await callOk(server.client, 'sandbox_list_sessions')).structured.sessions.length;
      const { structured, result } = await callOk(server.client, 'sandbox_run_once', {
        code: "print(open('/mnt/data/in.txt').read() * 2)\n_ = open('/mnt/data/out.txt', 'w').write('result')",
        files: [{ filename: 'in.txt', content: b64('ab') }],
      });
      assert.equal(structured.stdout.trim(), 'abab');
      const embedded = result.content.find((block) => block.type === 'resource');
      assert.equal(embedded?.resource.text, 'result');
      const afterCount = (await callOk(server.client, 'sandbox_list_sessions')).structured.sessions.length;
      assert.equal(afterCount, before);
    });
  });

  describe(`${kind}: limits`, () => {
    const server = useServer(start, { SANDBOX_MAX_SESSIONS: '2', SANDBOX_MAX_RESULT_BYTES: '64k', SANDBOX_MEMORY_LIMIT: '128m' }, [], needsRuntime);
    let session;

    rtest('max_sessions', async () => {
      const a = await callOk(server.client, 'sandbox_create_session', {});
      const b = await callOk(server.client, 'sandbox_create_session', {});
      await callError(server.client, 'sandbox_create_session', {}, 'max_sessions');
      await callOk(server.client, 'sandbox_close_session', { session_id: b.structured.session_id });
      session = a.structured.session_id;
    });

    rtest('artifact_too_large (or a download link over HTTP)', async () => {
      await callOk(server.client, 'sandbox_run_python',
        { session_id: session, code: "open('/mnt/data/big.bin', 'wb').write(bytes(200000))" });
      const result = await call(server.client, 'sandbox_read_artifact', { session_id: session, path: 'big.bin' });
      if (kind === 'http') {
        assert.ok(!result.isError, text(result));
        assert.ok(result.content.some((block) => block.type === 'resource_link'));
        assert.match(result.structuredContent.download_url, /\/files\/sess_/);
      } else {
        assert.equal(result.structuredContent.error, 'artifact_too_large');
      }
    });

    rtest('oom when the memory limit is enforced by a cgroup', async (t) => {
      const status = await callOk(server.client, 'sandbox_session_status', { session_id: session });
      const memory = status.structured.enforced.limits.find((limit) => limit.name === 'memory');
      if (!memory || !['cgroup2', 'cgroup1', 'docker'].includes(memory.mechanism)) {
        t.skip(`memory is enforced by ${memory?.mechanism ?? 'nothing'} here, not a cgroup`);
        return;
      }
      const result = await callError(server.client, 'sandbox_run_python',
        { session_id: session, code: 'blocks = []\nwhile True:\n    blocks.append(bytearray(16 << 20))' }, 'oom');
      assert.match(text(result), /memory/);
      const after = await callOk(server.client, 'sandbox_run_python', { session_id: session, code: 'print("alive")' });
      assert.equal(after.structured.stdout.trim(), 'alive');
    });
  });

  describe(`${kind}: packages from a wheelhouse`, () => {
    const wheelhouse = needsRuntime ? '' : tempDir('mcp-e2e-wheels-');
    if (wheelhouse) {
      buildWheel(wheelhouse);
      fs.chmodSync(wheelhouse, 0o755);
    }
    after(() => wheelhouse && fs.rmSync(wheelhouse, { recursive: true, force: true }));
    const server = useServer(start, { SANDBOX_WHEELHOUSE: wheelhouse }, [], needsRuntime);

    rtest('install offline and import in the same session', async () => {
      const { structured } = await callOk(server.client, 'sandbox_install_packages', { packages: ['mcpdemo'] });
      const run = await callOk(server.client, 'sandbox_run_python',
        { session_id: structured.session_id, code: 'import mcpdemo\nprint(mcpdemo.VALUE)' });
      assert.equal(run.structured.stdout.trim(), 'from the wheelhouse');
      await callError(server.client, 'sandbox_install_packages',
        { session_id: structured.session_id, packages: ['not-in-the-wheelhouse'] }, 'install_failed');
    });
  });
}

