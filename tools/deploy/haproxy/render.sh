#!/usr/bin/env bash
# tools/deploy/haproxy/render.sh: prints the router's HAProxy configuration, rendered from
# mcp-router.cfg.in beside this script. The one renderer of the one template: the scale-out
# test, the benchmark, the Swarm definition and the Kubernetes ConfigMap all come from it.
#
#   render.sh [--bind ADDR:PORT] [--admin-socket PATH] --server NAME=HOST:PORT [...]
#   render.sh [--bind ADDR:PORT] [--admin-socket PATH] \
#             --statefulset NAME --service SVC --namespace NS [--replicas N] [--port P] \
#             [--cluster-domain DOMAIN]
#
# --server: one replica, NAME its SANDBOX_REPLICA_ID (repeat for each).
# --statefulset: replicas r0..r(N-1) at the StatefulSet's stable DNS names
#   NAME-i.SVC.NS.svc.DOMAIN, resolved at run time (a pod that does not exist yet is simply
#   DOWN, so list as many as you will ever scale to; default 16). HAProxy's resolver does not
#   use resolv.conf's search list, hence the full names.
# Defaults: --bind :8080, --admin-socket /run/haproxy/admin.sock, --port 8080,
#   --cluster-domain cluster.local.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

bind=:8080 admin=/run/haproxy/admin.sock
servers=() statefulset= service= namespace= replicas=16 port=8080 domain=cluster.local
while [ $# -gt 0 ]; do
  case $1 in
    --bind) bind=$2; shift 2 ;;
    --admin-socket) admin=$2; shift 2 ;;
    --server) servers+=("$2"); shift 2 ;;
    --statefulset) statefulset=$2; shift 2 ;;
    --service) service=$2; shift 2 ;;
    --namespace) namespace=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --cluster-domain) domain=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "render.sh: unknown argument $1" >&2; usage ;;
  esac
done

# A replica id as the server accepts it (and as HAProxy needs a server name): [a-z][a-z0-9-]*,
# no "_", which separates it from the rest of a handle.
# At most 63 characters (a DNS label), so a StatefulSet pod's name can be one.
valid_id() { [[ $1 =~ ^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$ ]]; }

server_lines=() ready_lines=() issuer_lines=() resolvers=
# The readiness mirror of replica $1 at address $2 (extra server options in $3): a backend
# of its own whose server tracks it, and the rule that sends a 2025 request to its transport's
# issuer only while nbsrv says that issuer is ready (template, rule 5).
add_ready() {
  ready_lines+=("backend ready-$1" "    option httpchk" "    http-check disable-on-404" "    server $1 $2 track replicas/$1$3")
  issuer_lines+=("    http-request set-var(txn.replica) str($1) if is_mcp METH_POST !routed { var(txn.issuer) -m str $1 } { nbsrv(ready-$1) gt 0 }")
}
if [ -n "$statefulset" ]; then
  [ -n "$service" ] && [ -n "$namespace" ] || { echo "render.sh: --statefulset needs --service and --namespace" >&2; exit 2; }
  [ ${#servers[@]} -eq 0 ] || { echo "render.sh: --server and --statefulset exclude each other" >&2; exit 2; }
  for ((i = 0; i < replicas; i++)); do
    server_lines+=("    server r$i $statefulset-$i.$service.$namespace.svc.$domain:$port check resolvers cluster init-addr none")
    add_ready "r$i" "$statefulset-$i.$service.$namespace.svc.$domain:$port" " resolvers cluster init-addr none"
  done
  # hold nx/obsolete: a name that briefly stops resolving (a pod being replaced) keeps its last
  # address for a while instead of flapping; the health check decides whether anyone answers.
  resolvers=$(cat <<'EOF'
resolvers cluster
    parse-resolv-conf
    accepted_payload_size 8192
    hold valid 10s
    hold nx 30s
    hold obsolete 30s
EOF
)
else
  [ ${#servers[@]} -gt 0 ] || { echo "render.sh: no --server and no --statefulset" >&2; exit 2; }
  for entry in "${servers[@]}"; do
    name=${entry%%=*} address=${entry#*=}
    valid_id "$name" || { echo "render.sh: '$name' is not a replica id (a DNS label: [a-z][a-z0-9-]*, at most 63, no trailing -)" >&2; exit 2; }
    [[ $address == *:* ]] || { echo "render.sh: $entry: want NAME=HOST:PORT" >&2; exit 2; }
    server_lines+=("    server $name $address check")
    add_ready "$name" "$address" ""
  done
fi

SERVERS=$(printf '%s\n' "${server_lines[@]}") READY=$(printf '%s\n' "${ready_lines[@]}") \
  ISSUER=$(printf '%s\n' "${issuer_lines[@]}") RESOLVERS=$resolvers BIND=$bind ADMIN=$admin \
  awk '
    NR == 1         { print "# Rendered by tools/deploy/haproxy/render.sh from mcp-router.cfg.in: edit those, not this." }
    /^#/            { print; next }
    /^@SERVERS@$/   { print ENVIRON["SERVERS"]; next }
    /^@READY_BACKENDS@$/ { print ENVIRON["READY"]; next }
    /^@ISSUER_RULES@$/ { print ENVIRON["ISSUER"]; next }
    /^@RESOLVERS@$/ { if (ENVIRON["RESOLVERS"] != "") print ENVIRON["RESOLVERS"]; next }
    { gsub(/@BIND@/, ENVIRON["BIND"]); gsub(/@ADMIN_SOCKET@/, ENVIRON["ADMIN"]); print }
  ' "$here/mcp-router.cfg.in"
