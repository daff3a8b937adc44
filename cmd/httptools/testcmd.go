package main

import (
	"fmt"
	"io"
	"strings"

	toolstest "github.com/httptools/httptools/httptest"
)

// testCases runs every *.cases.json below the folders given (default ".")
// against an in-process fake upstream and prints N passed, N failed.
func testCases(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		args = []string{"."}
	}
	passed, failed := 0, 0
	for _, dir := range args {
		rep, err := toolstest.Run(dir)
		if err != nil {
			fmt.Fprintln(stderr, "httptools test:", err)
			return 2
		}
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
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}
