// The e2e workflow with the official TypeScript SDK v2 client (@modelcontextprotocol/client),
// over stdio and Streamable HTTP: negotiating freely ('auto': it probes server/discover and
// must land on 2026-07-28 here, since the server speaks it) and pinned to 2026-07-28. The SDK v1
// client (stdio.test.mjs, http.test.mjs) covers the 2025 era against the same binary.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import {
  BIN, b64, retryWhileBusy, runtimeStatus, spawnHttpServer, text,
} from './lib/harness.mjs';

const PNG_MAGIC = '89504e470d0a1a0a';

async function connect(kind, mode) {
  const client = new Client({ name: 'mcp-sandbox-e2e-v2', version: '1.0.0' },
    { versionNegotiation: { mode } });
  if (kind === 'stdio') {
    const transport = new StdioClientTransport({
      command: BIN, args: ['serve'], env: { ...process.env, SANDBOX_LOG_LEVEL: 'warning' }, stderr: 'ignore',
    });
    await client.connect(transport);
    return { client, async close() { await client.close(); } };
  }
  const server = await spawnHttpServer();
  const transport = new StreamableHTTPClientTransport(new URL(server.url));
  await client.connect(transport);
  return { client, async close() { await client.close(); await server.stop(); } };
}

async function call(client, name, args, options = {}) {
  return client.callTool({ name, arguments: args }, { timeout: 120000, ...options });
}
async function callOk(client, name, args, options) {
  const result = await call(client, name, args, options);
  assert.ok(!result.isError, `${name} failed: ${text(result)}`);
  return result;
}

for (const kind of ['stdio', 'http']) {
  for (const mode of ['auto', { pin: '2026-07-28' }]) {
    const label = typeof mode === 'string' ? 'negotiating freely' : 'pinned to 2026-07-28';
    describe(`SDK v2 client over ${kind}, ${label}`, () => {
      const runtime = runtimeStatus();
      const rtest = (name, fn) => test(name, { skip: runtime.ok ? false : runtime.reason }, fn);
      let server;
      let session;
      before(async () => { server = await connect(kind, mode); });
      after(async () => { await server?.close(); });

      test('speaks 2026-07-28 and lists the tools with x-mcp-header on session_id', async () => {
        assert.equal(server.client.getProtocolEra(), 'modern');
        assert.equal(server.client.getNegotiatedProtocolVersion(), '2026-07-28');
        const { tools } = await server.client.listTools();
        const run = tools.find((tool) => tool.name === 'sandbox_run_python');
        assert.ok(run, tools.map((tool) => tool.name).join());
        assert.equal(run.inputSchema.properties.session_id['x-mcp-header'], 'Session-Id');
      });

      rtest('upload, pandas, chart, read back', async () => {
        const csv = 'city,temp\nOslo,3\nRome,18\nCairo,30\n';
        const upload = await callOk(server.client, 'sandbox_upload_file',
          { filename: 'weather.csv', content_base64: b64(csv) });
        session = upload.structuredContent.session_id;
        assert.match(session, /^sess_[0-9a-f]{32}$/);
        const stats = await callOk(server.client, 'sandbox_run_python', {
          session_id: session,
          code: "import pandas as pd\ndf = pd.read_csv('/mnt/data/weather.csv')\nprint(df['temp'].mean())",
        });
        assert.equal(stats.structuredContent.stdout.trim(), '17.0');
        const chart = await callOk(server.client, 'sandbox_run_python', {
          session_id: session,
          code: "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.bar(df['city'], df['temp'])\n" +
            "fig.savefig('/mnt/data/temps.png')",
        });
        assert.ok(chart.content.some((block) => block.type === 'image'), text(chart));
        const artifact = chart.structuredContent.artifacts.find((file) => file.path === '/mnt/data/temps.png');
        assert.equal(artifact?.filename, 'temps.png');
        const png = await callOk(server.client, 'sandbox_read_artifact', { session_id: session, path: 'temps.png' });
        const image = png.content.find((block) => block.type === 'image');
        assert.equal(Buffer.from(image.data, 'base64').subarray(0, 8).toString('hex'), PNG_MAGIC);
      });

      rtest('errors and timeouts are tool errors', async () => {
        const bad = await call(server.client, 'sandbox_run_python', { session_id: 'nope', code: 'print(1)' });
        assert.ok(bad.isError);
        assert.equal(bad.structuredContent.error, 'invalid_session_id');
        const slow = await call(server.client, 'sandbox_run_python',
          { session_id: session, code: 'import time\nwhile True:\n    time.sleep(0.05)', timeout_s: 1 });
        assert.ok(slow.isError);
        assert.equal(slow.structuredContent.error, 'timeout');
      });

      rtest('cancelling a call stops the run', async () => {
        const controller = new AbortController();
        const started = Date.now();
        const pending = call(server.client, 'sandbox_run_python',
          { session_id: session, code: 'import time\ntime.sleep(60)' }, { signal: controller.signal });
        setTimeout(() => controller.abort('test'), 1000);
        await assert.rejects(pending);
        const next = await retryWhileBusy(() =>
          call(server.client, 'sandbox_run_python', { session_id: session, code: 'print("after")' }));
        assert.ok(!next.isError, text(next));
        assert.ok(Date.now() - started < 20000, 'the cancelled run went on');
      });

      rtest('close the session', async () => {
        const closed = await callOk(server.client, 'sandbox_close_session', { session_id: session });
        assert.equal(closed.structuredContent.status, 'closed');
      });
    });
  }
}
