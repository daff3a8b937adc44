#!/usr/bin/env bash
# Runs every fuzz target of the module for SECONDS each (default 60) and
# prints one line per target with its execution count. Minimization of new
# inputs is capped at 2 s: by default it may take 60 s per input (and the
# counter stops while it runs), which on inputs the size of an OpenAPI
# document leaves a target looking stalled.
#   bash bench/fuzz.sh [SECONDS] [PACKAGE-PATTERN]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
pattern=${2:-./...}
printf '%-40s %-28s %12s %10s\n' package target execs interesting
for pkg in $(go list "$pattern"); do
  for target in $(go test -list 'Fuzz.*' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    out=$(go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "${secs}s" -fuzzminimizetime 2s 2>&1) || { echo "$out" | tail -20; echo "FAIL: $pkg $target" >&2; exit 1; }
    last=$(echo "$out" | grep -E 'execs: [0-9]+' | tail -1)
    execs=$(echo "$last" | sed -E 's/.*execs: ([0-9]+).*/\1/')
    interesting=$(echo "$last" | sed -E 's/.*total: ([0-9]+)\).*/\1/')
    printf '%-40s %-28s %12s %10s\n' "${pkg#github.com/httptools/httptools/}" "$target" "$execs" "$interesting"
  done
done
