"""junit_case.py OUT.xml SUITE NAME RC [LOG]: one test case as a JUnit file for
summarize_tests.py, failed (with the tail of LOG) when RC is not 0, skipped (with LOG's last line
as the reason, with or without a "SKIPPED: " prefix) when RC is 77. For steps of tools/test that
are not test binaries (a build that must succeed, a style check)."""
import sys
import xml.sax.saxutils as x

out, suite, name, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
log = ""
if len(sys.argv) > 5:
    try:
        log = open(sys.argv[5], encoding="utf-8", errors="replace").read()[-20000:]
    except OSError:
        log = "(no log)"
case = f'  <testcase name="{x.escape(name)}">\n'
if rc == 77:
    reason = (log.strip().splitlines() or ["skipped"])[-1].removeprefix("SKIPPED: ")
    case += f'    <skipped message="{x.escape(reason, {chr(34): "&quot;"})}"/>\n'
    case += f"    <system-out>SKIPPED: {x.escape(reason)}</system-out>\n"
elif rc != 0:
    case += f'    <failure message="exit status {rc}">{x.escape(log)}</failure>\n'
case += "  </testcase>\n"
with open(out, "w", encoding="utf-8") as f:
    f.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="{x.escape(suite)}">\n'
            f"{case}</testsuite>\n")
