#!/usr/bin/env bash
# The README's test command, go test -race -count=1 ./..., printing what go
# test prints (each package's ok or FAIL, a failing test's output), then
# every test it skipped with what would run it (internal/testsum).
#   bash scripts/test.sh [--require postgres,interop,browser,nginx] [packages…]
# --require fails the run when a test of one of those suites was skipped:
# .ci/run requires all four. Packages default to ./...
set -euo pipefail
cd "$(dirname "$0")/.."
require=""
if [ "${1:-}" = "--require" ]; then
  require=$2
  shift 2
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/testsum" ./internal/testsum
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)
go test -race -count=1 -json "${pkgs[@]}" | "$bin/testsum" -require "$require"
