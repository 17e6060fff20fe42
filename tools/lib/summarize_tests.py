"""Reads ctest/Catch2 JUnit files and the e2e runner's output; prints tools/test's closing line.

Prints the failed tests, the skipped tests grouped by the reason each printed ("SKIPPED: why"),
then one line "N passed, N failed[, N skipped]". Exits 1 when any test failed or none ran.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET


def junit_counts(paths):
    passed, failed, skipped = 0, [], []
    for path in paths:
        suite = path.rsplit("/", 1)[-1].removesuffix(".xml")
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as err:
            failed.append(f"[{suite}] unreadable report: {err}")
            continue
        for case in root.iter("testcase"):
            name = f"[{suite}] {case.get('name')}"
            out = "".join(e.text or "" for e in case.iter("system-out"))
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(name)
            elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
                m = re.search(r"SKIPPED: (.*)", out)
                skipped.append((name, m.group(1).strip() if m else "not run"))
            else:
                passed += 1
    return passed, failed, skipped


def e2e_counts(path, rc):
    """The e2e runner ends with its own 'N passed, N failed[, N skipped]' line."""
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return 0, ["[e2e] no output"], []
    m = None
    for m in re.finditer(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$", text, re.M):
        pass
    if m is None:
        return 0, ["[e2e] no closing count line"], []
    passed, nfailed, nskipped = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    failed = [f"[e2e] {line.strip()}" for line in text.splitlines() if line.startswith("FAIL")]
    failed += ["[e2e] failure"] * max(0, nfailed - len(failed))
    if rc != 0 and nfailed == 0:
        failed.append(f"[e2e] runner exited {rc}")
    reasons = re.findall(r"^skip(?:ped)?:? (.*)$", text, re.M)
    skipped = [("[e2e]", reasons[i] if i < len(reasons) else "see e2e output")
               for i in range(nskipped)]
    return passed, failed, skipped


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--e2e")
    parser.add_argument("--e2e-rc", type=int, default=0)
    parser.add_argument("junit", nargs="*")
    args = parser.parse_args()
    passed, failed, skipped = junit_counts(args.junit)
    if args.e2e:
        p, f, s = e2e_counts(args.e2e, args.e2e_rc)
        passed += p
        failed += f
        skipped += s
    for name in failed:
        print(f"FAILED  {name}")
    reasons = {}
    for name, why in skipped:
        reasons.setdefault(why, []).append(name)
    for why, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        print(f"skipped {len(names)}: {why}")
    line = f"{passed} passed, {len(failed)} failed"
    if skipped:
        line += f", {len(skipped)} skipped"
    print(line)
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
