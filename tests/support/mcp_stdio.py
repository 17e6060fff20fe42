"""A minimal MCP client over stdio for the Python checks that drive the real binary
(tests/faults, tests/runtime/cgroup/systemd_scope_check.py): `mcp-sandbox serve` as a child,
initialize, then requests answered by id. Requests may overlap: `send_request` returns the id,
`wait_for` collects its answer (answers to other ids met on the way are kept for later)."""
import json
import subprocess
import threading


class Server:
    """`mcp-sandbox serve` over stdio (extra arguments after `serve`, environment `env`)."""

    def __init__(self, binary, env=None, args=(), client_name="mcp-sandbox-check",
                 answer_timeout=None):
        self.proc = subprocess.Popen([binary, "serve", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        self.next_id = 0
        self.answers = {}
        # Seconds an answer may take before the server is taken for hung: on_hung() reports
        # what it was doing, then it is killed, so the wait ends in an error, not at the
        # test's own time-out. None: wait as long as it takes.
        self.answer_timeout = answer_timeout
        answer = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client_name, "version": "1"}})
        if "result" not in answer:
            raise RuntimeError("initialize failed: %s" % answer)
        self.notify("notifications/initialized")

    def notify(self, method):
        self.send({"jsonrpc": "2.0", "method": method})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def send_request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def on_hung(self, request_id):
        """Called (on a timer thread) when request `request_id` went unanswered for
        answer_timeout seconds, before the server is killed. Subclasses report state here."""

    def wait_for(self, request_id):
        watchdog = None
        if self.answer_timeout is not None:
            def hung():
                try:
                    self.on_hung(request_id)
                finally:
                    self.proc.kill()
            watchdog = threading.Timer(self.answer_timeout, hung)
            watchdog.daemon = True
            watchdog.start()
        try:
            return self._wait_for(request_id)
        finally:
            if watchdog is not None:
                watchdog.cancel()

    def _wait_for(self, request_id):
        while request_id not in self.answers:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed stdout (exit %s)" % self.proc.poll())
            message = json.loads(line)
            if "id" in message and "method" not in message:
                self.answers[message["id"]] = message
        return self.answers.pop(request_id)

    def request(self, method, params):
        return self.wait_for(self.send_request(method, params))

    # `name` is positional-only: a tool's own arguments may include "name" (sandbox_create_session).
    def send_tool(self, name, /, **arguments):
        return self.send_request("tools/call", {"name": name, "arguments": arguments})

    def tool_result(self, request_id):
        """The tools/call result of `request_id` (its structuredContent and isError)."""
        answer = self.wait_for(request_id)
        if "result" not in answer:
            raise RuntimeError("tools/call %d: %s" % (request_id, answer))
        structured = dict(answer["result"].get("structuredContent", {}))
        structured["isError"] = answer["result"].get("isError", False)
        return structured

    def tool(self, name, /, **arguments):
        """A tool's structuredContent; raises on a JSON-RPC error (not on a tool error)."""
        answer = self.request("tools/call", {"name": name, "arguments": arguments})
        if "result" not in answer:
            raise RuntimeError("%s: %s" % (name, answer))
        return answer["result"].get("structuredContent", {})

    def close(self, timeout=60):
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)
