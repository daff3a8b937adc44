#!/usr/bin/env bash
# Instructions per benchmark iteration, counted by valgrind (cachegrind,
# no cache simulation): the difference between a run of 1000 and one of
# 3000 iterations, divided by 2000, so start-up and set-up cancel out. Unlike
# ns/op on a shared 2-core machine (±10–20% between runs), the count moves
# by about 2% (the garbage collector's share), so a change of a few hundred
# instructions per call can be seen.
#   bash bench/instructions.sh PACKAGE BENCH-REGEXP   e.g.
#   bash bench/instructions.sh ./httpspec 'BenchmarkOverhead/synthesized$'
# Needs valgrind (apt-get install -y valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=$1 bench=$2
bin=$(mktemp /tmp/httptools-instr.XXXXXX)
trap 'rm -f "$bin"' EXIT
go test -c -o "$bin" "$pkg"
count() {
  (cd "$pkg" && GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${1}x" 2>&1) |
    awk '/I *refs/ {gsub(",", "", $4); print $4}'
}
a=$(count 1000)
b=$(count 3000)
echo "$bench: $(((b - a) / 2000)) instructions per iteration"
