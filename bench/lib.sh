# Shared by the benchmark scripts (source it): free_port, and the bench
# tool's manifest.

# free_port prints a TCP port free on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# bench_tool DIR URL_BASE [SPEC_EXTRA]: writes DIR/get.json, the tool every
# row calls: GET URL_BASE/items/{id}, SPEC_EXTRA (e.g. ',"timeoutMs":30000')
# added to its spec.
bench_tool() {
  mkdir -p "$1"
  cat > "$1/get.json" <<JSON
{"id":"bench.get-issue","description":"Get an issue.","version":"1.0.0","mutating":false,
 "input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
 "output":{"type":"object"},
 "effects":[{"kind":"network","resource":"external:127.0.0.1"}],
 "spec":{"kind":"http","method":"GET","urlTemplate":"$2/items/{id}"${3:-}}}
JSON
}
