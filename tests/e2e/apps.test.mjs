// MCP Apps (io.modelcontextprotocol/ui, mcp/apps/): the extension is declared and served only to
// a client that declares it, in both protocol eras, and a client that does not gets the same
// JSON as before; then the table view in a real browser: headless Chromium (Debian's package,
// driven by playwright-core) frames the view behind the official host-side bridge (AppBridge of
// @modelcontextprotocol/ext-apps), whose tool calls go to the server over Streamable HTTP, and
// the test checks what a person sees: rows, a sort, a filter, paging a 1,000,000-row frame; the
// view's CSP refusing a fetch; hostile cells and column names executing nothing. Screenshots go
// to build/e2e-results/apps/.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';

import { Client as ClientV2, StreamableHTTPClientTransport as HttpTransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { ROOT, runtimeStatus, spawnHttpServer, text } from './lib/harness.mjs';

const UI = 'io.modelcontextprotocol/ui';
const UI_MIME = 'text/html;profile=mcp-app';
const UI_CAPABILITIES = { extensions: { [UI]: { mimeTypes: [UI_MIME] } } };
const TABLE_URI = 'ui://mcp-sandbox/table.html';
const FILES_URI = 'ui://mcp-sandbox/files.html';
const CHART_URI = 'ui://mcp-sandbox/chart.html';
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.join(process.env.E2E_RESULTS_DIR ?? path.join(ROOT, 'build', 'e2e-results'), 'apps');

async function connectV1(url, ui) {
  const client = new Client({ name: 'mcp-sandbox-e2e-apps', version: '1.0.0' },
    { capabilities: ui ? UI_CAPABILITIES : {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function connectV2(url, ui) {
  const client = new ClientV2({ name: 'mcp-sandbox-e2e-apps-v2', version: '1.0.0' },
    { capabilities: ui ? UI_CAPABILITIES : {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new HttpTransportV2(new URL(url)));
  return client;
}

async function callTool(client, name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
}

function viewTools(list) {
  return list.tools.filter((tool) => tool.name.startsWith('sandbox_view_'));
}

describe('MCP Apps: the extension only for clients that declare it', () => {
  let server;
  before(async () => { server = await spawnHttpServer(); });
  after(async () => { await server?.stop(); });

  for (const era of ['2025-11-25', '2026-07-28']) {
    test(`${era}: capabilities, tools/list, resources/list and resources/read`, async () => {
      const connect = era === '2026-07-28' ? connectV2 : connectV1;
      const plain = await connect(server.url, false);
      const ui = await connect(server.url, true);
      try {
        assert.equal(plain.getServerCapabilities().extensions, undefined);
        // From initialize (2025) or from server/discover, which the 2026 client sends with its
        // capabilities in _meta when it connects.
        assert.deepEqual(ui.getServerCapabilities().extensions, { [UI]: {} });
        const plainTools = await plain.listTools();
        const uiTools = await ui.listTools();
        assert.deepEqual(viewTools(plainTools), []);
        assert.ok(!JSON.stringify(plainTools).includes('ui://'));
        const table = uiTools.tools.find((tool) => tool.name === 'sandbox_view_table');
        assert.ok(table, 'the table tool is listed to a client with the extension');
        assert.equal(table._meta.ui.resourceUri, TABLE_URI);
        assert.equal(table._meta['ui/resourceUri'], TABLE_URI);
        const files = uiTools.tools.find((tool) => tool.name === 'sandbox_view_files');
        assert.equal(files?._meta.ui.resourceUri, FILES_URI);
        const chart = uiTools.tools.find((tool) => tool.name === 'sandbox_view_chart');
        assert.equal(chart?._meta.ui.resourceUri, CHART_URI);
        // Everything else is the same JSON, byte for byte.
        const others = { ...uiTools, tools: uiTools.tools.filter((tool) => !tool.name.startsWith('sandbox_view_')) };
        assert.equal(JSON.stringify(others.tools), JSON.stringify(plainTools.tools));

        const plainResources = await plain.listResources();
        assert.ok(!plainResources.resources.some((resource) => resource.uri.startsWith('ui://')));
        const uiResources = await ui.listResources();
        const entry = uiResources.resources.find((resource) => resource.uri === TABLE_URI);
        assert.equal(entry?.mimeType, UI_MIME);
        const read = await ui.readResource({ uri: TABLE_URI });
        assert.equal(read.contents.length, 1);
        assert.equal(read.contents[0].mimeType, UI_MIME);
        assert.match(read.contents[0].text, /^<!doctype html>/i);
        assert.match(read.contents[0].text, /connect-src 'none'/);
        assert.ok(!/<script[^>]+src=|<link[^>]+href=/i.test(read.contents[0].text), 'no outside script or style');
        await assert.rejects(plain.readResource({ uri: TABLE_URI }));
        const unknown = await callTool(plain, 'sandbox_view_table', { session_id: 'sess_000000000000', source: 'df' })
          .catch((error) => ({ thrown: error }));
        assert.ok(unknown.thrown || unknown.isError, 'a client without the extension has no view tool');
      } finally {
        await plain.close();
        await ui.close();
      }
    });
  }

  test('a run gives the same result JSON with and without the extension', { skip: runtimeStatus().ok ? false : runtimeStatus().reason }, async () => {
    const plain = await connectV1(server.url, false);
    const ui = await connectV1(server.url, true);
    try {
      const first = await callTool(plain, 'sandbox_run_python', { code: 'import pandas as pd\ndf = pd.DataFrame({"a": [1, 2]})\ndf' });
      assert.ok(!first.isError, text(first));
      const session = first.structuredContent.session_id;
      const code = { session_id: session, code: 'print(len(df))\ndf' };
      const withoutUi = await callTool(plain, 'sandbox_run_python', code);
      const withUi = await callTool(ui, 'sandbox_run_python', code);
      // Only the run's measured figures may differ.
      const strip = (result) => JSON.stringify(result)
        .replace(/"(duration_s|wall_seconds|cpu_seconds|memory_peak_bytes)":[0-9.e+-]+/g, '"$1":0')
        .replace(/ · [0-9.]+ s · /g, ' · 0 s · ');
      assert.equal(strip(withUi), strip(withoutUi));
      // A 2026-07-28 client with the extension calls the view tool; its result passes the SDK's
      // check against the tool's outputSchema.
      const modern = await connectV2(server.url, true);
      try {
        const page = await callTool(modern, 'sandbox_view_table', { session_id: session, source: 'df' });
        assert.ok(!page.isError, text(page));
        assert.deepEqual(page.structuredContent.rows, [[1], [2]]);
        assert.deepEqual(page.structuredContent.columns, [{ name: 'a', dtype: 'int64' }]);
      } finally {
        await modern.close();
      }
      await callTool(plain, 'sandbox_close_session', { session_id: session });
    } finally {
      await plain.close();
      await ui.close();
    }
  });
});

// --- The table view in headless Chromium ---------------------------------------------------

function browserSkip() {
  const runtime = runtimeStatus();
  if (!runtime.ok) return runtime.reason;
  if (!fs.existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM} (Debian package chromium)`;
  return false;
}

// The views on each backend: the namespace runtime (the default here) and the Docker fallback.
// Docker's half is skipped without a daemon holding the default image, unless tools/test
// requires it (SANDBOX_TEST_REQUIRE_DOCKER=1), where it runs and fails.
function dockerSkip() {
  const skip = browserSkip();
  if (skip) return skip;
  if (process.env.SANDBOX_TEST_REQUIRE_DOCKER === '1') return false;
  try {
    execFileSync('docker', ['image', 'inspect', 'mcp-sandbox/python:latest'], { stdio: 'ignore', timeout: 30000 });
    return false;
  } catch {
    return 'no Docker daemon with mcp-sandbox/python:latest';
  }
}
const BACKENDS = [
  { label: 'default backend', env: {}, shots: SHOTS, skip: browserSkip() },
  { label: 'Docker backend', env: { SANDBOX_BACKEND: 'docker' }, shots: path.join(SHOTS, 'docker'), skip: dockerSkip() },
];

// The host page's script: host.js and the official bridge, bundled for the browser.
async function hostBundle() {
  const esbuild = await import('esbuild');
  const built = await esbuild.build({
    entryPoints: [path.join(import.meta.dirname, 'lib', 'apps_host', 'host.js')],
    bundle: true, format: 'iife', platform: 'browser', write: false, logLevel: 'silent',
  });
  return built.outputFiles[0].text;
}

const BUILD_FRAMES = `
import numpy as np, pandas as pd
n = np.arange(1_000_000)
big = pd.DataFrame({"n": n, "square": n * n, "label": pd.Series(n).map("row-{}".format)})
small = big.head(1000)
wide = pd.DataFrame({f"c{i}": ["x" * 400] * 200 for i in range(5)})
too_wide = pd.DataFrame({f"c{i}": ["y" * 490] * 200 for i in range(12)})
hostile = pd.DataFrame({
    "<script>parent.postMessage('column', '*')</script>": ["<img src=x onerror=\\"parent.postMessage('img', '*')\\">", "<b>bold</b>"],
    "plain": ["<script>parent.postMessage('cell', '*')</script>", "javascript:parent.postMessage('url', '*')"],
})
None
`;

const BUILD_FILES = `
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
open("/mnt/data/notes.txt", "w").write("first line\\n<script>parent.postMessage('preview', '*')</script>\\n")
figure = plt.figure(figsize=(2, 2)); plt.plot([0, 1], [1, 0]); figure.savefig("/mnt/data/line.png"); plt.close(figure)
open("/mnt/data/<img src=x onerror=parent.postMessage('name','*')>.txt", "w").write("x")
import numpy as np
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(np.arange(10_000), np.sin(np.arange(10_000) / 500), label="sine")
ax.set_title("<script>parent.postMessage('title', '*')</script>")
plt.close(fig)
import plotly.graph_objects as go
pfig = go.Figure([
    go.Scatter(x=[0, 1, 2, 3], y=[10, 30, 20, 40], mode="lines+markers", name="sales", text=["a", "b", "c", "d"]),
    go.Bar(x=[0, 1, 2, 3], y=[5, 6, 7, 8], name="costs"),
])
pfig.update_layout(title="Sales and costs", xaxis_title="quarter", yaxis_title="k$")
hfig = go.Figure(go.Histogram(x=[1, 1, 2, 2, 2, 3], name="h", xbins=dict(start=0.5, end=3.5, size=1)))
dense = go.Figure(go.Scattergl(x=np.arange(10_000), y=np.sin(np.arange(10_000) / 500), mode="lines", name="sine"))
mixed = go.Figure([go.Pie(labels=["a", "b"], values=[1, 2]), go.Scatter(x=[1, 2], y=[3, 4], name="kept")])
hfig_hostile = go.Figure(go.Scatter(
    x=[1, 2], y=[1, 2], mode="markers+text",
    name="<img src=x onerror=\\"parent.postMessage('pname', '*')\\">",
    text=["<a href=\\"javascript:parent.postMessage('plink', '*')\\">click</a>", "<script>parent.postMessage('ptext', '*')</script>"],
    hovertemplate="<a href='javascript:parent.postMessage(1, \\"*\\")'>at %{x}</a><img src=x onerror=\\"parent.postMessage('phover', '*')\\"><extra></extra>",
))
hfig_hostile.update_layout(title="<a href=\\"javascript:parent.postMessage('ptitle', '*')\\">title</a>", showlegend=True,
                           xaxis_title="<img src=x onerror=\\"parent.postMessage('paxis', '*')\\">x")
None
`;

for (const backend of BACKENDS) describe(`MCP Apps: the table view in headless Chromium (${backend.label})`, { skip: backend.skip }, () => {
  const shots = backend.shots;
  let server;
  let client;
  let session;
  let browser;
  let page;
  let html;
  let bundle;
  const dialogs = [];
  const canary = { hits: 0 };
  let canaryServer;
  let canaryUrl;

  before(async () => {
    server = await spawnHttpServer(backend.env);
    client = await connectV1(server.url, true);
    const built = await callTool(client, 'sandbox_run_python', { code: BUILD_FRAMES, timeout_s: 120 });
    assert.ok(!built.isError, text(built));
    session = built.structuredContent.session_id;
    html = (await client.readResource({ uri: TABLE_URI })).contents[0].text;
    bundle = await hostBundle();
    // A server the view must not reach: its hits are counted.
    canaryServer = http.createServer((request, response) => { canary.hits += 1; response.end('reached'); });
    await new Promise((resolve) => canaryServer.listen(0, '127.0.0.1', resolve));
    canaryUrl = `http://127.0.0.1:${canaryServer.address().port}/`;
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    page.on('dialog', async (dialog) => { dialogs.push(dialog.message()); await dialog.dismiss(); });
    await page.exposeFunction('hostCallTool', (params) => client.callTool(params, undefined, { timeout: 120000 }));
    await page.setContent('<!doctype html><html><head><title>host</title></head><body></body></html>');
    await page.addScriptTag({ content: bundle });
    fs.mkdirSync(shots, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    canaryServer?.close();
    if (session) await callTool(client, 'sandbox_close_session', { session_id: session }).catch(() => {});
    await client?.close();
    await server?.stop();
  });

  // Opens the view as a host would: the host calls the tool, then hands the view its input and
  // result. Returns the view's frame once it shows the table.
  async function open(args, tool = 'sandbox_view_table', view = html) {
    const result = await callTool(client, tool, args);
    assert.ok(!result.isError, text(result));
    const started = Date.now();
    await page.evaluate(([document, input, output]) => window.openView(document, input, output), [view, args, result]);
    const frame = page.frameLocator('#view');
    await frame.locator('body[data-state="ready"]').waitFor({ timeout: 30000 });
    return { frame, result, renderMs: Date.now() - started };
  }

  async function settled(frame) {
    await frame.locator('body[data-state="ready"]').waitFor({ timeout: 60000 });
  }

  async function column(frame, index) {
    return frame.locator(`tbody tr td:nth-child(${index + 1})`).allTextContents();
  }

  test('shows, sorts, filters and pages a 1,000,000-row frame', async () => {
    const { frame, result, renderMs } = await open({ session_id: session, source: 'big' });
    console.log(`# table view rendered ${renderMs} ms after the tool result`);
    assert.match(text(result), /Table big: 1000000 rows x 3 columns/);
    assert.equal(await frame.locator('tbody tr').count(), 50);
    assert.deepEqual((await column(frame, 0)).slice(0, 3), ['0', '1', '2']);
    assert.equal(await frame.locator('#range').textContent(), '1–50 of 1,000,000 rows');
    await page.screenshot({ path: path.join(shots, 'table.png') });

    // Sort: descending by n takes two clicks (ascending, then descending).
    await frame.locator('th[data-column="n"]').click();
    await settled(frame);
    await frame.locator('th[data-column="n"]').click();
    await frame.locator('th[data-column="n"][aria-sort="descending"]').waitFor();
    await settled(frame);
    assert.deepEqual((await column(frame, 1)).slice(0, 2), ['999999', '999998']);
    await page.screenshot({ path: path.join(shots, 'table-sorted.png') });

    // Filter: "row-12345" is in row-12345 and row-123450 ... row-123459.
    await frame.locator('#filter').fill('ROW-12345');
    await frame.locator('#range', { hasText: 'of 11 rows (filtered from 1,000,000)' }).waitFor({ timeout: 60000 });
    await settled(frame);
    const labels = await column(frame, 3);
    assert.equal(labels.length, 11);
    assert.equal(labels[0], 'row-123459');  // still sorted descending
    await page.screenshot({ path: path.join(shots, 'table-filtered.png') });

    // Paging, unfiltered: next, then last.
    await frame.locator('#filter').fill('');
    await frame.locator('#range', { hasText: '1–50 of 1,000,000 rows' }).waitFor({ timeout: 60000 });
    await frame.locator('th[data-column="n"]').click();  // third click: back to the frame's order
    await frame.locator('th[data-column="n"][aria-sort="none"]').waitFor();
    await settled(frame);
    await frame.locator('#next').click();
    await frame.locator('#range', { hasText: '51–100 of' }).waitFor();
    assert.equal((await column(frame, 0))[0], '50');
    await frame.locator('#last').click();
    await frame.locator('#range', { hasText: '999,951–1,000,000 of' }).waitFor();
    const last = await column(frame, 0);
    assert.equal(last[last.length - 1], '999999');
  });

  test('time from the tool result to the rendered view (benchmark figure)', async () => {
    const times = [];
    for (let i = 0; i < 5; i++) {
      const { frame, renderMs } = await open({ session_id: session, source: 'small', limit: 200 });
      assert.equal(await frame.locator('tbody tr').count(), 200);
      times.push(renderMs);
    }
    times.sort((a, b) => a - b);
    console.log(`# table view of a 1,000-row frame (200 rows shown): rendered ${times[2]} ms (median of 5) after the tool result`);
  });

  test("the view's CSP refuses a network fetch", async () => {
    const { frame } = await open({ session_id: session, source: 'big', limit: 5 });
    const viewFrame = page.frames().find((candidate) => candidate.parentFrame() === page.mainFrame());
    assert.ok(viewFrame, 'the view frame');
    const outcome = await viewFrame.evaluate(async (url) => {
      const violations = [];
      document.addEventListener('securitypolicyviolation', (event) => violations.push(event.violatedDirective));
      try {
        await fetch(url);
        return { fetched: true, violations };
      } catch (error) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        return { fetched: false, error: String(error), violations };
      }
    }, canaryUrl);
    assert.equal(outcome.fetched, false, JSON.stringify(outcome));
    assert.ok(outcome.violations.some((directive) => directive.startsWith('connect-src')), JSON.stringify(outcome));
    assert.equal(canary.hits, 0);
    assert.equal(await frame.locator('tbody tr').count(), 5);
  });

  test('a page larger than a run\'s stdout comes whole; one larger than a result is refused', async () => {
    // 200 rows of 5 cells of 400 characters: 400 KB, over SANDBOX_MAX_OUTPUT_BYTES (100 KB).
    const { frame, result } = await open({ session_id: session, source: 'wide', limit: 200 });
    assert.equal(result.structuredContent.rows.length, 200);
    assert.equal(result.structuredContent.rows[199][4], 'x'.repeat(400));
    assert.equal(await frame.locator('tbody tr').count(), 200);
    // 200 rows of 12 cells of 490 characters: 1.2 MB, over SANDBOX_MAX_RESULT_BYTES (1 MiB).
    const refused = await callTool(client, 'sandbox_view_table', { session_id: session, source: 'too_wide', limit: 200 });
    assert.equal(refused.structuredContent?.error, 'artifact_too_large', text(refused));
    assert.match(text(refused), /ask for fewer rows/);
    const fewer = await callTool(client, 'sandbox_view_table', { session_id: session, source: 'too_wide', limit: 20 });
    assert.equal(fewer.structuredContent.rows.length, 20);
  });

  test('hostile cells and column names execute nothing', async () => {
    const { frame } = await open({ session_id: session, source: 'hostile' });
    await page.screenshot({ path: path.join(shots, 'table-hostile.png') });
    const headers = await frame.locator('thead th').allTextContents();
    assert.equal(headers[1], "<script>parent.postMessage('column', '*')</script>");
    assert.equal((await column(frame, 1))[0], `<img src=x onerror="parent.postMessage('img', '*')">`);
    assert.equal((await column(frame, 2))[0], "<script>parent.postMessage('cell', '*')</script>");
    assert.equal(await frame.locator('table img, table script, table b').count(), 0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const strays = (await page.evaluate(() => window.hostEvents)).filter((event) => event.startsWith('stray'));
    assert.deepEqual(strays, []);
    assert.deepEqual(dialogs, []);
  });
});

for (const backend of BACKENDS) describe(`MCP Apps: the files and chart views in headless Chromium (${backend.label})`, { skip: backend.skip }, () => {
  const shots = backend.shots;
  let server;
  let client;
  let session;
  let browser;
  let page;
  const dialogs = [];

  before(async () => {
    server = await spawnHttpServer(backend.env);
    client = await connectV1(server.url, true);
    const built = await callTool(client, 'sandbox_run_python', { code: BUILD_FILES, timeout_s: 120 });
    assert.ok(!built.isError, text(built));
    session = built.structuredContent.session_id;
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    page.on('dialog', async (dialog) => { dialogs.push(dialog.message()); await dialog.dismiss(); });
    await page.exposeFunction('hostCallTool', (params) => client.callTool(params, undefined, { timeout: 120000 }));
    await page.setContent('<!doctype html><html><head><title>host</title></head><body></body></html>');
    await page.addScriptTag({ content: await hostBundle() });
    fs.mkdirSync(shots, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    if (session) await callTool(client, 'sandbox_close_session', { session_id: session }).catch(() => {});
    await client?.close();
    await server?.stop();
  });

  test('lists /mnt/data, previews text and an image, downloads through the link, runs no markup', async () => {
    const filesHtml = (await client.readResource({ uri: FILES_URI })).contents[0].text;
    const args = { session_id: session };
    const result = await callTool(client, 'sandbox_view_files', args);
    assert.ok(!result.isError, text(result));
    await page.evaluate(([view, input, output]) => window.openView(view, input, output), [filesHtml, args, result]);
    const frame = page.frameLocator('#view');
    await frame.locator('body[data-state="ready"]').waitFor({ timeout: 30000 });
    const names = await frame.locator('tbody td.name').allTextContents();
    const hostileName = "<img src=x onerror=parent.postMessage('name','*')>.txt";
    assert.ok(names.includes('notes.txt') && names.includes('line.png') && names.includes(hostileName), names.join());
    assert.equal(await frame.locator('tbody img').count(), 0);

    await frame.locator('tbody tr[data-path="/mnt/data/notes.txt"]').click();
    await frame.locator('#preview[data-state="ready"] pre').waitFor();
    assert.equal(await frame.locator('#preview pre').textContent(),
      "first line\n<script>parent.postMessage('preview', '*')</script>\n");
    assert.equal(await frame.locator('#preview script').count(), 0);

    await frame.locator('tbody tr[data-path="/mnt/data/line.png"]').click();
    await frame.locator('#preview[data-state="ready"] img').waitFor();
    const width = await frame.locator('#preview img').evaluate((image) => image.complete && image.naturalWidth);
    assert.ok(width > 0, 'the PNG preview decoded');
    await page.screenshot({ path: path.join(shots, 'files.png') });

    await frame.locator('tbody tr[data-path="/mnt/data/notes.txt"] button.download').click();
    const opened = await page.waitForFunction(
      () => window.hostEvents.find((event) => event.startsWith('open-link ')), undefined, { timeout: 10000 });
    const url = (await opened.jsonValue()).slice('open-link '.length);
    const body = await (await fetch(url)).text();
    assert.equal(body, "first line\n<script>parent.postMessage('preview', '*')</script>\n");

    await new Promise((resolve) => setTimeout(resolve, 300));
    const strays = (await page.evaluate(() => window.hostEvents)).filter((event) => event.startsWith('stray'));
    assert.deepEqual(strays, []);
    assert.deepEqual(dialogs, []);
  });

  test('uploads through the view: the file appears in the list and reads back; one above the limit is refused unread', async () => {
    const filesHtml = (await client.readResource({ uri: FILES_URI })).contents[0].text;
    const args = { session_id: session };
    const result = await callTool(client, 'sandbox_view_files', args);
    assert.ok(!result.isError, text(result));
    const limit = result.structuredContent.max_upload_bytes;
    assert.equal(limit, 50 * 1024 * 1024, 'the shipped upload limit');
    await page.evaluate(([view, input, output]) => window.openView(view, input, output), [filesHtml, args, result]);
    const frame = page.frameLocator('#view');
    await frame.locator('body[data-state="ready"]').waitFor({ timeout: 30000 });

    const content = 'city,visits\nOslo,3\n<b>Lyon</b>,5\n';
    await frame.locator('#upload').setInputFiles({ name: 'visits.csv', mimeType: 'text/csv', buffer: Buffer.from(content) });
    await frame.locator('#upload-state[data-state="done"]').waitFor({ timeout: 30000 });
    assert.equal(await frame.locator('#upload-state').textContent(), 'Uploaded visits.csv. ');
    const row = frame.locator('tbody tr[data-path="/mnt/data/visits.csv"]');
    await row.waitFor();
    await row.click();
    await frame.locator('#preview[data-state="ready"] pre').waitFor();
    assert.equal(await frame.locator('#preview pre').textContent(), content);
    const read = await callTool(client, 'sandbox_run_python', { session_id: session, code: 'print(open("/mnt/data/visits.csv").read(), end="")' });
    assert.equal(read.structuredContent.stdout, content);
    await page.screenshot({ path: path.join(shots, 'files-uploaded.png') });

    // One byte over the limit: refused in the view before it is read (a sparse file here).
    const big = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-apps-upload-')), 'big.bin');
    fs.writeFileSync(big, '');
    fs.truncateSync(big, limit + 1);
    try {
      await frame.locator('#upload').setInputFiles(big);
      await frame.locator('#upload-state[data-state="failed"]').waitFor({ timeout: 30000 });
      assert.match(await frame.locator('#upload-state').textContent(), /big\.bin is 50 MB, more than the 50 MB an upload may be/);
      assert.equal(await frame.locator('tbody tr[data-path="/mnt/data/big.bin"]').count(), 0);
    } finally {
      fs.rmSync(path.dirname(big), { recursive: true, force: true });
    }
  });

  test('shows a matplotlib figure of 10,000 points as a zoomable SVG', async () => {
    const chartHtml = (await client.readResource({ uri: CHART_URI })).contents[0].text;
    const args = { session_id: session, source: 'fig' };
    const result = await callTool(client, 'sandbox_view_chart', args);
    assert.ok(!result.isError, text(result));
    assert.match(result.structuredContent.svg, /<svg[\s\S]*<path/);
    const started = Date.now();
    await page.evaluate(([view, input, output]) => window.openView(view, input, output), [chartHtml, args, result]);
    const frame = page.frameLocator('#view');
    await frame.locator('body[data-state="ready"]').waitFor({ timeout: 30000 });
    console.log(`# chart view of 10,000 points rendered ${Date.now() - started} ms after the tool result`);
    const width = await frame.locator('#chart').evaluate((image) => image.naturalWidth);
    assert.ok(width > 100, `the SVG drew (${width} px wide)`);
    const fitted = await frame.locator('#zoom').textContent();
    await frame.locator('#zoom-in').click();
    const zoomed = await frame.locator('#zoom').textContent();
    assert.ok(parseInt(zoomed, 10) > parseInt(fitted, 10), `${fitted} -> ${zoomed}`);
    await frame.locator('#reset').click();
    await page.screenshot({ path: path.join(shots, 'chart.png') });
    const notFigure = await callTool(client, 'sandbox_view_chart', { session_id: session, source: 'np' });
    assert.equal(notFigure.structuredContent?.error, 'invalid_argument');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const strays = (await page.evaluate(() => window.hostEvents)).filter((event) => event.startsWith('stray'));
    assert.deepEqual(strays, []);
    assert.deepEqual(dialogs, []);
  });
  // Opens the chart view on `result` (a sandbox_view_chart result, or one the test made up).
  async function openChart(args, result) {
    const chartHtml = (await client.readResource({ uri: CHART_URI })).contents[0].text;
    const started = Date.now();
    await page.evaluate(([view, input, output]) => window.openView(view, input, output), [chartHtml, args, result]);
    const frame = page.frameLocator('#view');
    await frame.locator('body[data-state="ready"]').waitFor({ timeout: 30000 });
    return { frame, renderMs: Date.now() - started };
  }
  async function chartOf(source) {
    const args = { session_id: session, source };
    const result = await callTool(client, 'sandbox_view_chart', args);
    assert.ok(!result.isError, text(result));
    return { args, result };
  }
  // Where the point (x, y) of the Plotly chart is on the page, from the axis ranges and the plot
  // area the view's SVG carries.
  async function pointOnPage(frame, x, y) {
    const stage = await frame.locator('#stage').boundingBox();
    const svg = frame.locator('#plot');
    const [xr, yr, area] = await Promise.all(['data-x-range', 'data-y-range', 'data-plot']
      .map(async (name) => (await svg.getAttribute(name)).split(',').map(Number)));
    const [left, top, width, height] = area;
    return {
      x: stage.x + 1 + left + ((x - xr[0]) / (xr[1] - xr[0])) * width,
      y: stage.y + 1 + top + height - ((y - yr[0]) / (yr[1] - yr[0])) * height,
    };
  }
  async function xRange(frame) {
    return (await frame.locator('#plot').getAttribute('data-x-range')).split(',').map(Number);
  }
  async function noStrays() {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const strays = (await page.evaluate(() => window.hostEvents)).filter((event) => event.startsWith('stray'));
    assert.deepEqual(strays, []);
    assert.deepEqual(dialogs, []);
  }

  test('draws a Plotly figure: a trace group each, hover with the values, zoom and reset', async () => {
    const { args, result } = await chartOf('pfig');
    assert.equal(result.structuredContent.kind, 'plotly');
    assert.equal(result.structuredContent.figure.layout.template, undefined, 'the template stays in the session');
    assert.match(text(result), /Chart pfig: a Plotly figure with 2 traces \(1 bar, 1 scatter\)/);
    const { frame } = await openChart(args, result);
    const traces = frame.locator('#plot g.trace');
    assert.equal(await traces.count(), 2);
    assert.deepEqual(await traces.evaluateAll((groups) => groups.map((g) => [g.dataset.type, g.dataset.name])),
      [['scatter', 'sales'], ['bar', 'costs']]);
    assert.equal(await frame.locator('#plot g.trace[data-type="scatter"] path.line').count(), 1);
    assert.equal(await frame.locator('#plot g.trace[data-type="bar"] rect.bar').count(), 4);
    assert.equal(await frame.locator('#plot .chart-title').textContent(), 'Sales and costs');
    assert.equal(await frame.locator('#plot .axis-title.x').textContent(), 'quarter');
    assert.deepEqual(await frame.locator('#plot .legend-item text').allTextContents(), ['sales', 'costs']);
    assert.equal(await frame.locator('#notice').textContent(), '');

    // Hover: the scatter point (2, 20), then inside the bar at x = 1 (height 6).
    let at = await pointOnPage(frame, 2, 20);
    await page.mouse.move(at.x + 3, at.y - 2);
    await frame.locator('#hover:not([hidden])').waitFor();
    assert.equal(await frame.locator('#hover').textContent(), 'sales\n(2, 20)\nc');
    at = await pointOnPage(frame, 1, 3);
    await page.mouse.move(at.x, at.y);
    await frame.locator('#hover[data-trace="1"]').waitFor();
    assert.equal(await frame.locator('#hover').textContent(), 'costs\n(1, 6)');
    await page.screenshot({ path: path.join(shots, 'chart-plotly.png') });

    // The wheel zooms in about the pointer; a dragged box zooms to it; Reset goes back.
    const initial = await xRange(frame);
    await page.mouse.wheel(0, -300);
    await page.waitForFunction(() => true);
    let zoomed = await xRange(frame);
    assert.ok(zoomed[1] - zoomed[0] < (initial[1] - initial[0]) * 0.6, `${initial} -> ${zoomed}`);
    await frame.locator('#reset').click();
    assert.deepEqual(await xRange(frame), initial);
    const from = await pointOnPage(frame, 0.5, 35);
    const to = await pointOnPage(frame, 2.5, 15);
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(to.x, to.y, { steps: 5 });
    await page.mouse.up();
    zoomed = await xRange(frame);
    assert.ok(Math.abs(zoomed[0] - 0.5) < 0.05 && Math.abs(zoomed[1] - 2.5) < 0.05, `box zoom to ${zoomed}`);
    assert.ok(Number(await frame.locator('#plot').getAttribute('data-y-range').then((r) => r.split(',')[0])) > 10);
    await page.screenshot({ path: path.join(shots, 'chart-plotly-zoomed.png') });
    await frame.locator('#plot').dblclick({ position: { x: 5, y: 5 } });
    assert.deepEqual(await xRange(frame), initial);

    // A click on a legend entry hides its trace.
    await frame.locator('#plot .legend-item', { hasText: 'costs' }).click();
    assert.equal(await frame.locator('#plot g.trace[data-type="bar"]').getAttribute('display'), 'none');
    await noStrays();
  });

  test('draws a Plotly histogram and a 10,000-point Plotly line (benchmark figure)', async () => {
    let { args, result } = await chartOf('hfig');
    let { frame } = await openChart(args, result);
    const heights = await frame.locator('#plot g.trace[data-type="histogram"] rect.bar')
      .evaluateAll((bars) => bars.map((bar) => Number(bar.getAttribute('height'))));
    assert.equal(heights.length, 3);
    assert.ok(heights[1] > heights[0] && heights[0] > heights[2], `counts 2, 3, 1 drawn as ${heights}`);
    const at = await pointOnPage(frame, 2, 1);
    await page.mouse.move(at.x, at.y);
    await frame.locator('#hover:not([hidden])').waitFor();
    assert.equal(await frame.locator('#hover').textContent(), 'h\n(1.5 – 2.5, 3)');

    ({ args, result } = await chartOf('dense'));
    assert.match(text(result), /1 scattergl/);
    const times = [];
    for (let i = 0; i < 3; i++) {
      const opened = await openChart(args, result);
      frame = opened.frame;
      times.push(opened.renderMs);
    }
    times.sort((a, b) => a - b);
    const d = await frame.locator('#plot g.trace path.line').getAttribute('d');
    assert.equal((d.match(/[ML]/g) || []).length, 10000);
    console.log(`# chart view of a 10,000-point Plotly line rendered ${times[1]} ms (median of 3) after the tool result`);
    await page.screenshot({ path: path.join(shots, 'chart-plotly-dense.png') });
  });

  test('names the Plotly trace types it does not draw, and survives a malformed figure', async () => {
    const { args, result } = await chartOf('mixed');
    assert.match(text(result), /The view does not draw 1 pie/);
    let { frame } = await openChart(args, result);
    assert.match(await frame.locator('#notice').textContent(), /Not drawn .*trace 0: type pie/);
    assert.deepEqual(await frame.locator('#plot g.trace').evaluateAll((g) => g.map((x) => x.dataset.name)), ['kept']);

    // Whatever a figure holds, the view draws what it can and says what it cannot.
    const junk = {
      content: [{ type: 'text', text: 'junk' }],
      structuredContent: {
        kind: 'plotly', session_id: session, source: 'junk',
        figure: {
          data: [{ type: 'scatter', x: { length: 1e12 }, y: 'text' }, 42, null,
            { type: 'bar', x: [1, 'b', null], y: [{}, [], 3] }, { type: { evil: 1 } },
            { type: 'histogram', x: [1e308, -1e308, NaN], xbins: { size: -1 } },
            { type: 'scatter', x: ['2024-01-01', 'x'], y: [1, 2], marker: { color: 'url(#x)' } }],
          layout: { xaxis: 'x', yaxis: { range: ['a', {}] }, title: { text: 5 }, colorway: 7 },
        },
      },
    };
    ({ frame } = await openChart({ session_id: session, source: 'junk' }, junk));
    assert.match(await frame.locator('#notice').textContent(), /trace 1 is not an object.*trace 2 is not an object.*trace 4: type \?/s);
    assert.equal(await frame.locator('#error').textContent(), '');
    await frame.locator('#reset').click();
    await page.mouse.wheel(0, -300);
    await noStrays();
  });

  test('a hostile Plotly figure (javascript: links, markup in names and text) executes nothing', async () => {
    const { args, result } = await chartOf('hfig_hostile');
    const { frame } = await openChart(args, result);
    assert.equal(await frame.locator('#plot .chart-title').textContent(), 'title');
    assert.equal(await frame.locator('#plot .axis-title.x').textContent(), 'x');
    assert.equal(await frame.locator('#stage a, #stage img:not(#chart), #stage script, #stage foreignObject').count(), 0);
    await frame.locator('#plot .chart-title').click();
    const at = await pointOnPage(frame, 1, 1);
    await page.mouse.move(at.x, at.y);
    await frame.locator('#hover:not([hidden])').waitFor();
    assert.equal(await frame.locator('#hover').textContent(), 'at 1');
    assert.equal(await frame.locator('#hover *').count(), 0);
    await page.screenshot({ path: path.join(shots, 'chart-plotly-hostile.png') });
    await noStrays();
  });
});

// A view outlives its session's sandbox: the session hibernates between two pages (idle for
// SANDBOX_HIBERNATE_AFTER_S), and the next page the view asks for resumes it and comes.
for (const backend of BACKENDS) describe(`MCP Apps: a table view across hibernation (${backend.label})`, { skip: backend.skip }, () => {
  let server;
  let client;
  let session;
  let browser;
  let page;

  before(async () => {
    server = await spawnHttpServer({ ...backend.env, SANDBOX_HIBERNATE_AFTER_S: '2', SANDBOX_POOL_SIZE: '0' });
    client = await connectV1(server.url, true);
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    await page.exposeFunction('hostCallTool', (params) => client.callTool(params, undefined, { timeout: 120000 }));
    await page.setContent('<!doctype html><html><head><title>host</title></head><body></body></html>');
    await page.addScriptTag({ content: await hostBundle() });
  });
  after(async () => {
    await browser?.close();
    if (session) await callTool(client, 'sandbox_close_session', { session_id: session }).catch(() => {});
    await client?.close();
    await server?.stop();
  });

  test('keeps paging after the session hibernated and resumed', async (t) => {
    const built = await callTool(client, 'sandbox_run_python', {
      code: 'import importlib.util, pandas as pd\nframe = pd.DataFrame({"n": range(10_000)})\n'
        + 'print(importlib.util.find_spec("dill") is not None)',
    });
    assert.ok(!built.isError, text(built));
    session = built.structuredContent.session_id;
    if (built.structuredContent.stdout.trim() !== 'True') {
      t.skip('the image has no dill (rebuild it: mcp-sandbox image build)');
      return;
    }
    const args = { session_id: session, source: 'frame', sort_by: 'n', descending: true };
    const result = await callTool(client, 'sandbox_view_table', args);
    assert.ok(!result.isError, text(result));
    const html = (await client.readResource({ uri: TABLE_URI })).contents[0].text;
    await page.evaluate(([view, input, output]) => window.openView(view, input, output), [html, args, result]);
    const frame = page.frameLocator('#view');
    await frame.locator('body[data-state="ready"]').waitFor({ timeout: 30000 });
    await frame.locator('#next').click();
    await frame.locator('#range', { hasText: '51–100 of 10,000 rows' }).waitFor({ timeout: 30000 });

    const status = async () => (await callTool(client, 'sandbox_session_status', { session_id: session })).structuredContent;
    const deadline = Date.now() + 60000;
    while ((await status()).state !== 'hibernated') {
      assert.ok(Date.now() < deadline, 'the idle session hibernates');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await frame.locator('#next').click();
    await frame.locator('#range', { hasText: '101–150 of 10,000 rows' }).waitFor({ timeout: 60000 });
    await frame.locator('body[data-state="ready"]').waitFor();
    // Still sorted descending: the order came back with the frame.
    assert.equal((await frame.locator('tbody tr td:nth-child(2)').allTextContents())[0], '9899');
    assert.notEqual((await status()).state, 'hibernated');
  });
});
