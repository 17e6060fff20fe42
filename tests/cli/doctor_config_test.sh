#!/usr/bin/env bash
# `doctor` reads the configuration with serve's parser: a limit set in the environment is the
# one doctor reports, and a value serve refuses is refused by doctor too, with the same message
# and exit code 2, after the report. Usage: doctor_config_test.sh /path/to/mcp-sandbox
set -u
bin=$1
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
# No cgroup is created (doctor as root would make the parent group, as serve does).
export SANDBOX_CGROUP=none SANDBOX_STATE_DIR=$work/state

json=$(SANDBOX_MEMORY_LIMIT=300m "$bin" doctor --json 2>"$work/err")
status=$?
check "doctor exits 0 or 1 with a valid configuration" yes "$([ $status -le 1 ] && echo yes || echo "no ($status)")"
check "doctor --json: memory limit from SANDBOX_MEMORY_LIMIT" "300MiB|[]|$work/state" \
  "$(python3 -c 'import json,sys; r=json.load(sys.stdin); print(next(l["value"] for l in r["limits"] if l["name"]=="memory"), json.dumps(r["config_errors"]), r["state_dir"], sep="|")' <<<"$json")"

# serve takes the same value (it starts, and ends at the end of its stdin).
SANDBOX_MEMORY_LIMIT=300m "$bin" serve </dev/null >/dev/null 2>"$work/serve-err"
check "serve starts with the same value" 0 $?

# Values serve refuses: doctor names the same variable with the same message, and exits 2.
# (SANDBOX_PIDS_LIMIT=4 is below serve's minimum of 8; SANDBOX_BACKEND=vm is not a backend.)
for setting in SANDBOX_MEMORY_LIMIT=lots SANDBOX_PIDS_LIMIT=4 SANDBOX_BACKEND=vm; do
  env "$setting" "$bin" serve </dev/null >/dev/null 2>"$work/serve-err"
  serve_status=$?
  serve_message=$(sed -n 's/^mcp-sandbox serve: //p' "$work/serve-err" | head -n 1)
  report=$(env "$setting" "$bin" doctor 2>"$work/doctor-err")
  doctor_status=$?
  doctor_message=$(sed -n 's/^mcp-sandbox doctor: //p' "$work/doctor-err" | head -n 1)
  check "$setting: serve exits 2" 2 "$serve_status"
  check "$setting: doctor exits 2" 2 "$doctor_status"
  check "$setting: the message names the variable" yes \
    "$([[ "$doctor_message" == "${setting%%=*}='${setting#*=}': "* ]] && echo yes || echo "no: $doctor_message")"
  check "$setting: doctor's message is serve's" "$serve_message" "$doctor_message"
  check "$setting: doctor still prints its report" yes \
    "$(grep -q '^limits serve would use' <<<"$report" && grep -qF "$doctor_message" <<<"$report" && echo yes || echo no)"
done

# The http:// issuer rule serve applies as it starts over HTTP (issue #36): an issuer on another
# host is an error naming SANDBOX_OAUTH_ALLOW_HTTP_ISSUER (exit 2); with that setting, or on
# loopback, a warning. (0.0.0.0 is not loopback by the rule, and refuses a connection at once.)
report=$(SANDBOX_OAUTH_ISSUER=http://0.0.0.0:1 "$bin" doctor 2>"$work/doctor-err")
check "http:// issuer on another host: doctor exits 2" 2 $?
check "http:// issuer on another host: the error names the setting" yes \
  "$(grep -q 'plain HTTP on another host.*SANDBOX_OAUTH_ALLOW_HTTP_ISSUER=on' "$work/doctor-err" && grep -q 'SANDBOX_OAUTH_ALLOW_HTTP_ISSUER' <<<"$report" && echo yes || echo no)"
report=$(SANDBOX_OAUTH_ISSUER=http://0.0.0.0:1 SANDBOX_OAUTH_ALLOW_HTTP_ISSUER=on "$bin" doctor 2>"$work/doctor-err")
status=$?
check "http:// issuer allowed: no configuration error" yes "$([ $status -le 1 ] && echo yes || echo "no ($status)")"
check "http:// issuer allowed: a warning line" yes \
  "$(grep -q '^oauth: warning: .*plain HTTP (accepted: SANDBOX_OAUTH_ALLOW_HTTP_ISSUER=on)' <<<"$report" && echo yes || echo no)"
json=$(SANDBOX_OAUTH_ISSUER=http://127.0.0.1:1 "$bin" doctor --json 2>/dev/null)
check "http:// issuer on loopback: a warning, no error" "on this host|[]" \
  "$(python3 -c 'import json,sys; r=json.load(sys.stdin); print("on this host" if "on this host" in r["oauth"]["warning"] else r["oauth"], json.dumps(r["config_errors"]), sep="|")' <<<"$json")"

json=$(SANDBOX_CPU_LIMIT=fast "$bin" doctor --json 2>/dev/null)
check "doctor --json lists the bad value" "1|SANDBOX_CPU_LIMIT='fast'" \
  "$(python3 -c 'import json,sys; e=json.load(sys.stdin)["config_errors"]; print(len(e), e[0].split(":")[0], sep="|")' <<<"$json")"
exit $fail
