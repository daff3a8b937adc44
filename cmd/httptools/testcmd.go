package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	toolstest "github.com/httptools/httptools/httptest"
)

// testCases runs every *.cases.json below the folders given (default ".")
// against an in-process fake upstream and prints N passed, N failed.
func testCases(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("test", "test [DIR|MANIFEST]…",
		`Run every NAME.cases.json beside its NAME.json against an in-process fake upstream (no network): the exact request,
then the output or error. Prints each failing case with a diff (- expected, + got), each manifest without a cases file
("NONE"), and ends with "N passed, N failed" (and ", N tools without cases" when there are);
exit 1 on any failure, and 2 when there is no case to run. The fake upstream answers every address, so a tool of a
loopback or private API (http://127.0.0.1:8081/…) needs no --allow-cidr here; the manifest's network allowlist applies.`)
	fs.notes = map[string]string{"allow-cidr": "httptools test needs none: its fake upstream answers every address, and nothing reaches the one a tool names"}
	args, rc, ok := fs.parse(args, stdout, stderr)
	if !ok {
		return rc
	}
	if len(args) == 0 {
		args = []string{"."}
	}
	passed, failed, untested := 0, 0, 0
	for _, dir := range args {
		rep, err := toolstest.Run(dir)
		if err != nil {
			fmt.Fprintln(stderr, "httptools test:", err)
			return 2 // nothing to run is not a pass
		}
		printNotices(stderr, rep.Tools) // as validate says them
		for _, r := range rep.Results {
			if r.Passed() {
				passed++
				fmt.Fprintf(stdout, "ok   %s: %s\n", r.File, r.Case)
				continue
			}
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %s\n", r.File, r.Case)
			for _, f := range r.Failures {
				fmt.Fprintln(stdout, "     "+strings.ReplaceAll(f, "\n", "\n     "))
			}
		}
		for _, m := range rep.Untested {
			untested++
			fmt.Fprintf(stdout, "NONE %s: no cases (write %s beside it)\n", m, strings.TrimSuffix(filepath.Base(m), ".json")+".cases.json")
		}
	}
	// A tool without cases is named, not failed: it may be new, but "4
	// passed" must not read as "every tool passed".
	if untested > 0 {
		fmt.Fprintf(stdout, "%d passed, %d failed, %d tools without cases\n", passed, failed, untested)
	} else {
		fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	}
	if failed > 0 {
		return 1
	}
	return 0
}
