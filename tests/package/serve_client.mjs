// The official MCP TypeScript SDK client (tests/e2e's pinned copy) driving `mcp-sandbox serve`
// from the installed package over stdio: the server runs inside the fresh Debian root, started
// by the command line given as arguments. A session runs Python, writes a file that comes back
// as an artifact, reads it back, and closes. Prints "ok ..." lines; exits 1 on the first failure.
// usage: node serve_client.mjs CMD ARG...
import { Client } from '../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StdioClientTransport } from '../e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
const client = new Client({ name: 'package-test', version: '1' });

function check(name, condition, detail) {
  if (!condition) {
    console.log(`FAIL ${name}: ${JSON.stringify(detail).slice(0, 800)}`);
    process.exit(1);
  }
  console.log(`ok   ${name}`);
}

await client.connect(transport);
const { tools } = await client.listTools();
check('serve lists the sandbox tools', tools.some((t) => t.name === 'sandbox_run_python'), tools.map((t) => t.name));

const created = await client.callTool({ name: 'sandbox_create_session', arguments: {} });
const session = created.structuredContent?.session_id;
check('a session starts in the installed package', !created.isError && session, created);

const run = await client.callTool({
  name: 'sandbox_run_python',
  arguments: { session_id: session, code: "open('/mnt/data/out.txt', 'w').write('from the package')\nprint(6 * 7)" },
});
check('Python runs and prints', run.structuredContent?.stdout?.trim() === '42', run);
check('the file it wrote comes back as an artifact',
  JSON.stringify(run.structuredContent).includes('/mnt/data/out.txt'), run.structuredContent);

const read = await client.callTool({ name: 'sandbox_read_file', arguments: { session_id: session, path: '/mnt/data/out.txt' } });
check('the file reads back', JSON.stringify(read).includes('from the package'), read);

const closed = await client.callTool({ name: 'sandbox_close_session', arguments: { session_id: session } });
check('the session closes', !closed.isError, closed);
await client.close();
