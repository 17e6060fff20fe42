# Sourced: http_server_url LOG — waits (up to 10 s) for `mcp-sandbox serve --http 127.0.0.1:0`
# started with its stderr in LOG to say where it listens, and prints that URL (nothing if it
# never did). Used by the benchmarks and the soak, which start a server on any free port.
http_server_url() {
  local log=$1 url=
  for _ in $(seq 1 100); do
    url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*/mcp\).*|\1|p' "$log" | head -1)
    [ -n "$url" ] && break
    sleep 0.1
  done
  printf '%s' "$url"
}
