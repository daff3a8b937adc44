#!/usr/bin/env bash
# Slow-calls benchmark (issue 31, point 3): N concurrent calls, each to an
# upstream that answers after DELAY, held by nginx as a reverse proxy, the
# Go floor (bench/floor: a bare net/http hop) and httptools serve (REST
# invoke), one after the other in each round, a fresh process each time.
#   bash bench/slow.sh [N=10000] [seconds=20] [rounds=3] [delay=2s] [h1|h2]
# h1: the upstream speaks HTTP/1.1 in clear, one connection a call in
# flight. h2: it speaks HTTPS (HTTP/2 by ALPN, as public APIs do) and the
# Go hops multiplex their calls on a few connections; nginx still speaks
# HTTP/1.1 to it. A Go process holding N client connections and N upstream
# ones needs 2N descriptors: past the machine's hard limit (ulimit -Hn),
# only h2 can hold N.
# Per row: requests/s, latency p50/p99 (wrk), the latency the hop adds to
# DELAY, refusals (non-2xx answers and socket errors) and the memory a
# waiting call costs: (the peak RSS under load - the RSS after a warm-up)
# / N, sampled every 100 ms. The goals read the median over the rounds of
# the per-round ratio of serve to the floor (they ran back to back).
# Everything listens on 127.0.0.1 and stops when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${1:-10000}
SECS=${2:-20}
ROUNDS=${3:-3}
DELAY=${4:-2s}
PROTO=${5:-h1}
ulimit -n "$(ulimit -Hn)"
# N connections arrive at once: a listen queue of the default 4,096 drops
# their SYNs and the first requests wait out the retransmit (seconds), which
# is the kernel's setting, not the hop's latency. Raised where allowed.
sysctl -qw net.core.somaxconn=$((N + 1024)) net.ipv4.tcp_max_syn_backlog=$((N + 1024)) 2>/dev/null || true
work=$(mktemp -d /tmp/httptools-slow.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for c in wrk nginx; do
  command -v $c >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx-light >/dev/null; }
done
go build -o "$work/httptools" ./cmd/httptools
go build -o "$work/upstream" ./bench/upstream
go build -o "$work/floor" ./bench/floor

UP=$(free_port)
scheme=http
if [ "$PROTO" = h2 ]; then
  scheme=https
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
  "$work/upstream" -addr "127.0.0.1:$UP" -delay "$DELAY" -tls "$work/cert.pem,$work/key.pem" & pids+=($!)
  export SSL_CERT_FILE=$work/cert.pem # the Go hops trust the upstream's certificate
else
  "$work/upstream" -addr "127.0.0.1:$UP" -delay "$DELAY" & pids+=($!)
