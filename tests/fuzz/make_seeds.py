#!/usr/bin/env python3
"""make_seeds.py: writes the seed corpora of the fuzz targets (corpus/<target>/), small valid
inputs of every kind each target reads, so the fuzzer starts past the first parse. Run it again
after changing a target's input format; the seeds are committed."""
import base64
import gzip
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def line(obj):
    return json.dumps(obj, separators=(",", ":"))


# --- jsonrpc_fuzz: stdio lines, starting with initialize --------------------------------------
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "seed", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SID = "sess_0123456789ab"
b64 = base64.b64encode(b"a,b\n1,2\n").decode()
CALLS = {
    "create": ("sandbox_create_session", {"name": "s", "memory_limit": "256m"}),
    "list_sessions": ("sandbox_list_sessions", {}),
    "status": ("sandbox_session_status", {"session_id": SID}),
    "close": ("sandbox_close_session", {"session_id": SID}),
    "run_python": ("sandbox_run_python", {"code": "print(1)", "session_id": SID, "timeout_s": 5}),
    "run_command": ("sandbox_run_command", {"command": "ls -l", "session_id": SID}),
    "run_once": ("sandbox_run_once", {"code": "print(2)", "language": "python",
                                      "files": [{"filename": "in.csv", "content": b64}]}),
    "upload": ("sandbox_upload_file", {"filename": "d.csv", "content": b64, "session_id": SID,
                                       "overwrite": True}),
    "write": ("sandbox_write_file", {"path": "../etc/x", "content": "t", "session_id": SID}),
    "read": ("sandbox_read_file", {"path": "/mnt/data/d.csv", "session_id": SID}),
    "read_artifact": ("sandbox_read_artifact", {"path": "chart.png", "session_id": SID}),
    "list_artifacts": ("sandbox_list_artifacts", {"path": "out", "recursive": False}),
    "install": ("sandbox_install_packages", {"packages": ["tabulate==0.9.0"], "session_id": SID}),
}
for name, (tool, args) in CALLS.items():
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}
    write("jsonrpc_fuzz", "call_" + name, "\n".join(map(line, [INIT, INITIALIZED, call])) + "\n")
