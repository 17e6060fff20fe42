// The MCP Apps side of every view of mcp-sandbox, inlined into each view's document when the
// binary is built (mcp/apps/embed_views.cmake puts it in the view's empty script element whose
// data-include names this file): JSON-RPC 2.0 over postMessage with the host. It must not hold
// the text that ends a script element.
// It makes the handshake (ui/initialize, then ui/notifications/initialized), sends requests
// (tools/call, ui/open-link), answers the host's requests, hands the view the tool input, result
// and cancellation, reports the size the view needs, and follows the host's theme variables.
"use strict";

// Connects the view named `appName` to its host. `handlers`: toolInput(params),
// toolResult(params), cancelled(params), each optional. The view's document holds an element
// #error for the errors it shows, and its <body> a data-state the tests wait on.
function connectView(appName, handlers) {
  const host = window.parent;
  const pending = new Map();
  let nextId = 1;

  function send(message) { host.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*"); }
  function request(method, params) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      send({ id, method, params });
    });
  }
  function notify(method, params) { send({ method, params }); }
  function reportSize() {
    const root = document.documentElement;
    notify("ui/notifications/size-changed",
           { width: Math.ceil(root.scrollWidth), height: Math.ceil(root.scrollHeight) });
  }
  function fail(text) {
    document.getElementById("error").textContent = text;
    document.body.dataset.state = "error";
    reportSize();
  }
  // The host's theme and its CSS variables (names checked: only --custom-properties are set).
  function applyHostContext(context) {
    if (!context) return;
    if (context.theme === "dark" || context.theme === "light") {
      document.documentElement.style.colorScheme = context.theme;
    }
    const variables = context.styles && context.styles.variables;
    if (variables && typeof variables === "object") {
      for (const [name, value] of Object.entries(variables)) {
        if (/^--[a-z0-9-]+$/i.test(name) && typeof value === "string") {
          document.documentElement.style.setProperty(name, value);
        }
      }
    }
  }

  const notifications = {
    "ui/notifications/tool-input": (params) => handlers.toolInput && handlers.toolInput(params),
    "ui/notifications/tool-result": (params) => handlers.toolResult && handlers.toolResult(params),
    "ui/notifications/tool-cancelled": (params) => {
      if (handlers.cancelled) handlers.cancelled(params);
      else fail("The call was cancelled" + (params.reason ? ": " + params.reason : "."));
    },
    "ui/notifications/host-context-changed": applyHostContext,
  };

  window.addEventListener("message", (event) => {
    if (event.source !== host) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined) {
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      if (message.error) waiter.reject(new Error(message.error.message || "error"));
      else waiter.resolve(message.result);
    } else if (message.id !== undefined) {
      const known = message.method === "ui/resource-teardown" || message.method === "ping";
      send(known ? { id: message.id, result: {} }
                 : { id: message.id, error: { code: -32601, message: "Method not found" } });
    } else if (Object.prototype.hasOwnProperty.call(notifications, message.method)) {
      notifications[message.method](message.params || {});
    }
  });

  request("ui/initialize", {
    appInfo: { name: appName, version: "1.0.0" },
    appCapabilities: {},
    protocolVersion: "2026-01-26",
  }).then((result) => {
    applyHostContext(result && result.hostContext);
    notify("ui/notifications/initialized", {});
    reportSize();
  }, (error) => fail("The host refused the view: " + error.message));

  return {
    request,
    notify,
    reportSize,
    fail,
    callTool: (name, args) => request("tools/call", { name, arguments: args }),
  };
}

// The message of a failed tool result (or of none), for the view's error line.
function resultMessage(result, fallback) {
  const data = result && result.structuredContent;
  if (data && typeof data.message === "string") return data.message;
  const block = result && Array.isArray(result.content) &&
                result.content.find((item) => item && item.type === "text");
  return block ? String(block.text) : fallback;
}
