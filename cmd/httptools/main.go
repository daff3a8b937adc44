// Command httptools validates, calls and serves declarative HTTP tools.
//
//	httptools validate PATH…
//	httptools call MANIFEST --input JSON|@file [--secret env/name=value]… [--person ID] [--allow-cidr CIDR]… [--dry-run]
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/httptools/httptools/fetch"
)

const usage = `httptools — declarative HTTP tools for AI agents (version %s)

Usage:
  httptools validate PATH…
      Check manifests (files, or folders searched for *.json; *.cases.json are
      skipped). Prints "file: field.path: message" per error and
      "file: warning: field.path: message" per warning; exit 1 on any error.

  httptools call MANIFEST --input JSON|@file [--secret env/name=value]… [--person ID]
                 [--allow-cidr CIDR]… [--dry-run]
      Run one call and print its output JSON. --dry-run prints the request it
      would send, secrets redacted, and sends nothing. Loopback, private and
      metadata addresses are refused unless --allow-cidr opens them. On a
      tool error, prints {"error":{…}} on stderr and exits 1.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, fetch.Version)
		return 2
	}
	switch args[0] {
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "call":
		return call(args[1:], stdout, stderr)
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
