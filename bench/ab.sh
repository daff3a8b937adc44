#!/usr/bin/env bash
# A/B of one change's cost on the REST invoke path: the binary of REV (a
# commit before the change) against the working tree's, each serving the
# same tool in front of the same local upstream (bench/upstream, 1 KiB of
# JSON), loaded by bench/load in paired rounds whose order flips every
# other round (the machine's speed drifts within a minute). Prints each
# round's two rows and the median and range of the per-round ratios.
#   bash bench/ab.sh REV [rounds] [seconds] [concurrency]
# OLD_FLAGS and NEW_FLAGS add serve flags to one side: with REV HEAD, the
# cost of a setting (OLD_FLAGS=--no-history bash bench/ab.sh HEAD).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
REV=${1:?usage: bash bench/ab.sh REV [rounds] [seconds] [concurrency]}
ROUNDS=${2:-6}; SECS=${3:-5}; CONC=${4:-32}
W=$(mktemp -d /tmp/httptools-ab.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; git worktree remove --force "$W/old-src" >/dev/null 2>&1 || true; rm -rf "$W"; }
trap cleanup EXIT
git worktree add -f "$W/old-src" "$REV" >/dev/null 2>&1
(cd "$W/old-src" && go build -o "$W/old" ./cmd/httptools)
go build -o "$W/new" ./cmd/httptools
go build -o "$W/upstream" ./bench/upstream
go build -o "$W/load" ./bench/load
UP=$(free_port); PO=$(free_port); PN=$(free_port)
"$W/upstream" -addr "127.0.0.1:$UP" & pids+=($!)
bench_tool "$W/tools" "http://127.0.0.1:$UP"
for v in old new; do
  port=$PO; [ $v = new ] && port=$PN
  extra=${OLD_FLAGS:-}; [ $v = new ] && extra=${NEW_FLAGS:-}
  # shellcheck disable=SC2086 # the flags split into words on purpose
  "$W/$v" serve --tools "$W/tools" --db "sqlite:$W/$v.db" --addr "127.0.0.1:$port" --allow-cidr 127.0.0.0/8 --log-format json $extra >"$W/$v.out" 2>/dev/null & pids+=($!)
done
for _ in $(seq 100); do grep -q "API key for" "$W/old.out" "$W/new.out" 2>/dev/null && [ "$(grep -l 'API key for' "$W/old.out" "$W/new.out" | wc -l)" = 2 ] && break; sleep 0.1; done
KO=$(grep "API key for" "$W/old.out" | awk '{print $NF}'); KN=$(grep "API key for" "$W/new.out" | awk '{print $NF}')
run() { "$W/load" -url "http://127.0.0.1:$1/v1/tools/bench.get-issue/invoke" -method POST -body '{"input":{"id":"7"}}' -key "$2" -c "$CONC" -d "${3:-${SECS}s}"; }
run "$PO" "$KO" 2s >/dev/null; run "$PN" "$KN" 2s >/dev/null
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
ratios=(); p99s=()
for i in $(seq 1 "$ROUNDS"); do
  if [ $((i % 2)) = 1 ]; then o=$(run "$PO" "$KO"); n=$(run "$PN" "$KN"); else n=$(run "$PN" "$KN"); o=$(run "$PO" "$KO"); fi
  echo "round $i $REV: $o"
  echo "round $i new: $n"
  ratios+=("$(python3 -c "print($(field "$n" rps)/$(field "$o" rps))")")
  p99s+=("$(python3 -c "print($(field "$n" p99_ms)/$(field "$o" p99_ms))")")
done
python3 - "${ratios[*]}" "${p99s[*]}" <<'PY'
import statistics, sys
r = [float(x) for x in sys.argv[1].split()]; p = [float(x) for x in sys.argv[2].split()]
print(f"req/s new/old: median {statistics.median(r):.3f} (rounds {min(r):.3f}-{max(r):.3f}); p99 new/old: median {statistics.median(p):.3f} ({min(p):.3f}-{max(p):.3f})")
PY
