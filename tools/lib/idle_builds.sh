# Sourced by tools/test (needs common.sh): the work of its last stages that needs no test to be
# running, done in the background from the build stage on: the builds of the ASan+UBSan tree
# (with the fuzz targets) and the TSan tree, then clang-tidy and clang-format (style_check.sh,
# which reads a configured, unbuilt tree of its own, so it waits for no build). It runs at idle
# CPU priority (SCHED_IDLE, in an autogroup at nice 19): it takes only the cycles the compile, the image
# build and the ctest, e2e and package stages leave while they wait on links, downloads,
# sandboxes, daemons and a VM, and yields to them. The sanitizer builds come first: their
# stages wait only for them (idle_builds_wait_sanitizers), and while those stages run their
# tests (the fuzz smoke on one core) clang-tidy takes the cycles they leave; the style stage
# waits for it last (idle_builds_wait). Each sanitizer stage runs its own build again (a no-op,
# or the rest of it) and its tests. A failure here is reported by the stage's own build.

idle_builds_pid=
idle_builds_log=

# idle_builds_start RESULTS_DIR: starts the chain in a process group of its own.
idle_builds_start() {
  local results=$1 lib=$SANDBOX_ROOT/tools/lib
  idle_builds_log=$BUILD_DIR/idle-builds.log
  rm -f "$BUILD_DIR/idle-builds.sanitizers-done"
  log "the ASan (with the fuzz targets) and TSan builds, then clang-tidy: in the background," \
    "at idle priority (log: $idle_builds_log)"
  setsid chrt --idle 0 bash -c '
    lib=$1 build_dir=$2 results=$3
    # setsid made a session, and with it a scheduler autogroup of its own (on by default:
    # kernel.sched_autogroup_enabled). The kernel shares the CPU fairly between autogroups
    # before it looks at any policy inside them, so idle tasks alone in their group still took
    # half of the CPU from the stages in the foreground. The group itself yields at nice 19
    # (weight 15 against 1024). Without autogroups, SCHED_IDLE does the same.
    echo 19 > /proc/self/autogroup 2>/dev/null || true
    source "$lib/stage_clock.sh"
    timed() {
      local started ticks rc=0
      started=$(date +%s) ticks=$(stage_clock_children_ticks)
      "$@" || rc=$?
      echo "idle builds: ${1##*/}: exit $rc, $(( $(date +%s) - started )) s," \
        "CPU $(( ($(stage_clock_children_ticks) - ticks) / $(getconf CLK_TCK) )) s"
    }
    timed "$lib/asan_stage.sh" "$results" --build-only
    timed "$lib/tsan_stage.sh" "$results" --build-only
    : > "$build_dir/idle-builds.sanitizers-done"
    timed "$lib/style_check.sh" "$results" 2>"$build_dir/style-check.log"' \
    bash "$lib" "$BUILD_DIR" "$results" </dev/null >"$idle_builds_log" 2>&1 &
  idle_builds_pid=$!
}

# idle_builds_wait_sanitizers: waits until the chain is past the sanitizer builds (or ended),
# so a sanitizer stage's own build does not run beside the chain's in the same tree. The chain
# stays at idle priority: clang-tidy runs on in the background.
idle_builds_wait_sanitizers() {
  [ -n "$idle_builds_pid" ] || return 0
  log "waiting for the background sanitizer builds"
  local done_file=$BUILD_DIR/idle-builds.sanitizers-done
  while [ ! -e "$done_file" ] && kill -0 "$idle_builds_pid" 2>/dev/null; do sleep 1; done
  grep '^idle builds: ' "$idle_builds_log" >&2 || true
}

# idle_builds_wait: waits for the rest of the chain (clang-tidy), now the only work, so at full
# speed (idle priority takes every cycle nobody else wants). Prints what the style check found.
idle_builds_wait() {
  [ -n "$idle_builds_pid" ] || return 0
  log "waiting for the background style check"
  wait "$idle_builds_pid" 2>/dev/null || true
  idle_builds_pid=
  cat "$BUILD_DIR/style-check.log" >&2
  grep '^idle builds: ' "$idle_builds_log" >&2 || true
}

# On an early exit: stops the chain (its compilers with it).
idle_builds_stop() {
  [ -n "$idle_builds_pid" ] || return 0
  kill -TERM -- "-$idle_builds_pid" 2>/dev/null || true
  wait "$idle_builds_pid" 2>/dev/null || true
  idle_builds_pid=
}
