#!/usr/bin/env bash
# The package's systemd unit for real: in a VM booting systemd (../shared/tools/run-in-vm,
# VM_INIT=systemd) the .deb is installed with dpkg, the token written to
# /etc/mcp-sandbox/auth-token, and mcp-sandbox.service started; then over HTTP: no token is
# refused (401), and with it a client initializes and runs Python in a sandbox (under the unit's
# hardening, as root with a delegated cgroup, state in /var/lib/mcp-sandbox). Also prints
# `systemd-analyze security`'s verdict on the unit. Prints "ok"/"FAIL" lines.
# usage: service_in_vm.sh DEB RUN_IN_VM WORK_DIR
# Exit: 0 passed, 1 failed, 77 (skipped) without run-in-vm.
set -uo pipefail
deb=$1 vm=$2 work=$3
if [ ! -x "$vm" ]; then echo "SKIPPED: $vm not found (CI keeps shared/ beside the checkout)"; exit 77; fi
mkdir -p "$work"
rm -f "$work"/*.log "$work"/result
cp "$deb" "$work/package.deb"

cat > "$work/in-vm.sh" <<'GUEST'
set -u
cd "$(dirname "$0")"
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1: $2"; fail=1; }
dpkg -i package.deb > dpkg.log 2>&1 || { bad "dpkg -i" "$(tail -5 dpkg.log)"; echo 1 > result; exit 1; }
install -d -m 700 /etc/mcp-sandbox
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
( umask 077; echo "$token" > /etc/mcp-sandbox/auth-token )
systemctl daemon-reload
if systemctl start mcp-sandbox; then ok "the unit starts"; else bad "the unit starts" "$(journalctl -u mcp-sandbox --no-pager | tail -20)"; fi
for _ in $(seq 100); do
  curl -s -o /dev/null http://127.0.0.1:8080/mcp && break
  sleep 0.3
done
post() {  # post BODY [SESSION]: the response, headers included
  curl -s -i -X POST http://127.0.0.1:8080/mcp -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-06-18' ${2:+-H "Mcp-Session-Id: $2"} -d "$1"
}
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:8080/mcp \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"ping"}')
[ "$code" = 401 ] && ok "a request without the token is refused (401)" || bad "no token" "HTTP $code"
init=$(post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"vm","version":"1"}}}')
session=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' <<<"$init")
grep -q '"serverInfo"' <<<"$init" && ok "initialize with the token" || bad "initialize" "$init"
post '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$session" > /dev/null
run=$(post '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_run_python","arguments":{"code":"print(6 * 7)"}}}' "$session")
grep -q '"stdout":"42\\n"' <<<"$run" && ok "Python runs in a sandbox under the hardened unit" ||
  bad "run" "$(tail -c 1500 <<<"$run"; journalctl -u mcp-sandbox --no-pager | tail -20)"
systemd-analyze security mcp-sandbox --no-pager 2>/dev/null | tail -1 | sed 's/^/info /'
# The stop must be orderly: well inside the unit's TimeoutStopSec (60 s), with no SIGKILL from
# systemd (Result=timeout). It once hung past it, waiting for a pool refill's warm-up (issue #38).
stop_began=$(date +%s)
systemctl stop mcp-sandbox
stop_took=$(( $(date +%s) - stop_began ))
result=$(systemctl show -p Result --value mcp-sandbox)
[ "$stop_took" -lt 30 ] && [ "$result" = success ] && ok "the unit stops in ${stop_took} s (Result=$result)" ||
  bad "orderly stop" "${stop_took} s, Result=$result; $(journalctl -u mcp-sandbox --no-pager | tail -15)"
leftover=$(find /sys/fs/cgroup -maxdepth 3 -name 'sess_*' | head -3)
[ -z "$leftover" ] && ok "stopping the unit leaves no session cgroup" ||
  bad "stop" "$leftover; $(journalctl -u mcp-sandbox --no-pager | tail -25)"
echo $fail > result
exit $fail
GUEST

VM_INIT=systemd VM_WORKDIR="$work" "$vm" bash "$work/in-vm.sh"
rc=$?
[ $rc -ne 0 ] && [ ! -s "$work/result" ] && echo "FAIL run-in-vm failed before the checks reported (exit $rc)"
exit $rc
