#!/usr/bin/env bash
# tests/docs/config_page_test.sh BINARY ROOT: docs/configuration.md's settings table is the one
# the binary prints from its settings table (`serve --help-markdown`), and the man page the
# package ships is valid roff with an entry for every setting. Fails when a setting was added,
# changed or dropped without `tools/docs` run to regenerate the page.
set -euo pipefail
binary=$1 root=$2
page=$root/docs/configuration.md
want=$("$binary" serve --help-markdown)
have=$(sed -n '/^<!-- settings:begin -->$/,/^<!-- settings:end -->$/p' "$page" | sed '1d;$d')
if [ "$want" != "$have" ]; then
  echo "docs/configuration.md differs from 'mcp-sandbox serve --help-markdown' (run tools/docs):"
  diff <(printf '%s\n' "$have") <(printf '%s\n' "$want") || true
  exit 1
fi
rows=$(printf '%s\n' "$want" | grep -c '^| `SANDBOX_')
echo "docs/configuration.md: $rows settings, as the binary's table has them"

man=$(mktemp); trap 'rm -f "$man"' EXIT
"$root/tools/package.d/man_page.sh" "$binary" >"$man"
if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1 || true)
  [ -z "$warnings" ] || { echo "the man page has roff warnings:"; echo "$warnings"; exit 1; }
fi
missing=0
while read -r variable; do
  grep -q "^\.BR $variable " "$man" || { echo "the man page lacks $variable"; missing=1; }
done < <(printf '%s\n' "$want" | sed -n 's/^| `\(SANDBOX_[A-Z0-9_]*\)`.*/\1/p')
[ "$missing" -eq 0 ] || exit 1
echo "the man page: valid roff, $rows settings in its ENVIRONMENT section"
