"""Reads ctest JUnit files and prints the closing count line of tools/test.

Prints the failed tests, the skipped tests with the reason each printed ("SKIPPED: why"),
then one line "N passed, N failed[, N skipped]". Exits 1 when any test failed or none ran.
"""
import re
import sys
import xml.etree.ElementTree as ET


def main(paths):
    passed, failed, skipped = 0, [], []
    for path in paths:
        suite = path.rsplit("/", 1)[-1].removesuffix(".xml")
        for case in ET.parse(path).getroot().iter("testcase"):
            name = f"[{suite}] {case.get('name')}"
            out = "".join(e.text or "" for e in case.iter("system-out"))
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(name)
            elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
                m = re.search(r"SKIPPED: (.*)", out)
                skipped.append((name, m.group(1).strip() if m else "not run"))
            else:
                passed += 1
    for name in failed:
        print(f"FAILED  {name}")
    reasons = {}
    for name, why in skipped:
        reasons.setdefault(why, []).append(name)
    for why, names in reasons.items():
        print(f"skipped {len(names)}: {why}")
    line = f"{passed} passed, {len(failed)} failed"
    if skipped:
        line += f", {len(skipped)} skipped"
    print(line)
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
