#!/usr/bin/env bash
# MCP Apps views (issue #40): the size of each ui:// view resource, raw and compressed (target
# <= 300 KB compressed), and a page of a 1,000,000-row DataFrame through sandbox_view_table over
# stdio (target p50 <= 50 ms): in the frame's order, sorted and filtered, and the first sort and
# filter, which the session computes once. Prints markdown. Needs the sandbox runtime (a
# backend and the image) and npm. The time from a tool result to a rendered view in headless
# Chromium (table, matplotlib and Plotly charts) is printed by tests/e2e/apps.test.mjs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/lib/mcp_bench_setup.sh"
"$node" "$e2e/bench/apps_views.mjs"
