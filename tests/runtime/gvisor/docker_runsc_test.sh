#!/usr/bin/env bash
# Docker with a second wall (issue #39): SANDBOX_DOCKER_RUNTIME=runsc on a daemon of its own that
# registers runsc (its own socket and data root, so the daemon the other tests share is
# untouched; started by tools/lib/dockerd.sh, stopped again when this test started it). Shows
# that code in a Docker sandbox then talks to gVisor's kernel, that a daemon without the runtime
# gives a clear error and doctor line, and runs the behaviour suite's Docker part under runsc
# (the escape suite, the tools, files, limits), each case in a process of its own.
# usage: docker_runsc_test.sh MCP_SANDBOX_BIN BEHAVIOUR_TESTS_BIN
# Skips (77) without root, runsc, dockerd or the default image.
set -uo pipefail
source "$(dirname "$0")/../../cli/lib.sh"
bin=$1
behaviour=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)

skip_unless_root "a Docker daemon of its own"
runsc=$(command -v "${SANDBOX_RUNSC:-runsc}") ||
  { echo "SKIPPED: no runsc (apt-get install runsc)"; exit 77; }
command -v dockerd >/dev/null || { echo "SKIPPED: no dockerd (apt-get install docker.io)"; exit 77; }
skip_unless_image "$bin" python

export DOCKER_HOST=unix:///run/mcp-sandbox-dockerd-runsc/docker.sock
export SANDBOX_DOCKERD_STATE=/tmp/mcp-sandbox-dockerd-runsc
export SANDBOX_DOCKERD_DATA=/var/lib/mcp-sandbox-dockerd-runsc
# --network=none: the containers have none (runsc would refuse to start in the daemon's network
# namespace otherwise); --oci-seccomp: the project's profile enforced by the Sentry, as the
# gVisor backend does; --host-uds=open: the egress proxy's socket bound into the container.
export SANDBOX_DOCKERD_RUNTIMES="{\"runsc\": {\"path\": \"$runsc\", \"runtimeArgs\": [\"--network=none\", \"--oci-seccomp\", \"--host-uds=open\"]}}"
started=
if ! "$root/tools/lib/dockerd.sh" status >/dev/null 2>&1; then
  "$root/tools/lib/dockerd.sh" start || { echo "FAIL could not start a dockerd with runsc"; exit 1; }
  started=1
fi
stop_daemon() { [ -z "$started" ] || "$root/tools/lib/dockerd.sh" stop || true; }
trap 'stop_daemon; cli_test_cleanup' EXIT

# The default image, loaded as tools/test loads it into the shared daemon.
state_dir=$(store_dir "$bin")
archive=$(ls -t "$state_dir"/archives/python-default-*.tar 2>/dev/null | head -n 1 || true)
want_id=
[ -z "$archive" ] || want_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config_digest"])' \
  "${archive%.tar}.json" 2>/dev/null || true)
have_id=$(docker image inspect -f '{{.Id}}' mcp-sandbox/python:latest 2>/dev/null || true)
if [ -n "$archive" ] && { [ -z "$have_id" ] || { [ -n "$want_id" ] && [ "$have_id" != "$want_id" ]; }; }; then
  docker load -i "$archive" >/dev/null || { echo "FAIL docker load $archive"; exit 1; }
fi

export SANDBOX_BACKEND=docker SANDBOX_POOL_SIZE=0 SANDBOX_HIBERNATE_AFTER_S=0

# The kernel the code sees is gVisor's: another release and /proc/version than the host's, and
# the project's seccomp filter on the process (the Sentry enforces it: --oci-seccomp), which also
# refuses the kernel log (syslog), as on the other backends.
cat >"$work/kernel.py" <<'PY'
import ctypes, os
print("release", os.uname().release)
print("version", open("/proc/version").read().strip())
print([l for l in open("/proc/self/status") if l.startswith("Seccomp:")][0].strip())
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(4096)
print("syslog", libc.klogctl(3, buf, 4096), os.strerror(ctypes.get_errno()))
PY
out=$(SANDBOX_DOCKER_RUNTIME=runsc "$bin" run --image python "$work/kernel.py" 2>"$work/kernel.err")
check "run under runsc exits 0" 0 $?
echo "$out"
release=$(sed -n 's/^release //p' <<<"$out")
check "the kernel release is not the host's ($(uname -r))" different \
  "$([ -n "$release" ] && [ "$release" != "$(uname -r)" ] && echo different || echo "$release")"
