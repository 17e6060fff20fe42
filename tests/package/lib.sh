# Sourced by installed_test.sh and portable_test.sh: what both do against a fresh Debian root.
# They set `fail=0` and `here` (this directory) before sourcing.

check() {  # check NAME COMMAND...: runs COMMAND on the host side, against the root
  local name=$1; shift
  if out=$("$@" 2>&1); then echo "ok   $name"; else echo "FAIL $name: $(tail -c 1500 <<<"$out")"; fail=1; fi
}

# serve_checks COMMAND...: the official SDK client (serve_client.mjs) drives `serve` started by
# COMMAND (which enters the root); its ok/FAIL lines are printed and any failure sets `fail`.
serve_checks() {
  local node=$here/../e2e/node_modules/node/bin/node out rc
  [ -x "$node" ] || node=node
  if [ ! -d "$here/../e2e/node_modules/@modelcontextprotocol/sdk" ]; then
    echo "FAIL the SDK client: tests/e2e/node_modules is missing (tests/e2e/run.sh installs it)"
    fail=1
    return
  fi
  out=$("$node" "$here/serve_client.mjs" "$@" 2>&1)
  rc=$?
  echo "$out" | grep -E '^(ok|FAIL) ' || true
  if [ $rc -ne 0 ]; then
    grep -q '^FAIL ' <<<"$out" || echo "FAIL the SDK client over stdio: $(tail -c 1500 <<<"$out")"
    fail=1
  fi
}
