#!/bin/bash
# tools/deploy/monitoring: the alert rules load (promtool check rules) and fire when they should
# (promtool test rules alerts_test.yml), the dashboard is JSON, and every metric the rules and
# the dashboard name is one a real server exposes (a stdio server's SANDBOX_METRICS_ADDR).
set -euo pipefail
bin="$1"
dir="$2/tools/deploy/monitoring"
command -v promtool >/dev/null || { echo "promtool is not installed (apt-get install prometheus)"; exit 77; }
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

promtool check rules "$dir/alerts.yml"
(cd "$dir" && promtool test rules alerts_test.yml)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["panels"], "no panels"' \
  "$dir/grafana-dashboard.json"

mkfifo "$work/in"
SANDBOX_STATE_DIR="$work/state" SANDBOX_POOL_SIZE=0 SANDBOX_METRICS_ADDR=127.0.0.1:0 \
  "$bin" serve <"$work/in" >/dev/null 2>"$work/log" &
pid=$!
exec 3>"$work/in"
url="$(metrics_url "$work/log")"
[[ -n "$url" ]] || { echo "no metrics listener:"; cat "$work/log"; exit 1; }
curl -fsS "$url" >"$work/metrics"
exec 3>&-
wait "$pid" || true
pid=""
# The families the server exposes (# TYPE lines), and the names the files use.
sed -n 's/^# TYPE \([a-z_:]*\) .*/\1/p' "$work/metrics" | sort -u >"$work/exposed"
grep -ohE '\b(mcp_sandbox|process)_[a-z_]+' "$dir/alerts.yml" "$dir/alerts_test.yml" \
  "$dir/grafana-dashboard.json" | sed -E 's/_(bucket|sum|count)$//' | sort -u >"$work/used"
missing="$(comm -23 "$work/used" "$work/exposed")"
[[ -z "$missing" ]] || { echo "named but not exposed: $missing"; exit 1; }
echo "ok: $(wc -l <"$work/used") metric names, all exposed"
