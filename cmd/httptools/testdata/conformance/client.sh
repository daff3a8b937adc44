#!/bin/sh
# The conformance suite's client: httptools' remote MCP client, through
# `httptools call` on a manifest of the suite's add_numbers tool at the
# server the suite started. The suite appends that server's URL and names
# the scenario in MCP_CONFORMANCE_SCENARIO; HTTPTOOLS_BIN is the binary
# (TestConformanceClient).
set -e
url=$1
hostport=${url#http://}
host=${hostport%%[:/]*}
dir=$(mktemp -d)
cat > "$dir/add.json" <<M
{"id":"conformance.add_numbers","description":"Adds two numbers.","version":"1.0.0","mutating":false,"transport":"mcp",
 "mcpEndpoint":"mcp+http://$hostport#add_numbers",
 "input":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},"output":{}}
M
exec "$HTTPTOOLS_BIN" call "$dir/add.json" --input '{"a":2,"b":3}' --mcp-plain-http "$host" --allow-cidr 127.0.0.0/8 --allow-cidr ::1/128
