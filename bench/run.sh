#!/usr/bin/env bash
# Load benchmark: one table, in one run, of requests/s, p50, p99 and RSS for
# nginx as a reverse proxy, the Go floor (bench/floor: a bare net/http hop
# with the JSON envelope), httptools REST invoke, MCP tools/call with 1 tool
# and with 1000 tools loaded, MCP 2026-07-28 tools/call, tools/list and
# server/discover — all in front of the same local upstream that returns
# 1 KiB of JSON, under the same concurrent load — and the ratios against
# issue 11's and issue 40's goals.
#   bash bench/run.sh [concurrency] [seconds] [rounds]
#   ROWS="rest mcp-1 mcp-2026" bash bench/run.sh …   only those rows (in that
#   order, reversed every other round), without the proxy, floor and reload rows
# Every row runs once per round, rounds back to back; the table gives each
# row's median req/s and p99 over the rounds, with their range, and each
# goal's ratio is the median over the rounds of the ratio of two rows run
# next to each other (see rows below).
# Installs nginx from Debian's packages when it is missing. Everything listens
# on 127.0.0.1 and stops when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
CONC=${1:-32}
SECS=${2:-10}
ROUNDS=${3:-3}
work=$(mktemp -d /tmp/httptools-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

if ! command -v nginx >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
fi
go build -o "$work/httptools" ./cmd/httptools
go build -o "$work/upstream" ./bench/upstream
go build -o "$work/load" ./bench/load
go build -o "$work/floor" ./bench/floor

UP=$(free_port); SVC=$(free_port); NGX=$(free_port); FLOOR=$(free_port); MANY=$(free_port)

"$work/upstream" -addr "127.0.0.1:$UP" & pids+=($!)

bench_tool "$work/tools" "http://127.0.0.1:$UP"
"$work/httptools" serve --tools "$work/tools" --db "sqlite:$work/bench.db" --addr "127.0.0.1:$SVC" \
  --allow-cidr 127.0.0.0/8 --log-format json ${PPROF:+--pprof $PPROF} > "$work/serve.out" 2> "$work/serve.log" & pids+=($!)
SVC_PID=$!
"$work/floor" -addr "127.0.0.1:$FLOOR" -upstream "http://127.0.0.1:$UP" & pids+=($!)
FLOOR_PID=$!
# The floor again with serve's garbage-collector setting (GOGC=400), so the
# ratio can be read both ways.
FLOOR4=$(free_port)
GOGC=400 "$work/floor" -addr "127.0.0.1:$FLOOR4" -upstream "http://127.0.0.1:$UP" & pids+=($!)
FLOOR4_PID=$!
# The same tool among 999 others.
mkdir -p "$work/many"
cp "$work/tools/get.json" "$work/many/"
for i in $(seq -w 1 999); do
  sed "s/bench.get-issue/bench.other-$i/" "$work/tools/get.json" > "$work/many/other-$i.json"
done
"$work/httptools" serve --tools "$work/many" --db "sqlite:$work/many.db" --addr "127.0.0.1:$MANY" \
  --allow-cidr 127.0.0.0/8 --log-format json > "$work/many.out" 2> "$work/many.log" & pids+=($!)
MANY_PID=$!

cat > "$work/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  upstream api { server 127.0.0.1:$UP; keepalive 64; }
  server {
    listen 127.0.0.1:$NGX;
    location / { proxy_pass http://api; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
CONF
nginx -c "$work/nginx.conf" -p "$work" -g 'daemon on;'

for i in $(seq 100); do
  grep -q "API key" "$work/serve.out" 2>/dev/null && grep -q "API key" "$work/many.out" 2>/dev/null && curl -sf "http://127.0.0.1:$NGX/items/1" >/dev/null && break
  sleep 0.1
done
KEY=$(grep "API key for tenant local" "$work/serve.out" | awk '{print $NF}')
MKEY=$(grep "API key for tenant local" "$work/many.out" | awk '{print $NF}')
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

INVOKE='{"input":{"id":"1"}}'
CALL='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench.get-issue","arguments":{"id":"1"}}}'
MCPH=(-H "Accept: application/json, text/event-stream" -H "MCP-Protocol-Version: 2025-11-25")
# MCP 2026-07-28: each request carries its version, client and capabilities
# in _meta, and its method (and tool) in headers.
META26='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
CALL26='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench.get-issue","arguments":{"id":"1"},'"$META26"'}}'
LIST26='{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{'"$META26"'}}'
DISCOVER26='{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{'"$META26"'}}'
MCPH26=(-H "Accept: application/json, text/event-stream" -H "MCP-Protocol-Version: 2026-07-28")
# ticks: the CPU time (user + system, in clock ticks) the given processes
# have used so far.
ticks() {
  local t=0 p u s
  for p in "$@"; do
    read -r u s < <(awk '{print $14, $15}' "/proc/$p/stat")
    t=$((t + u + s))
  done
  echo "$t"
}
run() { # name, the pids whose CPU the row costs, then load's arguments
  local name=$1 pids=$2 a b out; shift 2
  "$work/load" "$@" -c "$CONC" -d 2s >/dev/null # warm-up
  a=$(ticks $pids)
  out=$("$work/load" "$@" -c "$CONC" -d "${SECS}s")
  b=$(ticks $pids)
  echo "$name $((b - a)) $out"
}
echo "load: $CONC concurrent workers for ${SECS}s per row and round, $ROUNDS rounds, 1 KiB JSON upstream, 2 cores shared by everything; $(date -u +%F)"
# The rows a goal compares run back to back, and their order flips every
# round (floor, REST, MCP, MCP with 1000 tools; then the other way round),
# so that a drift of the shared machine's speed — it moves by 10–25%
# within a minute here, the upstream's own CPU per request with it — falls
# on both sides of a ratio alike; the goals are read on the median of the
# per-round ratios.
rows=(floor rest mcp-1 mcp-2026 mcp-1000 mcp-2026-list mcp-2026-discover)
[ -n "${ROWS:-}" ] && read -r -a rows <<< "$ROWS"
row() {
  case $1 in
    floor) run floor "$FLOOR_PID" -url "http://127.0.0.1:$FLOOR/invoke" -method POST -body "$INVOKE" ;;
    rest) run rest "$SVC_PID" -url "http://127.0.0.1:$SVC/v1/tools/bench.get-issue/invoke" -method POST -body "$INVOKE" -key "$KEY" ;;
    mcp-1) run mcp-1 "$SVC_PID" -url "http://127.0.0.1:$SVC/mcp" -method POST -body "$CALL" -key "$KEY" "${MCPH[@]}" ;;
    mcp-1000) run mcp-1000 "$MANY_PID" -url "http://127.0.0.1:$MANY/mcp" -method POST -body "$CALL" -key "$MKEY" "${MCPH[@]}" ;;
    mcp-2026) run mcp-2026 "$SVC_PID" -url "http://127.0.0.1:$SVC/mcp" -method POST -body "$CALL26" -key "$KEY" "${MCPH26[@]}" \
      -H "Mcp-Method: tools/call" -H "Mcp-Name: bench.get-issue" ;;
    mcp-2026-list) run mcp-2026-list "$SVC_PID" -url "http://127.0.0.1:$SVC/mcp" -method POST -body "$LIST26" -key "$KEY" "${MCPH26[@]}" -H "Mcp-Method: tools/list" ;;
    mcp-2026-discover) run mcp-2026-discover "$SVC_PID" -url "http://127.0.0.1:$SVC/mcp" -method POST -body "$DISCOVER26" -key "$KEY" "${MCPH26[@]}" -H "Mcp-Method: server/discover" ;;
    *) echo "unknown row $1" >&2; exit 2 ;;
  esac
}
for round in $(seq "$ROUNDS"); do
  # PPROF=127.0.0.1:6060 also writes a CPU profile of serve during the first REST row.
  [ -n "${PPROF:-}" ] && [ "$round" = 1 ] && (sleep 3; curl -s "http://$PPROF/debug/pprof/profile?seconds=$((SECS-2))" > /tmp/httptools-serve.pprof) &
  order=("${rows[@]}")
  if [ $((round % 2)) = 0 ]; then order=(); for ((i = ${#rows[@]} - 1; i >= 0; i--)); do order+=("${rows[i]}"); done; fi
  for r in "${order[@]}"; do row "$r"; done
  [ -n "${ROWS:-}" ] && continue
  run nginx "$(cat "$work/nginx.pid") $(pgrep -P "$(cat "$work/nginx.pid")" | tr "\n" " ")" -url "http://127.0.0.1:$NGX/items/1"
  run floor-gogc400 "$FLOOR4_PID" -url "http://127.0.0.1:$FLOOR4/invoke" -method POST -body "$INVOKE"
  # Reload of 1000 tools under load: the same REST row with and without a
  # SIGHUP every 250 ms.
  run rest-1000 "$MANY_PID" -url "http://127.0.0.1:$MANY/v1/tools/bench.get-issue/invoke" -method POST -body "$INVOKE" -key "$MKEY"
  (while kill -0 "$MANY_PID" 2>/dev/null; do kill -HUP "$MANY_PID"; sleep 0.25; done) & hup=$!
  run rest-1000-reload "$MANY_PID" -url "http://127.0.0.1:$MANY/v1/tools/bench.get-issue/invoke" -method POST -body "$INVOKE" -key "$MKEY"
  kill "$hup" 2>/dev/null || true
done > "$work/results"
{
  echo "rss-floor $(rss "$FLOOR_PID")"
  echo "rss-serve $(rss "$SVC_PID")"
  echo "rss-many $(rss "$MANY_PID")"
  sleep 0.3
  echo "reloads $(grep -c '"msg":"reloaded"' "$work/many.log" || true)"
} >> "$work/results"
python3 - "$work/results" "$(getconf CLK_TCK)" <<'PY'
import json, statistics, sys
tick_us = 1e6 / int(sys.argv[2])
runs, rss, reloads = {}, {}, 0
for line in open(sys.argv[1]):
    name, rest = line.split(" ", 1)
    if name == "reloads":
        reloads = int(rest)
    elif name.startswith("rss-"):
        rss[name[4:]] = int(rest) / 1024
    else:
        ticks, rest = rest.split(" ", 1)
        x = json.loads(rest)
        x["cpu_us"] = int(ticks) * tick_us / max(1, x["requests"])
        runs.setdefault(name, []).append(x)
med = {k: {m: statistics.median(x[m] for x in v) for m in ("rps", "p50_ms", "p99_ms", "cpu_us")} | {"errors": sum(x["errors"] for x in v)} for k, v in runs.items()}
mem = {"nginx": None, "floor": rss["floor"], "floor-gogc400": None, "rest": rss["serve"], "mcp-1": rss["serve"], "mcp-1000": rss["many"], "rest-1000": rss["many"], "rest-1000-reload": rss["many"],
       "mcp-2026": rss["serve"], "mcp-2026-list": rss["serve"], "mcp-2026-discover": rss["serve"]}
labels = {"nginx": "nginx reverse proxy", "floor": "Go floor (bench/floor)", "floor-gogc400": "Go floor, GOGC=400 (serve's default)", "rest": "httptools REST invoke", "mcp-1": "httptools MCP tools/call, 1 tool",
          "mcp-1000": "httptools MCP tools/call, 1000 tools", "rest-1000": "httptools REST invoke, 1000 tools", "rest-1000-reload": "the same, SIGHUP reload every 250 ms",
          "mcp-2026": "httptools MCP 2026-07-28 tools/call", "mcp-2026-list": "httptools MCP 2026-07-28 tools/list", "mcp-2026-discover": "httptools MCP 2026-07-28 server/discover"}
print("| path | req/s (median) | req/s range | p50 ms | p99 ms (median) | p99 range | CPU µs/req | RSS MiB | errors |")
print("|---|---|---|---|---|---|---|---|---|")
for k in ("nginx", "floor", "floor-gogc400", "rest", "mcp-1", "mcp-2026", "mcp-2026-list", "mcp-2026-discover", "mcp-1000", "rest-1000", "rest-1000-reload"):
    if k not in runs:
        continue
    x, m, v = med[k], mem[k], runs[k]
    rr = f"{min(y['rps'] for y in v):.0f}–{max(y['rps'] for y in v):.0f}"
    pr = f"{min(y['p99_ms'] for y in v):.2f}–{max(y['p99_ms'] for y in v):.2f}"
    print(f"| {labels[k]} | {x['rps']:.0f} | {rr} | {x['p50_ms']:.2f} | {x['p99_ms']:.2f} | {pr} | {x['cpu_us']:.0f} | {'-' if m is None else f'{m:.1f}'} | {x['errors']} |")
def ratio(a, b, what):
    return med[a][what] / med[b][what]
def pairs(a, b, what):
    # the ratio within each round: the two rows ran back to back
    return sorted(x[what] / y[what] for x, y in zip(runs[a], runs[b]))
def fmt(v):
    return ", ".join(f"{x:.2f}" for x in v)
def paired(a, b, what):
    # the median of the per-round ratios (the judged figure: the two rows
    # ran back to back), then the ratio of the medians, then each round's
    p = pairs(a, b, what)
    return f"{statistics.median(p):.2f} (ratio of the medians {ratio(a, b, what):.2f}; per round {fmt(p)})"
print()
print("Ratios: the median of the per-round ratios of two rows run back to back, in flipped order every other round.")
for k, what in (("mcp-1", "MCP 2025-11-25 tools/call"), ("mcp-2026", "MCP 2026-07-28 tools/call"), ("mcp-2026-list", "MCP 2026-07-28 tools/list"), ("mcp-2026-discover", "MCP 2026-07-28 server/discover")):
    if k in runs and "rest" in runs:
        print(f"{what} / REST: CPU per call {paired(k,'rest','cpu_us')}, goal <= 1.15; req/s {paired(k,'rest','rps')}, goal >= 0.9; p99 {paired(k,'rest','p99_ms')}, goal <= 1.2")
if "floor" not in runs or "nginx" not in runs:
    sys.exit(0)
print(f"REST / Go floor: req/s {paired('rest','floor','rps')}, goal >= 0.9")
print(f"REST / Go floor: p99 {paired('rest','floor','p99_ms')}, goal <= 1.2")
print(f"REST / Go floor at GOGC=400 (not adjacent): req/s {paired('rest','floor-gogc400','rps')}")
print(f"MCP / REST: req/s {paired('mcp-1','rest','rps')}, goal >= 0.8")
print(f"MCP / REST: p99 {paired('mcp-1','rest','p99_ms')}, goal <= 1.5")
print(f"MCP 1000 tools / 1 tool: req/s {paired('mcp-1000','mcp-1','rps')}, goal within 10%: >= 0.9")
print(f"REST during reloads / without ({reloads} reloads): p99 {paired('rest-1000-reload','rest-1000','p99_ms')}, goal <= 1.5; req/s {ratio('rest-1000-reload','rest-1000','rps'):.2f}")
print(f"CPU per request (the service's own process, user + system): REST / Go floor {paired('rest','floor','cpu_us')}; MCP / REST {ratio('mcp-1','rest','cpu_us'):.2f}")
print(f"REST / nginx: req/s {ratio('rest','nginx','rps'):.2f}, p99 {ratio('rest','nginx','p99_ms'):.2f}")
PY
