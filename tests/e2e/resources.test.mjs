// Session files as MCP resources, with the official SDK v1 client over stdio and Streamable
// HTTP: the template, reading text and binary files, resources/list, a subscription announced
// after a run changes the file, completion of the template's arguments, resource_link in run
// results, and JSON-RPC errors for what is not there. Skips, saying why, without a runtime.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { McpError, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { callOk, runtimeStatus, startHttp, startStdio } from './lib/harness.mjs';

const TEMPLATE = 'sandbox://sessions/{session_id}/files/{+path}';
const fileUri = (session, path) => `sandbox://sessions/${session}/files/${path}`;

for (const [kind, start] of [['stdio', startStdio], ['http', startHttp]]) {
  const runtime = runtimeStatus();
  const rtest = (name, fn) => test(name, { skip: runtime.ok ? false : runtime.reason }, fn);

  describe(`${kind}: session files as resources`, () => {
    const server = {};
    const updates = [];
    let session;
    before(async () => {
      if (!runtime.ok) return;
      Object.assign(server, await start({ SANDBOX_MAX_RESULT_BYTES: '64k' }));
      server.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
        updates.push(notification.params.uri);
      });
      const run = await callOk(server.client, 'sandbox_run_python', {
        code: [
          "open('/mnt/data/notes.txt', 'w').write('hello resources')",
          "open('/mnt/data/raw.bin', 'wb').write(bytes(range(256)))",
        ].join('\n'),
      });
      session = run.structured.session_id;
    });
    after(async () => {
      await server.close?.();
    });

    rtest('capabilities and the template', async () => {
      const capabilities = server.client.getServerCapabilities();
      assert.equal(capabilities.resources.subscribe, true);
      assert.ok(capabilities.completions);
      const { resourceTemplates } = await server.client.listResourceTemplates();
      assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), [TEMPLATE]);
    });

    rtest('read a text file and a binary one', async () => {
      const textRead = await server.client.readResource({ uri: fileUri(session, 'notes.txt') });
      assert.equal(textRead.contents[0].text, 'hello resources');
      assert.equal(textRead.contents[0].mimeType, 'text/plain');
      const binary = await server.client.readResource({ uri: fileUri(session, 'raw.bin') });
      assert.ok(binary.contents[0].mimeType);
      assert.deepEqual([...Buffer.from(binary.contents[0].blob, 'base64')], [...Array(256).keys()]);
    });

    rtest('resources/list names the files of the session', async () => {
      const { resources } = await server.client.listResources();
      const uris = resources.map((r) => r.uri);
      assert.ok(uris.includes(fileUri(session, 'notes.txt')), JSON.stringify(uris));
      assert.ok(uris.includes(fileUri(session, 'raw.bin')));
    });

    rtest('a run that changes a subscribed file sends notifications/resources/updated', async () => {
      const uri = fileUri(session, 'watched.txt');
      await server.client.subscribeResource({ uri });
      await callOk(server.client, 'sandbox_run_python', { session_id: session, code: 'x = 1' });
      assert.deepEqual(updates, []);
      await callOk(server.client, 'sandbox_run_python',
        { session_id: session, code: "open('/mnt/data/watched.txt', 'w').write('v1')" });
      // Sent ahead of the call's response, so it has arrived by now.
      assert.deepEqual(updates, [uri]);
      await server.client.unsubscribeResource({ uri });
      await callOk(server.client, 'sandbox_run_python',
        { session_id: session, code: "open('/mnt/data/watched.txt', 'a').write('v2')" });
      assert.deepEqual(updates, [uri]);
    });

    rtest('completion of session_id and path', async () => {
      const ref = { type: 'ref/resource', uri: TEMPLATE };
      const ids = await server.client.complete({ ref, argument: { name: 'session_id', value: 'sess_' } });
      assert.ok(ids.completion.values.includes(session));
      const paths = await server.client.complete({
        ref,
        argument: { name: 'path', value: 'no' },
        context: { arguments: { session_id: session } },
      });
      assert.deepEqual(paths.completion.values, ['notes.txt']);
    });

    rtest('a large artifact of a run is a resource_link that resources/read cannot inline but names', async () => {
      const run = await callOk(server.client, 'sandbox_run_python',
        { session_id: session, code: "open('/mnt/data/big.csv', 'w').write('a,b\\n' * 40000)" });
      const link = run.result.content.find((block) => block.type === 'resource_link');
      assert.ok(link, JSON.stringify(run.result.content));
      assert.equal(link.uri, fileUri(session, 'big.csv'));
      if (kind === 'http') assert.match(link.description, /\/files\/sess_/);
      await assert.rejects(server.client.readResource({ uri: link.uri }),
        (error) => error instanceof McpError && error.code === -32602 && /SANDBOX_MAX_RESULT_BYTES/.test(error.message));
    });

    rtest('missing files, unknown sessions and escaping paths are JSON-RPC errors', async () => {
      const code = async (uri) => {
        try {
          await server.client.readResource({ uri });
        } catch (error) {
          assert.ok(error instanceof McpError, String(error));
          return error.code;
        }
        return 'no error';
      };
      assert.equal(await code(fileUri(session, 'missing.txt')), -32002);
      assert.equal(await code(fileUri('sess_000000000000', 'notes.txt')), -32002);
      assert.equal(await code(fileUri(session, '../../etc/passwd')), -32602);
      assert.equal(await code('file:///etc/passwd'), -32602);
      // The server lives on.
      await callOk(server.client, 'sandbox_list_sessions', {});
    });
  });
}
