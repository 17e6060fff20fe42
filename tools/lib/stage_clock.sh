# Sourced by tools/test: each stage's start, with the machine's CPU time at that moment, so the
# end of the run can say where the time went and what bound each stage. A stage whose CPU time
# comes near nproc × its wall time waited for the CPU (less work is what shortens it); one far
# below waited for something else (a VM's boot, a download, a timeout a test runs into), and the
# background at idle priority takes the rest. The CPU time is the machine's, every process's
# user and system time from /proc/stat: the stage's own work and the idle builds beside it
# (tools/lib/idle_builds.sh), and on a shared machine anyone else's too. Each background job
# prints its own CPU time apart (idle_builds.sh, background_package_roots.sh): a stage's own
# share cannot be told from the shell's children's times, as bash adds a background job's whole
# time when it reaps it, in whatever stage that is.

stage_clock_names=() stage_clock_starts=() stage_clock_cpu=()

# The machine's busy CPU time so far, in clock ticks: user, nice, system, irq, softirq, steal
# (guest time is inside user).
stage_clock_busy_ticks() {
  awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# The CPU time of this shell's ended children, in clock ticks (user and system: cutime and
# cstime of /proc/PID/stat): what the jobs it ran and waited for took of the CPU. The background
# jobs use it for their own line (idle_builds.sh, background_package_roots.sh).
stage_clock_children_ticks() { awk '{ sub(/.*\) /, ""); print $14 + $15 }' "/proc/$$/stat"; }

# stage_clock_mark NAME: NAME starts now (and the stage before it ends).
stage_clock_mark() {
  stage_clock_names+=("$1")
  stage_clock_starts+=("$SECONDS")
  stage_clock_cpu+=("$(stage_clock_busy_ticks)")
}

# stage_clock_report: one line per stage (its start, wall time, the machine's CPU time in it and
# that as a share of every CPU's), then the whole run's, and the line "stage starts: ..." that
# tools/lib/fresh_run.sh prints.
stage_clock_report() {
  local ticks_per_s cpus end_s end_ticks i next_s next_ticks starts=()
  ticks_per_s=$(getconf CLK_TCK) cpus=$(nproc)
  end_s=$SECONDS end_ticks=$(stage_clock_busy_ticks)
  # stage_clock_line NAME START WALL_S CPU_TICKS
  stage_clock_line() {
    local cpu=$(($4 / ticks_per_s))
    printf 'stage %-8s %8s %5d s, CPU %6d s (%3d %% of %d CPUs)\n' "$1" "$2" "$3" \
      "$cpu" $(($3 > 0 ? 100 * cpu / ($3 * cpus) : 0)) "$cpus"
  }
  log "stage times (wall; the machine's CPU time):"
  for i in "${!stage_clock_names[@]}"; do
    next_s=$end_s next_ticks=$end_ticks
    if [ $((i + 1)) -lt ${#stage_clock_names[@]} ]; then
      next_s=${stage_clock_starts[$((i + 1))]} next_ticks=${stage_clock_cpu[$((i + 1))]}
    fi
    log "$(stage_clock_line "${stage_clock_names[i]}" "at ${stage_clock_starts[i]}:" \
      $((next_s - stage_clock_starts[i])) $((next_ticks - stage_clock_cpu[i])))"
    starts+=("${stage_clock_names[i]} at ${stage_clock_starts[i]}s")
  done
  if [ ${#stage_clock_names[@]} -gt 0 ]; then
    log "$(stage_clock_line all "" $((end_s - stage_clock_starts[0])) \
      $((end_ticks - stage_clock_cpu[0])))"
  fi
  log "stage starts: ${starts[*]}; end at ${end_s}s"
}
