#!/usr/bin/env bash
# tools/package.d/man_page.sh BINARY [TEMPLATE]: the man page on stdout. The template
# (mcp-sandbox.1 beside this script) holds everything but the settings; its line
# `.\" @SETTINGS@` becomes the ENVIRONMENT section that BINARY prints from its own settings
# table (`serve --help-man`), the table docs/configuration.md is generated from too.
set -euo pipefail
binary=$1
template=${2:-$(dirname "$0")/mcp-sandbox.1}
settings=$("$binary" serve --help-man)
[ -n "$settings" ] || { echo "man_page.sh: $binary printed no settings" >&2; exit 1; }
grep -qx '\.\\" @SETTINGS@' "$template" || { echo "man_page.sh: no @SETTINGS@ line in $template" >&2; exit 1; }
while IFS= read -r line; do
  if [ "$line" = '.\" @SETTINGS@' ]; then printf '%s\n' "$settings"; else printf '%s\n' "$line"; fi
done <"$template"
