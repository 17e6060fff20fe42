#!/usr/bin/env python3
"""tests/docs/links_check.py ROOT: every relative link in README.md and docs/*.md leads somewhere.

A link to a file must name a file of the tree; a link with #anchor must name a heading of that
page (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats).
Links to http(s) and mailto are not followed (the tests have no internet). Prints each broken
link with its page and line; exits 1 when there is one.
"""
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def anchors(path):
    """The anchors GitHub makes for the headings of one Markdown file."""
    seen = {}
    result = set()
    in_fence = False
    with open(path, encoding="utf-8") as page:
        for line in page:
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            match = None if in_fence else HEADING.match(line)
            if not match:
                continue
            text = re.sub(r"`([^`]*)`", r"\1", match.group(2))
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def links(path):
    """(line number, target) of each inline link outside code."""
    in_fence = False
    with open(path, encoding="utf-8") as page:
        for number, line in enumerate(page, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            line = re.sub(r"`[^`]*`", "", line)
            for match in LINK.finditer(line):
                yield number, match.group(1)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    pages = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    pages += sorted(os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))
    cache = {}
    broken = 0
    checked = 0
    for page in pages:
        for number, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # http:, https:, mailto:
            checked += 1
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) if file_part else page
            where = f"{os.path.relpath(page, root)}:{number}: {target}"
            if not dest.startswith(root + os.sep) and dest != root:
                print(f"{where}: leads out of the tree")
                broken += 1
            elif not os.path.exists(dest):
                print(f"{where}: no such file")
                broken += 1
            elif anchor:
                if not dest.endswith(".md"):
                    print(f"{where}: an anchor into a file that is not Markdown")
                    broken += 1
                    continue
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    print(f"{where}: no heading with the anchor #{anchor}")
                    broken += 1
    print(f"{checked} links checked in {len(pages)} pages, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
