// Command testsum reads `go test -json` on stdin, prints what `go test`
// prints without -json (each package's ok, FAIL or no test files, and the
// output of each failing test), then every test that was skipped with its
// reason, which says what would run it. With -require SUITE,… it exits 1
// when a test of one of those suites was skipped (.ci/run requires them
// all: a suite meant to run never passes by skipping).
//
//	go test -race -count=1 -json ./... | go run ./internal/testsum [-require postgres,interop,browser,nginx]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// suites are the suites a missing part of the machine skips, by the words
// of their skip.
var suites = map[string][]string{
	"postgres": {"HTTPTOOLS_TEST_POSTGRES is not set", "PostgreSQL is not installed"},
	"interop":  {"interop/node_modules is missing"},
	"browser":  {"no chromium"},
	"nginx":    {"nginx is not installed"},
}

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type skip struct{ pkg, test, reason string }

// reasonLine is the line t.Skip writes: "    file_test.go:28: reason".
var reasonLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)

func main() {
	require := flag.String("require", "", "comma-separated suites that must not be skipped: "+strings.Join(suiteNames(), ", "))
	flag.Parse()
	skips, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	os.Exit(report(os.Stdout, skips, *require))
}

func suiteNames() []string {
	var out []string
	for s := range suites {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// summarize echoes the package lines and failing tests' output of the
// test2json stream r, and returns the tests skipped.
func summarize(r io.Reader, w io.Writer) ([]skip, error) {
	var skips []skip
	outputs := map[string][]string{} // package/test → its output lines
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // a build error, as go test printed it
			continue
		}
		key := e.Package + "/" + e.Test
		switch {
		case e.Test == "" && e.Action == "output":
			if t := strings.TrimSpace(e.Output); t != "PASS" && !strings.HasPrefix(t, "=== ") {
				fmt.Fprint(w, e.Output)
			}
		case e.Action == "output":
			outputs[key] = append(outputs[key], e.Output)
		case e.Action == "fail" && e.Test != "":
			fmt.Fprint(w, strings.Join(outputs[key], ""))
			delete(outputs, key)
		case e.Action == "skip" && e.Test != "":
			reason := ""
			for _, l := range outputs[key] {
				if m := reasonLine.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil {
					reason = m[1]
				}
			}
			skips = append(skips, skip{e.Package, e.Test, reason})
			delete(outputs, key)
		case e.Action == "pass":
			delete(outputs, key)
		}
	}
	return skips, sc.Err()
}

// report lists the skipped tests by reason and says which required suite
// was skipped: 1 if one was.
func report(w io.Writer, skips []skip, require string) int {
	if len(skips) == 0 {
		fmt.Fprintln(w, "\nno test skipped")
	} else {
		byReason := map[string][]string{}
		for _, s := range skips {
			byReason[s.reason] = append(byReason[s.reason], s.test+" ("+s.pkg[strings.LastIndex(s.pkg, "/")+1:]+")")
		}
		reasons := make([]string, 0, len(byReason))
		for r := range byReason {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		noun := "tests"
		if len(skips) == 1 {
			noun = "test"
		}
		fmt.Fprintf(w, "\n%d %s skipped, and what would run them:\n", len(skips), noun)
		for _, r := range reasons {
			tests := byReason[r]
			sort.Strings(tests)
			if r == "" {
				r = "(no reason given)"
			}
			fmt.Fprintf(w, "  %s\n      %s\n", r, strings.Join(tests, ", "))
		}
	}
	rc := 0
	for _, s := range strings.Split(require, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		words, ok := suites[s]
		if !ok {
			fmt.Fprintf(w, "testsum: unknown suite %q (the suites: %s)\n", s, strings.Join(suiteNames(), ", "))
			return 2
		}
		for _, sk := range skips {
			if slices.ContainsFunc(words, func(w string) bool { return strings.Contains(sk.reason, w) }) {
				fmt.Fprintf(w, "FAIL: the %s suite is required here and was skipped (%s: %s)\n", s, sk.test, sk.reason)
				rc = 1
				break
			}
		}
	}
	return rc
}
