#!/bin/sh
# The conformance suite's client: httptools' remote MCP client, through
# `httptools call` on a manifest of the suite's tool at the server the suite
# started. The suite appends that server's URL and names the scenario in
# MCP_CONFORMANCE_SCENARIO (and, for auth/pre-registration, the client it
# registered in MCP_CONFORMANCE_CONTEXT); HTTPTOOLS_BIN is the binary
# (TestConformanceClient).
set -e
url=$1
hostport=${url#http://}
host=${hostport%%[:/]*}
path=/${hostport#*/}
[ "$path" = "/$hostport" ] && path=/
dir=$(mktemp -d)
tool=add_numbers
input='{"a":2,"b":3}'
schema='{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}'
set --
case $MCP_CONFORMANCE_SCENARIO in
auth/*)
	# The auth scenarios' server has one tool, test-tool, behind OAuth.
	tool=test-tool
	input='{}'
	schema='{"type":"object"}'
	# basic-cimd wants this URL as the client_id where the server takes one.
	set -- --oauth-client-metadata-url https://conformance-test.local/client-metadata.json
	id=$(printf '%s' "$MCP_CONFORMANCE_CONTEXT" | sed -n 's/.*"client_id":"\([^"]*\)".*/\1/p')
	if [ -n "$id" ]; then
		HTTPTOOLS_CONFORMANCE_SECRET=$(printf '%s' "$MCP_CONFORMANCE_CONTEXT" | sed -n 's/.*"client_secret":"\([^"]*\)".*/\1/p')
		export HTTPTOOLS_CONFORMANCE_SECRET
		set -- "$@" --oauth-client-id "$id" --oauth-client-secret-env HTTPTOOLS_CONFORMANCE_SECRET
	fi
	;;
esac
cat > "$dir/tool.json" <<M
{"id":"conformance.${tool%%-*}","description":"The suite's tool.","version":"1.0.0","mutating":false,"transport":"mcp",
 "mcpEndpoint":"mcp+http://$hostport#$tool",
 "input":$schema,"output":{}}
M
exec "$HTTPTOOLS_BIN" call "$dir/tool.json" --input "$input" --mcp-plain-http "$host" --allow-cidr 127.0.0.0/8 --allow-cidr ::1/128 "$@"
