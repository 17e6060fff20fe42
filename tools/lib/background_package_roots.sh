# Sourced by tools/test (needs common.sh): the package stage's slow parts, made in the background
# long before the stage runs. First the Debian root tarballs its tests unpack (tests/package/run.sh
# prefetch: mmdebstrap, mostly downloads and dpkg, at normal priority while the tree compiles;
# the images stage waits for them, so no test runs beside mmdebstrap). Then the Debian 13
# build's compile (tools/package --dist trixie --compile-only: about 400 s of CPU on a fresh
# machine, g++ 14 in its clean root) at idle CPU priority, as the sanitizer builds
# (tools/lib/idle_builds.sh): it fills the release's ccache with the cycles ctest and e2e leave
# while they wait on sandboxes, daemons and VMs. The package stage's own Debian 13 build then
# finds every object in that ccache; if the compile is still going, that build waits for it on
# the release's lock (tools/package) and the compile, then nearly alone, runs at full speed.

package_roots_pid=
package_roots_fetched=

package_roots_start() {
  local log_file=$BUILD_DIR/package-prefetch.log
  package_roots_fetched=$BUILD_DIR/package-prefetch.done
  rm -f "$package_roots_fetched"
  log "the package stage's Debian roots, then the Debian 13 compile at idle priority: in the" \
    "background (log: $log_file)"
  # setsid: a process group to stop on an early exit, and a scheduler autogroup of its own,
  # set to nice 19 once the downloads are done (idle_builds.sh says why SCHED_IDLE alone is not
  # enough).
  setsid bash -c '
    root=$1 work=$2 fetched=$3
    "$root/tests/package/run.sh" "$work" prefetch || exit
    : > "$fetched"
    echo 19 > /proc/self/autogroup 2>/dev/null || true
    source "$root/tools/lib/stage_clock.sh"
    started=$(date +%s) ticks=$(stage_clock_children_ticks) rc=0
    chrt --idle 0 "$root/tools/package" --dist trixie --compile-only || rc=$?
    echo "background: the Debian 13 compile: exit $rc, $(( $(date +%s) - started )) s," \
      "CPU $(( ($(stage_clock_children_ticks) - ticks) / $(getconf CLK_TCK) )) s"' \
    bash "$SANDBOX_ROOT" "$BUILD_DIR/package-test" "$package_roots_fetched" \
    </dev/null >"$log_file" 2>&1 &
  package_roots_pid=$!
}

# Waits for the Debian roots (not for the compile that follows them).
package_roots_wait_fetched() {
  [ -n "$package_roots_pid" ] || return 0
  log "waiting for the Debian roots' prefetch (log: $BUILD_DIR/package-prefetch.log)"
  while [ ! -e "$package_roots_fetched" ] && kill -0 "$package_roots_pid" 2>/dev/null; do
    sleep 1
  done
  [ -e "$package_roots_fetched" ] ||
    log "the prefetch failed; the package stage makes what is missing"
}

# On an early exit, or at the end: stops whatever of it still runs (mmdebstrap, the compile).
package_roots_stop() {
  [ -n "$package_roots_pid" ] || return 0
  kill -TERM -- "-$package_roots_pid" 2>/dev/null || true
  wait "$package_roots_pid" 2>/dev/null || true
  package_roots_pid=
}
