# Sourced by tools/run and tools/test: images built while the server compiles. An image
# (mmdebstrap, minutes) needs only the image libraries, so a small helper binary (mcp-sandbox-image-build,
# `mcp-sandbox image build` alone, about a minute to compile) is built first and started in the
# background; the server's compile runs meanwhile. Its output goes to a log, not to stdout,
# which carries the MCP protocol once the server starts. Needs common.sh.

IMAGE_BUILDER_TARGET=mcp-sandbox-image-build
image_build_pid=
image_build_log=

# background_image_build_start BUILD_DIR [VARIANT...]: compiles the helper and starts it in a
# process group of its own, so a failed compile can stop it and its mmdebstrap together. With
# VARIANTs (tools/test: small default) it builds each in turn; without, the default image.
# The caller owns the EXIT trap: it calls background_image_build_stop from it.
background_image_build_start() {
  local dir=$1; shift
  SANDBOX_BUILD_TARGETS=$IMAGE_BUILDER_TARGET build_project "$dir"
  image_build_log=$dir/image-build.log
  local what="the default image"
  [ $# -eq 0 ] || what="the images $*"
  log "building $what in the background (log: $image_build_log)"
  # Without job control a background job leads no group, so setsid execs in place: $! is the
  # group's id (the helper's, or the shell that runs the variants one after another).
  if [ $# -eq 0 ]; then
    setsid "$dir/$IMAGE_BUILDER_TARGET" </dev/null >"$image_build_log" 2>&1 &
  else
    setsid sh -c 'bin=$1; shift; for v; do "$bin" --variant "$v" || exit; done' sh \
      "$dir/$IMAGE_BUILDER_TARGET" "$@" </dev/null >"$image_build_log" 2>&1 &
  fi
  image_build_pid=$!
}

# On an early exit (the server's compile failed): stops the image build, mmdebstrap included;
# the next `image build` removes what it left (RemoveStaleBuildDirs).
background_image_build_stop() {
  [ -n "$image_build_pid" ] || return 0
  log "stopping the background image build"
  kill -TERM -- "-$image_build_pid" 2>/dev/null || true
  wait "$image_build_pid" 2>/dev/null || true
  image_build_pid=
}

# Waits for the image build and says how it went: its summary line, or its last lines and
# the exit code. Returns the helper's exit code.
background_image_build_finish() {
  [ -n "$image_build_pid" ] || return 0
  local rc=0
  log "waiting for the image build"
  wait "$image_build_pid" || rc=$?
  image_build_pid=
  if [ "$rc" -eq 0 ]; then
    tail -n 1 "$image_build_log" >&2
  else
    log "the default image could not be built (exit $rc); the last lines of $image_build_log:"
    tail -n 20 "$image_build_log" | sed 's/^/  /' >&2
  fi
  return "$rc"
}
