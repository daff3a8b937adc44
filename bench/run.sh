#!/usr/bin/env bash
# Load benchmark: httptools serve vs nginx, both in front of the same local
# upstream that returns 1 KiB of JSON, under the same concurrent load.
#   bash bench/run.sh [concurrency] [seconds]
# Installs nginx from Debian's packages when it is missing. Everything listens
# on 127.0.0.1 and stops when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
CONC=${1:-32}
SECS=${2:-10}
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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
UP=$(free_port); SVC=$(free_port); NGX=$(free_port)

"$work/upstream" -addr "127.0.0.1:$UP" & pids+=($!)

mkdir -p "$work/tools"
cat > "$work/tools/get.json" <<JSON
{"id":"bench.get-issue","description":"Get an issue.","version":"1.0.0","mutating":false,
 "input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
 "output":{"type":"object"},
 "effects":[{"kind":"network","resource":"external:127.0.0.1"}],
 "spec":{"kind":"http","method":"GET","urlTemplate":"http://127.0.0.1:$UP/items/{id}"}}
JSON
"$work/httptools" serve --tools "$work/tools" --db "sqlite:$work/bench.db" --addr "127.0.0.1:$SVC" \
  --allow-cidr 127.0.0.0/8 --log-format json ${PPROF:+--pprof $PPROF} > "$work/serve.out" 2> "$work/serve.log" & pids+=($!)
SVC_PID=$!

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

for i in $(seq 50); do
  grep -q "API key" "$work/serve.out" 2>/dev/null && curl -sf "http://127.0.0.1:$NGX/items/1" >/dev/null && break
  sleep 0.1
done
KEY=$(grep "API key for tenant local" "$work/serve.out" | awk '{print $NF}')
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

echo "load: $CONC concurrent workers for ${SECS}s each, 1 KiB JSON upstream, 2 cores shared by everything"
# Warm both up, then measure.
"$work/load" -url "http://127.0.0.1:$NGX/items/1" -c "$CONC" -d 2s >/dev/null
"$work/load" -url "http://127.0.0.1:$SVC/v1/tools/bench.get-issue/invoke" -method POST -body '{"input":{"id":"1"}}' -key "$KEY" -c "$CONC" -d 2s >/dev/null
RSS0=$(rss "$SVC_PID")
NGINX=$("$work/load" -url "http://127.0.0.1:$NGX/items/1" -c "$CONC" -d "${SECS}s")
[ -n "${PPROF:-}" ] && (curl -s "http://$PPROF/debug/pprof/profile?seconds=$((SECS-2))" > /tmp/httptools-serve.pprof &)
OURS=$("$work/load" -url "http://127.0.0.1:$SVC/v1/tools/bench.get-issue/invoke" -method POST -body '{"input":{"id":"1"}}' -key "$KEY" -c "$CONC" -d "${SECS}s")
RSS1=$(rss "$SVC_PID")
python3 - "$NGINX" "$OURS" "$RSS0" "$RSS1" <<'PY'
import json, sys
n, o = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"{'':16}{'requests/s':>12}{'p50 ms':>10}{'p99 ms':>10}{'errors':>8}")
for name, r in (("nginx", n), ("httptools", o)):
    print(f"{name:16}{r['rps']:12.0f}{r['p50_ms']:10.2f}{r['p99_ms']:10.2f}{r['errors']:8d}")
print(f"ratio httptools/nginx: requests/s {o['rps']/n['rps']:.2f} (goal >= 0.5), p99 {o['p99_ms']/n['p99_ms']:.2f} (goal <= 2)")
print(f"httptools RSS: {int(sys.argv[3])/1024:.1f} MiB after warm-up, {int(sys.argv[4])/1024:.1f} MiB after the run")
PY
