#!/usr/bin/env bash
# tools/lib/tsan_stage.sh RESULTS_DIR [--build-only]: tools/test's ThreadSanitizer stage. Builds
# the test executables of the layers above the kernel (the MCP server and transports, the session
# manager, the agent client with sandbox-init on the host) with -fsanitize=thread in
# build-tsan/, runs their test cases, and writes per executable Catch2's JUnit file plus one
# case "no ThreadSanitizer reports" that fails on any report (TSan does not fail a test case
# by itself). These tests need no namespaces: sandboxes are LocalAgents (tests/support), so
# the AgentClient runs under TSan in the session and MCP tests.
# Left out here, run by the other stages: tests that bound time or memory, which TSan's
# slowdown and shadow memory break (not races), and agent_tests' [agent] cases (12 minutes
# under TSan on 2 busy cores, mostly waiting; no reports when they were run).
# Suppressions (tests/tsan.supp) are for third-party code only, each with its reason.
# --build-only: the build alone (tools/lib/idle_builds.sh).
set -uo pipefail
source "$(dirname "$0")/common.sh"
results=$1 build_only=${2:-}
tsan_dir=$SANDBOX_ROOT/build-tsan
executables=(mcp_tests session_tests agent_tests)
declare -A test_spec=(
  [mcp_tests]='~"*endless header is cut*" ~"5 000 figures*"'
  [session_tests]=''
  [agent_tests]='[unit]'
)

# Only these executables and what they link: not the whole tree.
{ cmake -S "$SANDBOX_ROOT" -B "$tsan_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSANDBOX_TSAN=ON -DSANDBOX_UNITY=ON &&
  cmake --build "$tsan_dir" -j "$(nproc)" --target "${executables[@]}"; } \
  >"$results/tsan-build.log" 2>&1
build_rc=$?
[ "$build_only" != --build-only ] || exit "$build_rc"
python3 "$SANDBOX_ROOT/tools/lib/junit_case.py" "$results/tsan-build.xml" tsan \
  "the ThreadSanitizer build of the MCP, session and agent tests" "$build_rc" \
  "$results/tsan-build.log"
[ "$build_rc" -eq 0 ] || { log "the ThreadSanitizer build failed:"; tail -40 "$results/tsan-build.log" >&2; exit 0; }

export TSAN_OPTIONS="second_deadlock_stack=1 history_size=4 suppressions=$SANDBOX_ROOT/tests/tsan.supp"
for name in "${executables[@]}"; do
  exe=$(find "$tsan_dir/tests" -type f -name "$name" -perm -u+x | head -1)
  report=$results/tsan-$name.log
  spec=()
  [ -z "${test_spec[$name]}" ] || spec=("${test_spec[$name]}")
  "$exe" "${spec[@]}" --reporter junit --out "$results/tsan-$name.xml" >/dev/null 2>"$report"
  rc=$?
  # A report anywhere (also in a test that passed) fails; so does a failed test case, which
  # Catch2's file above names.
  if grep -q 'WARNING: ThreadSanitizer' "$report"; then
    races=1
    log "ThreadSanitizer reports in $name:"
    grep -A30 'WARNING: ThreadSanitizer' "$report" | head -80 >&2
  else
    races=0
  fi
  python3 "$SANDBOX_ROOT/tools/lib/junit_case.py" "$results/tsan-$name-reports.xml" tsan \
    "no ThreadSanitizer reports in $name" "$races" "$report"
  [ "$rc" -eq 0 ] || log "$name under ThreadSanitizer failed (exit $rc); see $report"
done
exit 0
