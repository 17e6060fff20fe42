#!/usr/bin/env bash
# tests/docs/modules_table.sh BINARY: the Markdown table of the default image's modules for
# docs/images.md, from the recipe's one list (`image build --list-modules`).
set -euo pipefail
listed=$("$1" image build --list-modules)
[ -n "$listed" ] || { echo "modules_table.sh: image build --list-modules printed nothing" >&2; exit 1; }
echo '| `import` | Debian package |'
echo '|---|---|'
while read -r module package; do echo "| \`$module\` | \`$package\` |"; done <<<"$listed"
