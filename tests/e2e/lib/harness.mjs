// Starting mcp-sandbox over stdio or HTTP and connecting the official MCP TypeScript SDK
// client to it; checking whether the sandbox runtime (a backend and the image) is usable here.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = process.env.MCP_SANDBOX_BIN ?? path.join(ROOT, 'build', 'mcp-sandbox');

let runtimeCache;

// { ok, reason }: whether sessions can start here (doctor finds a backend, the image exists).
export function runtimeStatus() {
  if (runtimeCache) return runtimeCache;
  runtimeCache = probeRuntime();
  if (!runtimeCache.ok) console.log(`# runtime-dependent tests skipped: ${runtimeCache.reason}`);
  return runtimeCache;
}

function probeRuntime() {
  if (!fs.existsSync(BIN)) return { ok: false, reason: `${BIN} is not built` };
  let doctor;
  try {
    doctor = JSON.parse(execFileSync(BIN, ['doctor', '--json'], { encoding: 'utf8', timeout: 60000 }));
  } catch (error) {
    return { ok: false, reason: `mcp-sandbox doctor --json failed: ${error.message.split('\n')[0]}` };
  }
  if (!doctor.backend?.usable) {
    return { ok: false, reason: `no sandbox backend: ${doctor.backend?.reason ?? 'unknown'}` };
  }
  const image = process.env.SANDBOX_IMAGE ?? 'python';
  let images;
  try {
    images = JSON.parse(execFileSync(BIN, ['image', 'ls', '--json'], { encoding: 'utf8', timeout: 60000 }));
  } catch (error) {
    return { ok: false, reason: `mcp-sandbox image ls --json failed: ${error.message.split('\n')[0]}` };
  }
  const list = Array.isArray(images) ? images : images.images ?? [];
  const found = list.some((entry) => (entry.names ?? []).includes(image) || entry.digest === image);
  if (!found) {
    return { ok: false, reason: `image '${image}' missing (run: mcp-sandbox image build)` };
  }
  return { ok: true, reason: '', backend: doctor.backend.name };
}

function captureStderr(stream, sink) {
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk) => {
    sink.text += chunk;
    if (sink.text.length > 1 << 20) sink.text = sink.text.slice(-(1 << 19));
  });
}

// The SDK client connected over stdio to `mcp-sandbox serve`. `wrapper`: a command line that
// runs the server (it gets BIN and the serve arguments appended), e.g. to deny it namespaces.
export async function startStdio(env = {}, args = [], wrapper = []) {
  const stderr = { text: '' };
  const command = [...wrapper, BIN, 'serve', ...args];
  const transport = new StdioClientTransport({
    command: command[0],
    args: command.slice(1),
    env: { ...process.env, SANDBOX_LOG_LEVEL: 'info', ...env },
    stderr: 'pipe',
  });
  captureStderr(transport.stderr, stderr);
  const client = new Client({ name: 'mcp-sandbox-e2e', version: '1.0.0' });
  await client.connect(transport);
  return {
    kind: 'stdio',
    client,
    stderr,
    async close() {
      await client.close();
    },
  };
}

// `mcp-sandbox serve --http 127.0.0.1:0` as a child; resolves once it listens.
export async function spawnHttpServer(env = {}, args = []) {
  const proc = spawn(BIN, ['serve', '--http', '127.0.0.1:0', ...args], {
    env: { ...process.env, SANDBOX_LOG_LEVEL: 'info', SANDBOX_LOG_FILE: '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr = { text: '' };
  captureStderr(proc.stderr, stderr);
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not listen:\n${stderr.text}`)), 60000);
    const check = () => {
      const match = stderr.text.match(/listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/);
      if (match) {
        clearTimeout(timer);
        proc.stderr.off('data', check);
        resolve(Number(match[1]));
      }
    };
    proc.stderr.on('data', check);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${stderr.text}`));
    });
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    proc,
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    stderr,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}

export async function connectHttp(url, headers = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'mcp-sandbox-e2e', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

// The SDK client connected over Streamable HTTP to its own server process.
export async function startHttp(env = {}, args = []) {
  const server = await spawnHttpServer(env, args);
  const headers = env.SANDBOX_AUTH_TOKEN ? { Authorization: `Bearer ${env.SANDBOX_AUTH_TOKEN}` } : {};
  const { client, transport } = await connectHttp(server.url, headers);
  return {
    kind: 'http',
    client,
    transport,
    server,
    stderr: server.stderr,
    async close() {
      try {
        await transport.terminateSession();
      } catch {
        // the session may already be gone
      }
      await client.close();
      await server.stop();
    },
  };
}

export function tempDir(prefix = 'mcp-e2e-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// --- Result helpers -------------------------------------------------------------------------

export function text(result) {
  return result.content.filter((block) => block.type === 'text').map((block) => block.text).join('\n');
}

export async function call(client, name, args = {}, options = {}) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...options });
}

// Calls a tool that must succeed; returns its structuredContent and the whole result.
export async function callOk(client, name, args = {}, options = {}) {
  const result = await call(client, name, args, options);
  if (result.isError) {
    throw new Error(`${name} failed: ${text(result)}`);
  }
  return { structured: result.structuredContent, result };
}

// Calls a tool that must fail with `code`; returns the result.
export async function callError(client, name, args, code, options = {}) {
  const result = await call(client, name, args, options);
  if (!result.isError) throw new Error(`${name} should have failed with ${code}: ${text(result)}`);
  if (result.structuredContent?.error !== code) {
    throw new Error(`${name} failed with ${result.structuredContent?.error}, not ${code}: ${text(result)}`);
  }
  if (result.content[0]?.type !== 'text') throw new Error('the first block of an error is not text');
  return result;
}

// Calls `attempt` until its result is not session_busy (a cancelled run takes a moment to stop),
// at most 50 times, 200 ms apart; returns the last result.
export async function retryWhileBusy(attempt) {
  let result;
  for (let i = 0; i < 50; i++) {
    result = await attempt();
    if (!result.isError || result.structuredContent?.error !== 'session_busy') break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return result;
}

export function b64(text) {
  return Buffer.from(text).toString('base64');
}
