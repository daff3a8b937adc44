#!/usr/bin/env bash
# Instructions per benchmark iteration, counted by valgrind (cachegrind,
# no cache simulation): the difference between a run of 1000 and one of
# 3000 iterations, divided by 2000, so start-up and set-up cancel out. Unlike
# ns/op on a shared 2-core machine (±10–20% between runs), the count moves
# by about 2% (the garbage collector's share), so a change of a few hundred
# instructions per call can be seen.
#   bash bench/instructions.sh PACKAGE BENCH-REGEXP   e.g.
#   bash bench/instructions.sh ./httpspec 'BenchmarkOverhead/synthesized$'
# With CACHE=1 it also simulates this machine's caches and prints the
# first-level instruction and data cache misses per iteration: two calls of
# the same instruction count can differ in how much code and data they
# touch, which is what a call pays for when it runs on a core whose caches
# another goroutine has just filled. Slower (about 3x).
# Needs valgrind (apt-get install -y valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=$1 bench=$2
bin=$(mktemp /tmp/httptools-instr.XXXXXX)
trap 'rm -f "$bin"' EXIT
go test -c -o "$bin" "$pkg"
sim=no
[ "${CACHE:-}" = 1 ] && sim=yes
# count N prints the run's instructions, I1 misses and D1 misses (0 0
# without the cache simulation).
count() {
  (cd "$pkg" && GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=$sim --cachegrind-out-file=/dev/null \
    "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${1}x" 2>&1) |
    awk '{gsub(",", "")} /I *refs/ {i = $4} /I1 *misses/ {i1 = $4} /D1 *misses/ {d1 = $4} END {print i, i1 + 0, d1 + 0}'
}
read -r a a1 ad <<<"$(count 1000)"
read -r b b1 bd <<<"$(count 3000)"
echo "$bench: $(((b - a) / 2000)) instructions per iteration"
if [ "$sim" = yes ]; then
  echo "$bench: $(((b1 - a1) / 2000)) I1 misses, $(((bd - ad) / 2000)) D1 misses per iteration"
fi
