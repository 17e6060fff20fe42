#!/usr/bin/env bash
# tools/lib/dockerd.sh start|stop|status: a Docker daemon for the Docker half of the tests and
# benchmarks. `start` uses the daemon already answering on the socket if there is one; otherwise
# it starts Debian's dockerd in the background (no iptables, no bridge: sandboxes run with
# NetworkMode none) and waits for /_ping. `stop` stops only a daemon that `start` started
# (recorded by its pidfile). Idempotent. Needs root (the socket is root's).
#
# Environment: DOCKER_HOST (unix://PATH, default unix:///var/run/docker.sock),
#   SANDBOX_DOCKERD_STATE (pidfile + log dir, default /tmp/mcp-sandbox-dockerd),
#   SANDBOX_DOCKERD_DATA (data root, default /var/lib/docker),
#   SANDBOX_DOCKERD_RUNTIMES (extra OCI runtimes: daemon.json's "runtimes" object, e.g.
#   '{"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}'; a daemon already
#   answering is checked for each name, never restarted with other flags).
set -euo pipefail

socket=${DOCKER_HOST:-unix:///var/run/docker.sock}
case $socket in
  unix://*) socket=${socket#unix://} ;;
  *) echo "dockerd.sh: DOCKER_HOST must be unix://PATH, got $socket" >&2; exit 2 ;;
esac
state=${SANDBOX_DOCKERD_STATE:-/tmp/mcp-sandbox-dockerd}
data_root=${SANDBOX_DOCKERD_DATA:-/var/lib/docker}
pidfile=$state/dockerd.pid  # ours: "this script started that daemon" (dockerd keeps its own)
logfile=$state/dockerd.log
runtimes=${SANDBOX_DOCKERD_RUNTIMES:-}

log() { printf 'dockerd.sh: %s\n' "$*" >&2; }

# True when a daemon answers GET /_ping on the socket.
answers() {
  [ -S "$socket" ] || return 1
  if command -v curl >/dev/null; then
    curl -fsS --max-time 2 --unix-socket "$socket" http://docker/_ping >/dev/null 2>&1
  else
    timeout 5 docker -H "unix://$socket" version >/dev/null 2>&1
  fi
}

# True (and says which) when the daemon answering lacks a runtime SANDBOX_DOCKERD_RUNTIMES names.
lacks_runtimes() {
  [ -n "$runtimes" ] || return 1
  local missing
  missing=$(curl -fsS --max-time 5 --unix-socket "$socket" http://docker/info |
    python3 -c 'import json,sys
have = json.load(sys.stdin).get("Runtimes", {})
print(" ".join(name for name in json.loads(sys.argv[1]) if name not in have))' "$runtimes")
  [ -n "$missing" ] || return 1
  log "the daemon on $socket lacks the runtimes: $missing (SANDBOX_DOCKERD_RUNTIMES)"
  return 0
}

ours_running() {
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

start() {
  if answers; then
    log "a daemon answers on $socket"
    lacks_runtimes && return 1
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    log "no daemon on $socket and not root: cannot start dockerd"
    return 1
  fi
  if ! command -v dockerd >/dev/null; then
    log "dockerd is not installed (apt-get install docker.io)"
    return 1
  fi
  mkdir -p "$state" "$(dirname "$socket")"
  if ours_running; then
    log "dockerd (pid $(cat "$pidfile")) is starting"
  else
    rm -f "$pidfile"
    log "starting dockerd (log: $logfile)"
    local config_args=()
    if [ -n "$runtimes" ]; then
      python3 -c 'import json,sys; print(json.dumps({"runtimes": json.loads(sys.argv[1])}))' \
        "$runtimes" >"$state/daemon.json"
      config_args=(--config-file "$state/daemon.json")
    fi
    # setsid: the daemon outlives the shell that started it and is not in its process group.
    setsid dockerd --iptables=false --ip-masq=false --bridge=none \
      --host "unix://$socket" --data-root "$data_root" --pidfile "$state/daemon.pid" \
      --exec-root "$state/exec" "${config_args[@]}" </dev/null >"$logfile" 2>&1 &
    echo $! >"$pidfile"
  fi
  for _ in $(seq 1 150); do
    if answers; then
      log "dockerd is up on $socket"
      return 0
    fi
    if ! ours_running; then
      log "dockerd exited; last lines of $logfile:"
      tail -n 20 "$logfile" >&2 || true
      rm -f "$pidfile"
      return 1
    fi
    sleep 0.2
  done
  log "dockerd did not answer within 30 s; last lines of $logfile:"
  tail -n 20 "$logfile" >&2 || true
  return 1
}

stop() {
  if ! [ -f "$pidfile" ]; then
    log "no dockerd started by this script"
    return 0
  fi
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping dockerd (pid $pid)"
    kill -TERM "$pid"
    for _ in $(seq 1 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "dockerd did not stop within 30 s: SIGKILL"
      kill -KILL "$pid" || true
    fi
  fi
  rm -f "$pidfile"
  # dockerd bind-mounts the host's network namespace into its exec root and leaves it mounted
  # when it exits; the next start would reuse it, but nothing of ours stays mounted.
  if mountpoint -q "$state/exec/netns/default" 2>/dev/null; then
    umount "$state/exec/netns/default" || log "could not unmount $state/exec/netns/default"
  fi
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  status)
    if answers; then echo "up ($socket)"; else echo "down ($socket)"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
