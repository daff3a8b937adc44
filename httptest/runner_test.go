package httptest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/synth"
)

// TestFixtures runs the case files of every fixture manifest.
func TestFixtures(t *testing.T) {
	toolstest.RunCases(t, "../fixtures/tools")
}

func write(t *testing.T, dir, name, body string) {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

const manifest = `{"id":"t.create","description":"d","version":"1.0.0","mutating":true,
	"input":{"type":"object","properties":{"id":{"type":"string"},"n":{"type":"integer"}},"required":["id"]},"output":{"type":"object"},
	"spec":{"kind":"http","method":"POST","urlTemplate":"https://api.example.com/things/{id}","headers":[{"name":"X-Trace","value":"t-{id}"}],
	"authorization":{"kind":"header","headerName":"X-Api-Key","secretRef":{"envName":"production","name":"KEY"}}}}`

// TestRunReportsDiffs: a failing case says what differs, line by line.
func TestRunReportsDiffs(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "create.json", manifest)
	write(t, dir, "create.cases.json", `[
	  {"name": "all wrong", "input": {"id": "a", "n": 2},
	   "context": {"secrets": {"production/KEY": "k1"}},
	   "request": {"method": "PUT", "url": "https://api.example.com/things/b",
	     "headers": {"X-Api-Key": "k2", "X-Missing": "m"}, "absentHeaders": ["X-Trace"], "json": {"n": 3}},
	   "response": {"json": {"ok": true}},
	   "output": {"ok": false}},
	  {"name": "right", "input": {"id": "a", "n": 2},
	   "context": {"secrets": {"production/KEY": "k1"}},
	   "request": {"method": "POST", "url": "https://api.example.com/things/a", "headers": {"X-Api-Key": "k1", "X-Trace": "t-a"}, "json": {"n": 2}},
	   "response": {"status": 201, "json": {"ok": true}}, "output": {"ok": true}}
	]`)
	rep, err := toolstest.Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, f := rep.Counts(); p != 1 || f != 1 {
		t.Fatalf("%d passed, %d failed", p, f)
	}
	all := strings.Join(rep.Results[0].Failures, "\n")
	for _, want := range []string{
		"method: expected PUT, got POST",
		"- https://api.example.com/things/b\n+ https://api.example.com/things/a",
		`header X-Api-Key: expected "k2", got "k1"`,
		`header X-Missing: expected "m", not sent`,
		`header X-Trace: must not be sent, got "t-a"`,
		"-   \"n\": 3\n+   \"n\": 2",
		"-   \"ok\": false\n+   \"ok\": true",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("failures lack %q:\n%s", want, all)
		}
	}
}

func TestCasesFileChecked(t *testing.T) {
	_, err := toolstest.ParseCases([]byte(`[{"name":"x","input":{},"request":{"method":"FETCH","colour":1},"output":{},"error":{"code":"handler-error"}}]`))
	var e *synth.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	var paths []string
	for _, p := range e.Problems {
		paths = append(paths, p.Path)
	}
	got := strings.Join(paths, " ")
	for _, want := range []string{"[0].request.method", "[0].request.colour"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems at %s, want %s (%v)", got, want, e.Problems)
		}
	}
	if _, err := toolstest.ParseCases([]byte(`[{"name":"a","input":{}},{"name":"a","input":{}}]`)); err == nil || !strings.Contains(err.Error(), "[1].name") {
		t.Errorf("duplicate names: %v", err)
	}
}

func TestRunReportsBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "lonely.cases.json", `[]`)
	write(t, dir, "bad.json", `{"id":"x"}`)
	write(t, dir, "bad.cases.json", `[]`)
	rep, _ := toolstest.Run(dir)
	if _, f := rep.Counts(); f != 2 {
		t.Fatalf("%+v", rep.Results)
	}
}

// FuzzParseCases: any document parses or fails with an error, never a panic.
func FuzzParseCases(f *testing.F) {
	files, _ := filepath.Glob("../fixtures/tools/*.cases.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`[{"name":"x","input":{},"request":{"json":1,"text":"a"}}]`))
	f.Fuzz(func(t *testing.T, src []byte) {
		cs, err := toolstest.ParseCases(src)
		if err == nil && cs == nil && string(src) != "[]" && string(src) != "null" {
			t.Logf("no cases and no error for %q", src)
		}
	})
}

// TestCasesFileErrorsSpeakOfTheCasesFile: an unknown field of a cases file
// is named as a cases file's, not the Tool definition's.
func TestCasesFileErrorsSpeakOfTheCasesFile(t *testing.T) {
	_, err := toolstest.ParseCases([]byte(`[{"name":"x","inputs":{}}]`))
	if err == nil || !strings.Contains(err.Error(), "[0].inputs: unknown field: remove it or fix its spelling (a cases file (httptest/cases.schema.json) takes only the fields of its schema)") ||
		strings.Contains(err.Error(), "Tool definition") {
		t.Errorf("%v", err)
	}
}
