#!/usr/bin/env bash
# What net/http's Transport costs one hop (issue 31, point 4): the Go floor
# (bench/floor), the same floor with -sync (its upstream call made in the
# handler's goroutine: no Transport read and write loops; an experiment)
# and httptools serve (REST invoke), each in front of nginx serving 1 KiB
# of JSON, under wrk -c32. Per row and round: requests/s and the hop's own
# CPU per request (user + system, from /proc). Rounds alternate the order.
#   bash bench/hop.sh [seconds=6] [rounds=5]
# Everything listens on 127.0.0.1 and stops when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
SECS=${1:-6}
ROUNDS=${2:-5}
for c in wrk nginx; do
  command -v $c >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx-light >/dev/null; }
done
work=$(mktemp -d /tmp/httptools-hop.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/httptools" ./cmd/httptools
go build -o "$work/floor" ./bench/floor
UP=$(free_port); F=$(free_port); FS=$(free_port); S=$(free_port)
mkdir -p "$work/www/items"
python3 - "$work/www/items/1" <<'PY'
import json, sys
d = {"id": 1, "title": "benchmark issue", "state": "open", "labels": []}
i = 0
while len(json.dumps(d, separators=(",", ":"))) < 1000:
    d["labels"].append({"id": i, "name": "label-%d" % i}); i += 1
s = json.dumps(d, separators=(",", ":"))
d["title"] += "x" * (1024 - len(s))
open(sys.argv[1], "w").write(json.dumps(d, separators=(",", ":")))
PY
chmod -R a+rX "$work/www"
cat > "$work/nginx.conf" <<NG
worker_processes 1; pid $work/nginx.pid; error_log $work/nginx-error.log; daemon on;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$UP; location / { root $work/www; default_type application/json; } } }
NG
nginx -c "$work/nginx.conf" -p "$work"
"$work/floor" -addr "127.0.0.1:$F" -upstream "http://127.0.0.1:$UP" 2>/dev/null & pids+=($!); FPID=$!
"$work/floor" -addr "127.0.0.1:$FS" -upstream "http://127.0.0.1:$UP" -sync 2>/dev/null & pids+=($!); FSPID=$!
bench_tool "$work/tools" "http://127.0.0.1:$UP"
export HTTPTOOLS_MASTER_KEY=MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=
KEY=$("$work/httptools" keys create --tenant bench --db "sqlite:$work/h.db" | tail -1 | awk '{print $NF}')
"$work/httptools" serve --tools "$work/tools" --db "sqlite:$work/h.db" --addr "127.0.0.1:$S" --allow-cidr 127.0.0.0/8 > "$work/serve.log" 2>&1 & pids+=($!); SPID=$!
for i in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$S/healthz" && break; sleep 0.1; done
lua() { printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n%s' "'{\"input\":{\"id\":\"1\"}}'" "${1:+wrk.headers[\"Authorization\"] = \"Bearer $1\"}" > "$2"; }
lua "" "$work/floor.lua"; lua "$KEY" "$work/serve.lua"
for row in "floor:$F:/invoke" "sync:$FS:/invoke" "serve:$S:/v1/tools/bench.get-issue/invoke"; do
  IFS=: read name port path <<< "$row"
  out=$(curl -s -X POST -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d '{"input":{"id":"1"}}' "http://127.0.0.1:$port$path" | head -c 40)
  case "$out" in '{"output":{"id":1,'*) ;; *) echo "$name answers $out"; exit 1;; esac
done
run() { # name pid url script
  wrk -t2 -c32 -d1s -s "$4" "$3" >/dev/null
  local t0 t1 out n
  t0=$(awk '{print $14+$15}' "/proc/$2/stat")
  out=$(wrk -t2 -c32 -d"${SECS}s" -s "$4" "$3")
  t1=$(awk '{print $14+$15}' "/proc/$2/stat")
  n=$(echo "$out" | awk '/requests in/{print $1}')
  echo "R $r $1 $(echo "$out" | awk '/Requests\/sec/{print $2}') $(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", (b-a)*1e6/hz/n}')"
}
rows=(floor sync serve)
{
for r in $(seq "$ROUNDS"); do
  order=("${rows[@]}"); [ $((r % 2)) = 0 ] && order=(serve sync floor)
  for row in "${order[@]}"; do
    case $row in
      floor) run floor $FPID "http://127.0.0.1:$F/invoke" "$work/floor.lua" ;;
      sync) run sync $FSPID "http://127.0.0.1:$FS/invoke" "$work/floor.lua" ;;
      serve) run serve $SPID "http://127.0.0.1:$S/v1/tools/bench.get-issue/invoke" "$work/serve.lua" ;;
    esac
  done
done
} | tee "$work/rows"
python3 - "$work/rows" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    _, r, name, rps, cpu = line.split()
    rows.setdefault(name, {})[int(r)] = (float(rps), float(cpu))
def med(name, i): return st.median(v[i] for v in rows[name].values())
print("| row | req/s (median) | CPU µs per request (median) |\n|---|---|---|")
for n, label in (("floor", "Go floor, net/http Transport"), ("sync", "Go floor, -sync (no Transport loops)"), ("serve", "httptools serve, REST invoke")):
    print("| %s | %.0f | %.1f |" % (label, med(n, 0), med(n, 1)))
def ratio(a, b, i):
    rs = sorted(rows[a][r][i] / rows[b][r][i] for r in rows[a])
    return "%.2f [%.2f..%.2f]" % (st.median(rs), rs[0], rs[-1])
print("\nsync / floor: req/s %s, CPU per request %s" % (ratio("sync", "floor", 0), ratio("sync", "floor", 1)))
print("serve / floor: req/s %s, CPU per request %s" % (ratio("serve", "floor", 0), ratio("serve", "floor", 1)))
PY
