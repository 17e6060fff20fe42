// `mcp-sandbox serve` over stdio driven with raw JSON-RPC lines, for the benchmarks: the time of
// a request line out to its response line in is the server's, not a client library's (the SDK
// client's own CPU per call is several times the server's). The SDK client for the e2e tests is
// harness.mjs's startStdio.
import { spawn } from 'node:child_process';
import readline from 'node:readline';

import { BIN } from './harness.mjs';

export class RawStdioClient {
  // `env` is added to this process's environment; the server logs warnings only unless told.
  constructor(env = {}) {
    this.proc = spawn(BIN, ['serve'], {
      env: { ...process.env, SANDBOX_LOG_LEVEL: 'warn', ...env },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.pending = new Map();
    this.nextId = 1;
    this.exited = new Promise((resolve) => this.proc.on('exit', resolve));
    readline.createInterface({ input: this.proc.stdout }).on('line', (line) => {
      const message = JSON.parse(line);
      if (message.id === undefined || message.id === null) return;  // a notification
      const resolve = this.pending.get(message.id);
      this.pending.delete(message.id);
      resolve?.(message);
    });
  }

  // The whole response message (result or error) of one request.
  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  notify(method, params) {
    this.proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, params })}\n`);
  }

  // initialize (2025-11-25) and notifications/initialized.
  async initialize(clientName = 'bench') {
    const answer = await this.request('initialize', {
      protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: clientName, version: '1' },
    });
    if (answer.error) throw new Error(`initialize failed: ${JSON.stringify(answer.error)}`);
    this.notify('notifications/initialized', {});
    return answer.result;
  }

  // A tool's structuredContent; throws on a JSON-RPC error and on a tool error.
  async tool(name, args) {
    const response = await this.request('tools/call', { name, arguments: args });
    if (response.error || response.result?.isError) throw new Error(JSON.stringify(response));
    return response.result.structuredContent;
  }

  async close() {
    this.proc.stdin.end();
    await this.exited;
  }
}
