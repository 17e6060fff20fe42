#!/usr/bin/env bash
# tests/docs/images_page_test.sh BINARY ROOT: docs/images.md's table of the default image's
# modules is the recipe's one list (`image build --list-modules`), so the page cannot fall behind
# the image. Fails until tools/docs is run after a change to rootfs/recipe/image_batteries.cc.
set -euo pipefail
binary=$1 root=$2
page=$root/docs/images.md
want=$("$root/tests/docs/modules_table.sh" "$binary")
have=$(sed -n '/^<!-- modules:begin -->$/,/^<!-- modules:end -->$/p' "$page" | sed '1d;$d')
if [ "$want" != "$have" ]; then
  echo "docs/images.md's module table differs from 'mcp-sandbox image build --list-modules' (run tools/docs):"
  diff <(printf '%s\n' "$have") <(printf '%s\n' "$want") || true
  exit 1
fi
echo "docs/images.md: $(($(wc -l <<<"$want") - 2)) modules, as the recipe has them"
