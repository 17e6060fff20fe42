#!/usr/bin/env python3
"""A local PEP 503 package index for tests: this machine reaches no PyPI, so the tests that
install packages bring their own index on loopback, holding wheels made here.

    pep503_index.py build OUT_DIR NAME==VERSION... [--requires NAME:DEP]... [--pad-bytes N]
    pep503_index.py cert DIR [--name HOST]...
    pep503_index.py serve OUT_DIR [--host H] [--port P] [--tls-cert C --tls-key K] [--port-file F]

Wheels are written by hand with zipfile (no pip, no setuptools, no network), so the fixture
works on a bare host. Each wheel holds module NAME (dashes become underscores) with
`__version__` and `hello()`; `--pad-bytes` adds an incompressible data file for transfers of a
known size. The index URL is http(s)://HOST:PORT/simple.

A pip on the host that should trust the `cert` certificate needs a clean environment: a
REQUESTS_CA_BUNDLE, SSL_CERT_FILE or pip.conf `cert` set by the host wins over `--cert`
(seen on this project's CI machines).
"""
import argparse
import base64
import functools
import hashlib
import html
import http.server
import os
import random
import re
import ssl
import subprocess
import sys
import zipfile


def normalize(name):
    """PEP 503 project-name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def build_wheel(out_dir, name, version, requires, pad_bytes):
    dist = re.sub(r"[-_.]+", "_", name)
    module = dist.lower()
    info = f"{dist}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {dep}\n" for dep in requires)
    files = {
        f"{module}/__init__.py": (
            f'__version__ = "{version}"\n\n\n'
            f"def hello():\n    return \"hello from {name} {version}\"\n"
        ).encode(),
        f"{info}/METADATA": metadata.encode(),
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: pep503_index\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ).encode(),
    }
    if pad_bytes:
        # Seeded, so a rebuilt index has the same hashes; random, so compression cannot shrink it.
        files[f"{module}/pad.bin"] = random.Random(f"{name}{version}").randbytes(pad_bytes)
    record = "".join(f"{path},{record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()

    wheel_name = f"{dist}-{version}-py3-none-any.whl"
    path = os.path.join(out_dir, "packages", wheel_name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for member, data in files.items():
            wheel.writestr(zipfile.ZipInfo(member, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return wheel_name


def write_index(out_dir):
    """Writes simple/index.html and one page per project from what packages/ holds."""
    projects = {}
    for wheel in sorted(os.listdir(os.path.join(out_dir, "packages"))):
        if wheel.endswith(".whl"):
            projects.setdefault(normalize(wheel.split("-")[0]), []).append(wheel)
    simple = os.path.join(out_dir, "simple")
    os.makedirs(simple, exist_ok=True)
    links = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects))
    with open(os.path.join(simple, "index.html"), "w") as page:
        page.write(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
    for project, wheels in projects.items():
        os.makedirs(os.path.join(simple, project), exist_ok=True)
        anchors = []
        for wheel in wheels:
            with open(os.path.join(out_dir, "packages", wheel), "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            href = html.escape(f"../../packages/{wheel}#sha256={digest}")
            anchors.append(f'<a href="{href}">{html.escape(wheel)}</a>\n')
        with open(os.path.join(simple, project, "index.html"), "w") as page:
            page.write(f"<!DOCTYPE html>\n<html><body>\n{''.join(anchors)}</body></html>\n")


def cmd_build(args):
    os.makedirs(os.path.join(args.out_dir, "packages"), exist_ok=True)
    requires = {}
    for entry in args.requires:
        project, _, dep = entry.partition(":")
        if not dep:
            sys.exit(f"--requires wants NAME:DEP, got {entry!r}")
        requires.setdefault(normalize(project), []).append(dep)
    for spec in args.packages:
        name, sep, version = spec.partition("==")
        if not sep or not name or not version:
            sys.exit(f"a package is NAME==VERSION, got {spec!r}")
        wheel = build_wheel(args.out_dir, name, version, requires.get(normalize(name), []),
                            args.pad_bytes)
        print(os.path.join(args.out_dir, "packages", wheel))
    write_index(args.out_dir)


def cmd_cert(args):
    os.makedirs(args.dir, exist_ok=True)
    names = ["DNS:localhost", "IP:127.0.0.1"] + [f"DNS:{n}" for n in args.name]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "7",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=" + ",".join(names),
         "-keyout", os.path.join(args.dir, "key.pem"), "-out", os.path.join(args.dir, "cert.pem")],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(os.path.join(args.dir, "cert.pem"))


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):  # one line per request would flood the test logs
        pass


def cmd_serve(args):
    handler = functools.partial(QuietHandler, directory=args.out_dir)
    server = http.server.ThreadingHTTPServer((args.host, args.port), handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    if args.port_file:
        # Written whole, then renamed, so a reader polling for the file never sees half a port.
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.rename(tmp, args.port_file)
    scheme = "https" if args.tls_cert else "http"
    print(f"{scheme}://{args.host}:{port}/simple", flush=True)
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build")
    build.add_argument("out_dir")
    build.add_argument("packages", nargs="+")
    build.add_argument("--requires", action="append", default=[])
    build.add_argument("--pad-bytes", type=int, default=0)
    cert = sub.add_parser("cert")
    cert.add_argument("dir")
    cert.add_argument("--name", action="append", default=[])
    serve = sub.add_parser("serve")
    serve.add_argument("out_dir")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0)
    serve.add_argument("--tls-cert")
    serve.add_argument("--tls-key")
    serve.add_argument("--port-file")
    args = parser.parse_args()
    if args.command == "serve" and bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    {"build": cmd_build, "cert": cmd_cert, "serve": cmd_serve}[args.command](args)


if __name__ == "__main__":
    main()
