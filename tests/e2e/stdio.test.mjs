// The behaviour suite over stdio, plus what only stdio has: exit on EOF and on SIGTERM.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';

import { BIN, startStdio } from './lib/harness.mjs';
import { transportSuite } from './lib/scenarios.mjs';

transportSuite('stdio', startStdio);

function serveRaw(env = {}) {
  const proc = spawn(BIN, ['serve'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (chunk) => { stdout += chunk; });
  proc.stderr.resume();
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return { proc, exited, stdout: () => stdout };
}

describe('stdio: framing and shutdown', () => {
  test('byte level: ids keep their type, parse errors get -32700, stdout has protocol only', async () => {
    const { proc, exited, stdout } = serveRaw();
    proc.stdin.write('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}\n');
    proc.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    proc.stdin.write('{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"nope"}}\n');
    proc.stdin.write('{"jsonrpc":"2.0","id":3,"method":"bogus/method"}\n');
    proc.stdin.write('not json\n');
    proc.stdin.write('{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{}}}\n');
    const deadline = Date.now() + 10000;
    while (stdout().split('\n').filter(Boolean).length < 5 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    proc.stdin.end();
    const { code } = await exited;
    assert.equal(code, 0);
    const lines = stdout().split('\n').filter(Boolean).map((line) => JSON.parse(line));
    assert.equal(lines.length, 5, stdout());
    const byId = new Map(lines.map((line) => [JSON.stringify(line.id), line]));
    assert.equal(byId.get('1').result.protocolVersion, '2025-06-18');
    assert.equal(byId.get('"abc"').error.code, -32602);
    assert.equal(byId.get('3').error.code, -32601);
    assert.equal(byId.get('null').error.code, -32700);
    assert.equal(byId.get('4').result.protocolVersion, '2025-11-25');
  });

  test('SIGTERM ends the server with exit code 0', async () => {
    const { proc, exited, stdout } = serveRaw();
    proc.stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    // The answer shows the server is up (its handlers installed), however loaded the host is.
    const deadline = Date.now() + 30000;
    while (!stdout().includes('"id":1') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(stdout().includes('"id":1'), 'no answer to ping');
    proc.kill('SIGTERM');
    const { code } = await exited;
    assert.equal(code, 0);
  });

  test('a bad configuration value stops the start with exit code 2, naming the variable', async () => {
    const { exited, proc } = serveRaw({ SANDBOX_MEMORY_LIMIT: 'lots' });
    let stderr = '';
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => { stderr += chunk; });
    const { code } = await exited;
    assert.equal(code, 2);
    assert.match(stderr, /SANDBOX_MEMORY_LIMIT/);
  });
});
