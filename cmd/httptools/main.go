// Command httptools validates, calls and serves declarative HTTP tools.
//
//	httptools validate PATH…
//	httptools call MANIFEST --input JSON|@file [--secret env/name=value]… [--person ID] [--allow-cidr CIDR]… [--dry-run]
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/hangup"
	"github.com/httptools/httptools/internal/jsonlog"
)

const usage = `httptools — declarative HTTP tools for AI agents (version %s)

Usage:
  httptools validate PATH… [--remote [--allow-cidr CIDR]… [--mcp-plain-http HOST]…]
      Check manifests (files, or folders searched for *.json; *.cases.json are
      skipped). Prints "file: field.path: message" per error and
      "file: warning: field.path: message" per warning; exit 1 on any error.

  httptools call MANIFEST --input JSON|@file [--secret env/name=value]… [--person ID]
                 [--allow-cidr CIDR]… [--mcp-plain-http HOST]… [--dry-run [--format curl|json]]
                 [--oauth-client-id ID --oauth-client-secret-env VAR] [--apps FILE]
                 [--oauth-client-metadata-url URL]
      Run one call and print its output JSON. --dry-run prints the request it
      would send (a curl line, or JSON with --format json), secrets redacted,
      and sends nothing. Loopback, private and
      metadata addresses are refused unless --allow-cidr opens them. On a
      tool error, prints {"error":{…}} on stderr and exits 1. A remote MCP
      server that asks for OAuth is authorized on the spot: the client is
      --oauth-client-id's, an app of --apps, the document at
      --oauth-client-metadata-url, else dynamically registered; the
      authorization URL is followed, or printed for a person to open.

  httptools test [DIR]…
      Run every NAME.cases.json beside its NAME.json against an in-process fake
      upstream (no network): the exact request, then the output or error. Prints
      each failing case with a diff and ends with "N passed, N failed"; exit 1
      on any failure. A loopback or private API's tool needs no --allow-cidr:
      nothing reaches the address it names.

  httptools import openapi FILE [--operations id,id] [--out DIR] [--prefix P] [--server URL]
                 [--env-name NAME] [--auth-scheme NAME] [--allow-external-refs [--refs-root DIR]] [--check]
      Turn the operations of an OpenAPI 3.0/3.1 or Swagger 2.0 document (JSON
      or YAML) into manifests (printed as a JSON array, or one file per tool
      with --out); what could not be imported is a warning on stderr.
      --allow-external-refs reads the files a multi-file document refers to;
      --check compares every tool with its operation, sending nothing.

  httptools import mcp URL [--out DIR] [--prefix P] [--bearer-secret ENV/NAME] [--connection NAME]
                 [--allow-cidr CIDR]… [--mcp-plain-http HOST]…
                 [--oauth-client-id ID --oauth-client-secret-env VAR] [--oauth-client-metadata-url URL] [--apps FILE]
      Write one manifest per tool a remote MCP server lists, each pinning what
      a model reads of its tool; validate --remote reports any drift from it.

  httptools serve --tools DIR [--addr 127.0.0.1:8080] [--db sqlite:./httptools.db|postgres://…]
                  [--apps apps.json] [--public-url URL] [--allow-cidr CIDR]… [--max-timeout MS]
                  [--log-format text|json] [--drain-timeout 30s] [--policy policy.json]
      Serve every tool of DIR over REST (/v1/…) and MCP (/mcp) to the tenants of
      its API keys. SIGHUP reloads DIR; SIGTERM drains calls in flight and exits.

  httptools keys create --tenant T [--role admin|service|person] [--person ID]
                        [--toolset NAME] [--unattended-tools GLOBS] [--db …]
      Print a new API key for tenant T, once (only its hash is stored).
  httptools keys list [--tenant T] [--db …]
  httptools keys revoke ID [--tenant T] [--db …]
      List the keys (never the keys themselves), or revoke one.

  httptools mcp --tools DIR [--person ID] [--policy policy.json] [--toolset NAME] [--db …]
      Serve the tools over MCP on stdin/stdout, as tenant local.

  httptools policy check --policy FILE --tools DIR [--tenant-policy FILE]
      Check a tool policy offline and print what each key role, key and
      person it names sees of DIR.
`

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" && os.Args[1] != "mcp" {
		// Only the services reload on SIGHUP (internal/hangup caught it
		// from the start); any other command ends on it, as a program does.
		signal.Stop(hangup.C)
		signal.Reset(syscall.SIGHUP)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	// One writer for stderr, whatever goroutine of a command writes it.
	// Every command writes stderr through one lock: its own messages, its
	// loggers' records and those of the goroutines it starts (a log
	// flusher, a remote MCP session, a profiler).
	stderr = jsonlog.Locked(stderr)
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, fetch.Version)
		return 2
	}
	switch args[0] {
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "call":
		return call(args[1:], stdout, stderr)
	case "test":
		return testCases(args[1:], stdout, stderr)
	case "import":
		return importCmd(args[1:], stdout, stderr)
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "keys":
		return keys(args[1:], stdout, stderr)
	case "mcp":
		return mcpStdio(args[1:], os.Stdin, stdout, stderr)
	case "policy":
		return policyCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintf(stdout, usage, fetch.Version)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, "httptools", fetch.Version)
		return 0
	}
	fmt.Fprintf(stderr, "httptools: unknown command %q\n\n", args[0])
	fmt.Fprintf(stderr, usage, fetch.Version)
	return 2
}