others = [
    {"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {"cursor": "x"}},
    {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "resources/templates/list"},
    {"jsonrpc": "2.0", "id": 4, "method": "resources/read",
     "params": {"uri": f"sandbox://{SID}/mnt/data/a.txt"}},
    {"jsonrpc": "2.0", "id": 5, "method": "logging/setLevel", "params": {"level": "debug"}},
    {"jsonrpc": "2.0", "id": 6, "method": "ping"},
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
     "params": {"name": "sandbox_run_python", "arguments": {"code": "1"},
                "_meta": {"progressToken": "p1"}}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
    {"jsonrpc": "2.0", "id": 8, "result": {}},
]
write("jsonrpc_fuzz", "methods", "\n".join(map(line, [INIT, INITIALIZED] + others)) + "\n")
batch_init = dict(INIT, params=dict(INIT["params"], protocolVersion="2025-03-26"))
write("jsonrpc_fuzz", "batch_2025_03_26",
      line(batch_init) + "\n" + line([INITIALIZED, {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                                      {"jsonrpc": "2.0", "id": 10, "method": "tools/list"}]) + "\n")
write("jsonrpc_fuzz", "invalid",
      '{"jsonrpc":"2.0","id":null,"method":"ping"}\n[]\n42\n{"jsonrpc":"1.0","id":1}\n'
      '{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n{bad json\n' + "[" * 40 + "\n")

# --- http_fuzz: one connection's bytes; @PORT@ and @SID@ are filled in -----------------------


def http(method, target, body=b"", headers=(), session=True, close=True):
    head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:@PORT@\r\n"
    if body or method == "POST":
        head += "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        head += f"Content-Length: {len(body)}\r\n"
    if session:
        head += "Mcp-Session-Id: @SID@\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    for h in headers:
        head += h + "\r\n"
    head += "Connection: close\r\n" if close else ""
    return head.encode() + b"\r\n" + body


write("http_fuzz", "initialize", http("POST", "/mcp", line(INIT).encode(), session=False))
write("http_fuzz", "tools_list",
      http("POST", "/mcp", line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()))
write("http_fuzz", "tools_call_progress", http("POST", "/mcp", line(
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
     "params": {"name": "sandbox_create_session", "arguments": {},
                "_meta": {"progressToken": 1}}}).encode()))
write("http_fuzz", "pipelined", http("POST", "/mcp", line(
    {"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode(), close=False) +
      http("GET", "/healthz", session=False, close=False) + http("DELETE", "/mcp"))
write("http_fuzz", "get_sse", http("GET", "/mcp", headers=["Accept: text/event-stream"]))
write("http_fuzz", "files", http("GET", f"/files/{SID}/mnt/data/a%20b.png?token=abc",
                                 session=False))
write("http_fuzz", "cors_preflight", http("OPTIONS", "/mcp", session=False, headers=[
    "Origin: http://localhost:@PORT@", "Access-Control-Request-Method: POST",
    "Access-Control-Request-Headers: content-type, mcp-session-id"]))
body = line({"jsonrpc": "2.0", "id": 4, "method": "ping"}).encode()
write("http_fuzz", "chunked",
      b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
      b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: @SID@\r\n"
      b"Transfer-Encoding: chunked\r\nAuthorization: Bearer x\r\n\r\n" +
      b"%x\r\n" % 10 + body[:10] + b"\r\n" + b"%x\r\n" % (len(body) - 10) + body[10:] +
      b"\r\n0\r\n\r\n")
write("http_fuzz", "bad_head", b"POST /mcp HTTP/1.0\r\nHost: evil.example\r\nContent-Length: -1\r\n"
      b"Origin: null\r\nExpect: 100-continue\r\n\r\n")

# --- agent_wire_fuzz / agent_client_fuzz: frames ------------------------------------------------


def frame(obj):
    """A JSON frame; with a "payload" (bytes), announced by "bytes" and sent as a binary frame
    (bit 31 of the length word) right after it."""
    obj = dict(obj)
    payload = obj.pop("payload", None)
    if payload is not None:
        obj["bytes"] = len(payload)
    data = line(obj).encode()
    out = struct.pack(">I", len(data)) + data
    if payload is not None:
        out += struct.pack(">I", 0x80000000 | len(payload)) + payload
    return out


def enc(b):
    return base64.b64encode(b).decode()


requests = [
    {"type": "run", "id": 1, "kind": "python", "code": "print(1)", "fresh": False,
     "timeout_s": 60, "max_output_bytes": 102400, "cwd": "/mnt/data"},
    {"type": "cancel", "id": 1},
    {"type": "write_open", "id": 2, "path": "sub/../a.txt", "overwrite": True, "mode": 420},
    {"type": "write_chunk", "id": 3, "write": 2, "payload": b"hello\x00\xff"},
    {"type": "write_commit", "id": 4, "write": 2},
    {"type": "read_file", "id": 5, "path": "/mnt/data/a.txt", "max_bytes": 1048576,
     "offset": 0, "length": 4194304},
    {"type": "stat", "id": 6, "path": "/tmp/../mnt/data/./a.txt"},
    {"type": "list", "id": 7, "path": "", "recursive": True},
    {"type": "shutdown", "id": 8},
]
write("agent_wire_fuzz", "requests_whole", b"\xff" + b"".join(map(frame, requests)))
write("agent_wire_fuzz", "requests_split", b"\x02" + b"".join(map(frame, requests)))
write("agent_wire_fuzz", "oversized", b"\xff" + struct.pack(">I", 0x7fffffff) + b"{}")
write("agent_wire_fuzz", "binary_unannounced", b"\xff" + struct.pack(">I", 0x80000002) + b"hi")

hello = {"type": "hello", "protocol": 2, "init_pid": 1, "worker_pid": 2, "python": "3.11.2",
         "data_dir": "/mnt/data", "tmp_dir": "/tmp"}
answers = [
    hello,
    {"type": "output", "id": 1, "stream": 1, "payload": b"1\n"},
    {"type": "result", "id": 1, "exit_code": 0, "stdout": enc(b"1\n"), "stderr": "",
     "duration_s": 0.01, "artifacts": [{"path": "/mnt/data/c.png", "size": 3, "mime": "image/png",
                                        "mtime_ms": 1, "is_dir": False}],
     "figures": [{"path": "/mnt/data/f.png", "png": enc(b"\x89PNG")}]},
    {"type": "result", "id": 2, "exit_code": 2, "stdout": "", "stderr": enc(b"ls: x\n"),
     "timed_out": True, "term_signal": 9, "stdout_truncated": True},
    {"type": "ok", "id": 3},
    {"type": "ok", "id": 4},
    {"type": "ok", "id": 5},
    {"type": "file", "id": 6, "payload": b"hello", "size": 5, "eof": True, "dev": 1, "ino": 2},
    {"type": "info", "id": 7, "entry": {"path": "/mnt/data/a.txt", "size": 5}},
    {"type": "entries", "id": 8, "entries": [{"path": "/mnt/data/a.txt", "size": 5},
                                             {"path": "/mnt/data/d", "is_dir": True}]},
    {"type": "ok", "id": 9},
]
write("agent_client_fuzz", "session_whole", b"\xff" + b"".join(map(frame, answers)))
write("agent_client_fuzz", "session_split", b"\x05" + b"".join(map(frame, answers)))
errors = [hello, {"type": "error", "id": 1, "code": "timeout", "message": "t"},
          {"type": "error", "id": 0, "message": "init gave up"}]
write("agent_client_fuzz", "errors", b"\xff" + b"".join(map(frame, errors)))

# --- image_import_fuzz: archives (mode 0) and layer sets (mode 1) -----------------------------


# No padding of archives to 10 KiB records: the seeds stay small.
tarfile.RECORDSIZE = tarfile.BLOCKSIZE


def tar(entries):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as t:
        for e in entries:
            info = tarfile.TarInfo(e[0])
            info.mtime = 1700000000
            kind = e[1]
            if kind == "file":
                info.size = len(e[2])
                info.mode = 0o644
                t.addfile(info, io.BytesIO(e[2]))
                continue
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, e[2]
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, e[2]
            t.addfile(info)
    return out.getvalue()


def sha(b):
    return hashlib.sha256(b).hexdigest()


def zstd(data):
    return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True,
                          check=True).stdout


layer1 = tar([("usr", "dir"), ("usr/bin", "dir"), ("usr/bin/python3", "file", b"#!py\n"),
              ("etc", "dir"), ("etc/hosts", "file", b"127.0.0.1 localhost\n"),
              ("etc/keep", "dir"), ("etc/keep/a", "file", b"a"),
              ("bin", "symlink", "usr/bin"), ("usr/bin/py", "hardlink", "usr/bin/python3")])
layer2 = tar([("etc", "dir"), ("etc/.wh.hosts", "file", b""), ("etc/keep", "dir"),
              ("etc/keep/.wh..wh..opq", "file", b""), ("etc/keep/b", "file", b"b"),
              ("tmp", "symlink", "var/tmp")])
hostile = tar([("../escape", "file", b"x"), ("/abs", "file", b"x"), ("link", "symlink", "/etc"),
               ("link/passwd", "file", b"x"), ("a/.wh...", "file", b"")])
write("image_import_fuzz", "layers_plain", b"\x01" + layer1 + b"#LAYER#\n" + layer2)
write("image_import_fuzz", "layers_gzip_zstd",
      b"\x01" + gzip.compress(layer1, mtime=0) + b"#LAYER#\n" + zstd(layer2))
write("image_import_fuzz", "layers_hostile", b"\x01" + hostile)
write("image_import_fuzz", "docker_export", b"\x00" + layer1)


def oci_layout(layers, docker_manifest=False):
    files = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}'}
    descs, diff_ids = [], []
    for blob, raw in layers:
        files["blobs/sha256/" + sha(blob)] = blob
        descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                      "digest": "sha256:" + sha(blob), "size": len(blob)})
        diff_ids.append("sha256:" + sha(raw))
    config = line({"architecture": "amd64", "os": "linux", "config": {"Env": ["A=1"]},
                   "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
    files["blobs/sha256/" + sha(config)] = config
    manifest = line({"schemaVersion": 2,
                     "mediaType": "application/vnd.oci.image.manifest.v1+json",
                     "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                "digest": "sha256:" + sha(config), "size": len(config)},
                     "layers": descs}).encode()
    files["blobs/sha256/" + sha(manifest)] = manifest
    files["index.json"] = line({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json",
         "digest": "sha256:" + sha(manifest), "size": len(manifest),
         "annotations": {"org.opencontainers.image.ref.name": "seed:1"}}]}).encode()
    if docker_manifest:
        files["manifest.json"] = line([{"Config": "blobs/sha256/" + sha(config),
                                        "RepoTags": ["seed:1"],
                                        "Layers": ["blobs/sha256/" + sha(b) for b, _ in layers]}
                                       ]).encode()
    return tar([("blobs", "dir"), ("blobs/sha256", "dir")] +
               [(name, "file", data) for name, data in files.items()])


