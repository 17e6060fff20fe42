// The minimal MCP Apps host of apps.test.mjs, bundled by esbuild into the test page: it frames a
// view (sandboxed, scripts only, opaque origin) and connects it through the official host-side
// bridge (AppBridge of @modelcontextprotocol/ext-apps). The view's tools/call requests go to
// window.hostCallTool, which the test exposes and forwards to the server over Streamable HTTP.
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

window.hostEvents = [];

window.openView = async (html, toolArguments, toolResult) => {
  document.body.replaceChildren();
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.id = 'view';
  iframe.style.cssText = 'width: 960px; height: 640px; border: 1px solid #ccc';
  const bridge = new AppBridge(
    null,
    { name: 'mcp-sandbox-e2e-host', version: '1.0.0' },
    { serverTools: {}, logging: {}, openLinks: {} },
    { hostContext: { theme: 'light', displayMode: 'inline', locale: 'en-US' } },
  );
  bridge.oncalltool = (params) => window.hostCallTool(params);
  bridge.onopenlink = async ({ url }) => {
    window.hostEvents.push(`open-link ${url}`);
    return {};
  };
  bridge.onsizechange = ({ height }) => {
    if (height) iframe.style.height = `${Math.min(height, 2000)}px`;
  };
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  document.body.appendChild(iframe);
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  await initialized;
  window.hostEvents.push('initialized');
  await bridge.sendToolInput({ arguments: toolArguments });
  await bridge.sendToolResult(toolResult);
  window.hostEvents.push('result-sent');
};

// Anything a hostile cell manages to post to the host is recorded here.
window.addEventListener('message', (event) => {
  if (event.data && event.data.jsonrpc === '2.0') return;
  window.hostEvents.push(`stray message: ${JSON.stringify(event.data)}`);
});