check "/proc/version is not the host's" different \
  "$(v=$(sed -n 's/^version //p' <<<"$out"); [ -n "$v" ] && [ "$v" != "$(cat /proc/version)" ] && echo different || echo "$v")"
check "the kernel log is refused" "syslog -1 Operation not permitted" "$(grep '^syslog' <<<"$out")"
check "the seccomp filter is on" "Seccomp:	2" "$(grep '^Seccomp:' <<<"$out")"
# The same with the daemon's default runtime: the host's kernel (the control).
out=$("$bin" run --image python "$work/kernel.py" 2>/dev/null)
check "runc sees the host's kernel" "$(uname -r)" "$(sed -n 's/^release //p' <<<"$out")"

# A runtime the daemon lacks: a clear error (the tool's), a doctor line.
SANDBOX_DOCKER_RUNTIME=nosuch "$bin" run --image python "$work/kernel.py" >/dev/null 2>"$work/missing.err"
check "a missing runtime fails the run" 1 $?
check "its error says how to register it" yes \
  "$(grep -q "no runtime 'nosuch'.*--add-runtime" "$work/missing.err" && echo yes || { cat "$work/missing.err"; echo no; })"
doctor=$(SANDBOX_DOCKER_RUNTIME=nosuch "$bin" doctor 2>/dev/null | grep '^docker runtime:')
check "doctor says it is missing" yes "$(grep -q "FAILED: .*no runtime 'nosuch'" <<<"$doctor" && echo yes || echo "no: $doctor")"
doctor=$(SANDBOX_DOCKER_RUNTIME=runsc "$bin" doctor 2>/dev/null | grep '^docker runtime:')
check "doctor names the registered runsc" "docker runtime: runsc (registered: $runsc)" "$doctor"

# Egress cannot work under runsc (the Sentry cannot pass sockets to the host): a clear refusal.
SANDBOX_DOCKER_RUNTIME=runsc SANDBOX_EGRESS_ALLOW=pypi "$bin" run --image python "$work/kernel.py" \
  >/dev/null 2>"$work/egress.err"
check "egress under runsc is refused" 1 $?
check "saying why" yes "$(grep -q 'egress (SANDBOX_EGRESS_ALLOW) does not work on Docker under runsc' \
  "$work/egress.err" && echo yes || { cat "$work/egress.err"; echo no; })"

# The behaviour suite's Docker part under runsc: one process per case (a skip ends its process).
export SANDBOX_DOCKER_RUNTIME=runsc SANDBOX_TEST_REQUIRE_DOCKER=1
passed=0 skipped=0
while IFS= read -r name; do
  case $name in
    "docker: egress:"*) continue ;;  # refused under runsc, checked above
  esac
  # A comma separates patterns in a Catch2 test spec: escaped, so the name is one; and a spec
  # that matches nothing fails (-w NoTests) instead of passing with no test run.
  "$behaviour" -w NoTests "${name//,/\\,}" >"$work/case.log" 2>&1
  rc=$?
  case $rc in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)); echo "skip $name: $(grep -m1 '^SKIPPED' "$work/case.log")" ;;
    *) echo "FAIL $name"; grep -B2 -A12 'FAILED' "$work/case.log" | head -40; fail=1 ;;
  esac
done < <("$behaviour" --list-test-names-only "[docker]" | grep '^docker: ')
echo "behaviour under runsc: $passed passed, $skipped skipped"
check "behaviour cases ran" yes "$([ "$passed" -gt 20 ] && echo yes || echo no)"
exit $fail