gz1, gz2 = gzip.compress(layer1, mtime=0), gzip.compress(layer2, mtime=0)
write("image_import_fuzz", "oci_layout_tar", b"\x00" + oci_layout([(gz1, layer1), (gz2, layer2)]))
write("image_import_fuzz", "docker_save_v25",
      b"\x00" + oci_layout([(gz1, layer1)], docker_manifest=True))
legacy_config = line({"architecture": "amd64", "os": "linux",
                      "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(layer1)]}}).encode()
write("image_import_fuzz", "docker_save_legacy", b"\x00" + tar([
    ("manifest.json", "file", line([{"Config": sha(legacy_config) + ".json",
                                     "RepoTags": ["seed:1"], "Layers": ["l1/layer.tar"]}]).encode()),
    (sha(legacy_config) + ".json", "file", legacy_config), ("l1", "dir"),
    ("l1/layer.tar", "file", layer1)]))
write("image_import_fuzz", "gzip_export", b"\x00" + gzip.compress(layer2, mtime=0))

# --- config_fuzz: environment lines, flags, addresses -----------------------------------------
write("config_fuzz", "all_env", "\n".join([
    "SANDBOX_IMAGE=python", "SANDBOX_MEMORY_LIMIT=1g", "SANDBOX_CPU_LIMIT=0.5",
    "SANDBOX_PIDS_LIMIT=64", "SANDBOX_DISK_LIMIT=100m", "SANDBOX_EXEC_TIMEOUT_S=30",
    "SANDBOX_SESSION_TTL_M=5", "SANDBOX_MAX_SESSIONS=3", "SANDBOX_MAX_UPLOAD_BYTES=1m",
    "SANDBOX_MAX_OUTPUT_BYTES=10k", "SANDBOX_MAX_CODE_BYTES=10k", "SANDBOX_MAX_RESULT_BYTES=2m",
    "SANDBOX_HTTP_HOST=0.0.0.0", "SANDBOX_HTTP_PORT=9000", "SANDBOX_AUTH_TOKEN_FILE=good",
    "SANDBOX_ALLOWED_ORIGINS=http://a.example,https://b.example:8443",
    "SANDBOX_LOG_LEVEL=warning", "SANDBOX_LOG_FILE=/tmp/x.log", "SANDBOX_LOG_FORMAT=json",
    "SANDBOX_BACKEND=docker", "SANDBOX_STATE_DIR=/var/lib/x", "SANDBOX_WHEELHOUSE=/w"]) + "\n")
write("config_fuzz", "flags", "--memory-limit=64m\n--disk-limit=1g\n--auth-token=abc\n"
      "--allowed-origins=*\n--http-port=65536\n@[::1]:8080\n@:0\n@localhost\n")
write("config_fuzz", "bad", "SANDBOX_CPU_LIMIT=nan\nSANDBOX_MEMORY_LIMIT=18446744073709551615k\n"
      "SANDBOX_AUTH_TOKEN_FILE=big\nSANDBOX_EXEC_TIMEOUT_S=1e309\n--max-sessions=-1\n@[::1\n")

# --- response_writer_fuzz: status (2 bytes), content type, name/value pairs, body; NUL between --


def response(status, content_type, fields, body=b""):
    pieces = [content_type.encode()]
    for name, value in fields:
        pieces += [name.encode() if isinstance(name, str) else name,
                   value.encode() if isinstance(value, str) else value]
    return struct.pack(">H", status - 100) + b"\0".join(pieces + [body])


write("response_writer_fuzz", "json_session", response(200, "application/json", [
    ("Mcp-Session-Id", "mcps_r1_0123456789abcdef"), ("Cache-Control", "no-store")], b"{}"))
write("response_writer_fuzz", "challenge", response(401, "application/json", [
    ("WWW-Authenticate", 'Bearer resource_metadata="https://x/.well-known/oauth-protected-'
     'resource/mcp", error="invalid_token", error_description="unknown key id"')], b"{}"))
write("response_writer_fuzz", "download", response(200, "text/csv", [
    ("Content-Disposition", 'attachment; filename="r\xc3\xa9sum\xc3\xa9 \t.csv"'),
    ("X-Content-Type-Options", "nosniff")], b"a,b\n1,2\n"))
write("response_writer_fuzz", "split", response(401, "text/plain\r\nX-Injected: 1", [
    ("WWW-Authenticate", "Bearer error_description=\"k9\r\nX-Injected: 1\""),
    ("Access-Control-Allow-Origin", "http://a\rb"), ("Bad Name", "v"), ("X", "\x00\x7f")]))
write("response_writer_fuzz", "no_content", response(204, "", [("Allow", "POST, DELETE")]))

# --- jwt_header_fuzz: bearer tokens, and JOSE headers as JSON --------------------------------


def b64u(data):
    return base64.urlsafe_b64encode(data if isinstance(data, bytes) else data.encode()) \
        .rstrip(b"=").decode()


def token(header, payload=None):
    payload = payload or {"iss": "https://idp.example.test", "sub": "a", "exp": 4102444800}
    return f"{b64u(line(header))}.{b64u(line(payload))}.c2ln"


write("jwt_header_fuzz", "at_jwt", token({"alg": "RS256", "kid": "k1", "typ": "at+jwt"}))
write("jwt_header_fuzz", "application_at_jwt", token({"alg": "ES256", "kid": "k2",
                                                      "typ": "application/at+JWT"}))
write("jwt_header_fuzz", "untyped", token({"alg": "EdDSA"}))
write("jwt_header_fuzz", "id_token", token({"alg": "PS256", "kid": "k1", "typ": "id+jwt"}))
write("jwt_header_fuzz", "hostile_kid", token({"alg": "RS256", "kid": "k9\r\nX-Injected: 1"}))
write("jwt_header_fuzz", "hostile_alg", token({"alg": "RS256\r\nX-Injected: 1", "kid": "k1"}))
write("jwt_header_fuzz", "down", token({"alg": "ES384", "kid": "down", "typ": "JWT"}))
write("jwt_header_fuzz", "crit", token({"alg": "RS512", "crit": ["exp"], "kid": 7}))
write("jwt_header_fuzz", "none", token({"alg": "none"}).rsplit(".", 1)[0] + ".")
write("jwt_header_fuzz", "header_json", line({"alg": "ES512", "kid": "k\"\\\u0000",
                                              "typ": ["at+jwt"]}))
