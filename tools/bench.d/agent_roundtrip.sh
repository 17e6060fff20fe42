#!/usr/bin/env bash
# The agent alone: warm print(1) round trip through AgentClient, pandas second cell vs a fresh
# python3 per call, and the idle PSS of sandbox-init + worker. Runs sandbox-init on the host
# over a socketpair (no namespaces), with Debian's python3.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
ensure_packages python3-pandas python3-matplotlib
bench=$BUILD_DIR/tests/runtime/agent_bench
[ -x "$bench" ] || cmake --build "$BUILD_DIR" --target agent_bench >&2
"$bench" --runs 500 --python /usr/bin/python3
