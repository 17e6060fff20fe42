# Sourced: backend_usable BIN, true when `BIN doctor` finds a sandbox backend usable here.
# The report is read whole before it is judged: `doctor --json | grep -q '"usable": true'` lost a
# race once the report outgrew 4 KiB (a write of its own): grep quit on the first one, doctor
# died of SIGPIPE on the second, and under pipefail a usable host read as "no backend" (7 of 40
# tries; a soak test skipped so on a fresh machine).
backend_usable() {
  "$1" doctor --json 2>/dev/null | python3 -c '
import json, sys
try:
    usable = json.load(sys.stdin)["backend"]["usable"] is True
except (ValueError, KeyError, TypeError):
    usable = False
sys.exit(0 if usable else 1)'
}