fi
bench_tool "$work/tools" "$scheme://127.0.0.1:$UP" ',"timeoutMs":30000'
cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"input":{"id":"1"}}'
wrk.headers["Content-Type"] = "application/json"
if os.getenv("KEY") ~= "" then wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY") end
LUA
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# peak PID...: the largest summed RSS of the processes, every 100 ms, until
# the file stop appears.
peak() {
  local max=0 s p
  while [ ! -f "$work/stop" ]; do
    s=0; for p in "$@"; do s=$((s + $(rss "$p"))); done
    [ "$s" -gt "$max" ] && max=$s
    sleep 0.1
  done
  echo "$max"
}
wait_http() { for _ in $(seq 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; echo "no answer at $1" >&2; return 1; }

start() { # row → sets PIDS (the processes whose memory the row costs), URL, KEY
  local port; port=$(free_port); KEY=
  case $1 in
    nginx)
      cat > "$work/nginx.conf" <<CONF
worker_processes 2;
worker_rlimit_nofile $(ulimit -Hn);
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections $(( (N + 100) * 2 )); }
http {
  access_log off;
  upstream api { server 127.0.0.1:$UP; keepalive $N; }
  server {
    listen 127.0.0.1:$port backlog=$N;
    location / { proxy_pass $scheme://api; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_read_timeout 60s; }
  }
}
CONF
      nginx -c "$work/nginx.conf" -p "$work" -g 'daemon on;'
      wait_http "http://127.0.0.1:$port/items/1"
      PIDS="$(cat "$work/nginx.pid") $(pgrep -P "$(cat "$work/nginx.pid")" | tr '\n' ' ')"
      URL="http://127.0.0.1:$port/items/1"; LUA= ;;
    floor)
      "$work/floor" -addr "127.0.0.1:$port" -upstream "$scheme://127.0.0.1:$UP" -idle "$N" & PIDS=$!
      wait_http "http://127.0.0.1:$port/"
      URL="http://127.0.0.1:$port/invoke"; LUA=$work/post.lua ;;
    serve)
      rm -f "$work/serve.db"*
      "$work/httptools" serve --tools "$work/tools" --db "sqlite:$work/serve.db" --addr "127.0.0.1:$port" \
        --allow-cidr 127.0.0.0/8 --log-format json ${SERVE_FLAGS:-} > "$work/serve.out" 2> "$work/serve.log" & PIDS=$!
      for _ in $(seq 200); do grep -q "API key" "$work/serve.out" 2>/dev/null && break; sleep 0.05; done
      KEY=$(grep "API key for tenant local" "$work/serve.out" | awk '{print $NF}')
      URL="http://127.0.0.1:$port/v1/tools/bench.get-issue/invoke"; LUA=$work/post.lua ;;
  esac
}
stop() {
  if [ "$1" = nginx ]; then kill "$(cat "$work/nginx.pid")"; sleep 0.5; else kill $PIDS; wait $PIDS 2>/dev/null || true; fi
}
row() {
  local name=$1 base top out
  start "$name"
  # warm-up: a few calls, so the baseline holds what any process serving
  # has (its pools, its caches), then the baseline
  KEY=$KEY wrk -t 1 -c 8 -d 3s --timeout 30s ${LUA:+-s "$LUA"} "$URL" >/dev/null
  sleep 0.5
  base=0; for p in $PIDS; do base=$((base + $(rss "$p"))); done
  rm -f "$work/stop"; peak $PIDS > "$work/peak" &
  local pk=$!
  out=$(KEY=$KEY wrk -t 2 -c "$N" -d "${SECS}s" --timeout 60s --latency ${LUA:+-s "$LUA"} "$URL")
  touch "$work/stop"; wait $pk; top=$(cat "$work/peak")
  stop "$name"
  python3 - "$name" "$base" "$top" "$N" <<PY
import re, sys, json
name, base, top, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
out = """$out"""
def ms(v):
    num, unit = re.match(r"([\d.]+)(us|ms|s|m)", v).groups()
    return float(num) * {"us": 1e-3, "ms": 1, "s": 1e3, "m": 6e4}[unit]
lat = {p: ms(v) for p, v in re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M)}
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
non2xx = int((re.search(r"Non-2xx or 3xx responses: (\d+)", out) or [0, 0])[1])
m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
sock = sum(int(x) for x in m.groups()) if m else 0  # a Match cannot be sliced: wrk's socket errors crashed this
print(json.dumps({"row": name, "rps": rps, "p50": lat["50"], "p99": lat["99"], "refused": non2xx + sock, "base_kb": base, "peak_kb": top, "kib_per_call": (top - base) / n}))
PY
}
echo "slow calls: $N concurrent for ${SECS}s per row and round, $ROUNDS rounds, upstream answers after $DELAY ($PROTO), 2 cores shared by everything; serve flags: ${SERVE_FLAGS:-(defaults)}; $(date -u +%F)" >&2
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order=(floor serve nginx); else order=(serve floor nginx); fi
  for r in "${order[@]}"; do row "$r"; done
done > "$work/results"
python3 - "$work/results" "$DELAY" <<'PY'
import json, statistics, sys
d = sys.argv[2]
delay = float(d[:-2]) if d.endswith("ms") else float(d[:-1]) * 1000
runs = {}
for line in open(sys.argv[1]):
    x = json.loads(line); runs.setdefault(x["row"], []).append(x)
labels = {"nginx": "nginx reverse proxy", "floor": "Go floor (bench/floor)", "serve": "httptools serve, REST invoke"}
print("| path | req/s | p50 ms | p99 ms (rounds) | added p50 / p99 ms | refusals | KiB per waiting call (rounds) | peak RSS MiB |")
print("|---|---|---|---|---|---|---|---|")
med = lambda v: statistics.median(v)
for k in ("nginx", "floor", "serve"):
    v = runs[k]
    p99s = ", ".join(f"{x['p99']:.0f}" for x in v)
    kibs = ", ".join(f"{x['kib_per_call']:.1f}" for x in v)
    print(f"| {labels[k]} | {med([x['rps'] for x in v]):.0f} | {med([x['p50'] for x in v]):.0f} | {med([x['p99'] for x in v]):.0f} ({p99s}) | "
          f"{med([x['p50'] for x in v]) - delay:.0f} / {med([x['p99'] for x in v]) - delay:.0f} | {sum(x['refused'] for x in v)} | "
          f"{med([x['kib_per_call'] for x in v]):.1f} ({kibs}) | {med([x['peak_kb'] for x in v]) / 1024:.0f} |")
def paired(a, b, f):
    r = sorted(f(x) / f(y) for x, y in zip(runs[a], runs[b]))
    return f"{statistics.median(r):.2f} (per round {', '.join(f'{x:.2f}' for x in r)})"
print()
print(f"serve / Go floor, memory per waiting call: {paired('serve', 'floor', lambda x: x['kib_per_call'])}, goal <= 1.2")
print(f"serve / Go floor, p99: {paired('serve', 'floor', lambda x: x['p99'])}, goal <= 1.1")
print(f"serve / Go floor, added p99 (p99 - delay): {paired('serve', 'floor', lambda x: max(x['p99'] - delay, 0.1))}")
print(f"serve / nginx, memory per waiting call: {paired('serve', 'nginx', lambda x: x['kib_per_call'])}")
PY
