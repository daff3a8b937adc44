package httptest_test

import (
	"strings"
	"testing"

	toolstest "github.com/httptools/httptools/httptest"
)

// Issue 45, points 5 and 10: a run names the manifests it had no case
// for, and an error without a reason is written without a stray space.

const plainGet = `{"id":"t.get","description":"d","version":"1.0.0","mutating":false,
	"input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
	"output":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},
	"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/things/{id}"}}`

// TestRunNamesToolsWithoutCases: two manifests, one with a cases file:
// one result, and the other manifest listed as untested.
func TestRunNamesToolsWithoutCases(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "get.json", plainGet)
	write(t, dir, "get.cases.json", `[{"name":"one","input":{"id":"a"},
	  "request":{"method":"GET","url":"https://api.example.com/things/a"},
	  "response":{"json":{"n":1}},"output":{"n":1}}]`)
	write(t, dir, "other.json", strings.Replace(plainGet, "t.get", "t.other", 1))
	rep, err := toolstest.Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, f := rep.Counts(); p != 1 || f != 0 {
		t.Errorf("%d passed, %d failed; want 1, 0", p, f)
	}
	if len(rep.Untested) != 1 || !strings.HasSuffix(rep.Untested[0], "other.json") {
		t.Errorf("untested %q; want [.../other.json]", rep.Untested)
	}
}

// TestErrorWithoutReasonHasNoStraySpace: an answer the output schema
// refuses is "output-validation-failed: …", not "output-validation-failed :".
func TestErrorWithoutReasonHasNoStraySpace(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "get.json", plainGet)
	write(t, dir, "get.cases.json", `[{"name":"bad answer","input":{"id":"a"},
	  "request":{"method":"GET","url":"https://api.example.com/things/a"},
	  "response":{"json":{"n":"x"}},"output":{"n":1}}]`)
	rep, err := toolstest.Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Results[0].Failures, "\n")
	if !strings.Contains(all, "output-validation-failed: ") || strings.Contains(all, " :") {
		t.Errorf("failures: %s", all)
	}
}
