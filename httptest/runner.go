package httptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// Result is the outcome of one case.
type Result struct {
	File     string // the cases file
	Case     string
	Failures []string // empty when the case passed; each may hold a diff
}

// Passed reports whether the case passed.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// Report is the outcome of a run.
type Report struct {
	Results []Result
	// Tools holds each manifest that loaded, by file: what a manifest's
	// warnings are said of (httptools test prints them as validate does).
	Tools map[string]*synth.Tool
	// Untested lists the manifests below the folder run that have no
	// NAME.cases.json beside them, so that "4 passed" is not read as
	// "every tool passed" when a fifth has no case at all.
	Untested []string
}

// Counts returns how many cases passed and failed.
func (r *Report) Counts() (passed, failed int) {
	for _, res := range r.Results {
		if res.Passed() {
			passed++
		} else {
			failed++
		}
	}
	return
}

// ErrNoCases: a run found no case to run.
var ErrNoCases = errors.New("no case to run")

// Run runs every NAME.cases.json below dir against NAME.json beside it, each
// case against a fresh script of an in-process fake upstream: no network, no
// real secrets. dir may also name one manifest (its NAME.cases.json is run)
// or one cases file. Finding no case is an error wrapping ErrNoCases. A
// manifest or cases file that does not load is a failing result naming its
// problems.
func Run(dir string) (*Report, error) {
	var files []string
	one := false
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		one = true
		cases := dir
		if !strings.HasSuffix(dir, ".cases.json") {
			cases = strings.TrimSuffix(dir, ".json") + ".cases.json"
		}
		if _, err := os.Stat(cases); err != nil {
			return nil, fmt.Errorf("%s: %w: it has no cases file beside it (%s); see docs/authoring.md", dir, ErrNoCases, filepath.Base(cases))
		}
		files = []string{cases}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if one {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() { // as synth.ManifestFiles: a ConfigMap's ..data, .git
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(p, ".cases.json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: %w: no NAME.cases.json below it (each beside its NAME.json; see docs/authoring.md)", dir, ErrNoCases)
	}
	sort.Strings(files)
	up := NewUpstream()
	defer up.Close()
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(up.Client()))
	loader := &synth.Loader{Registry: reg}
	rep := &Report{Tools: map[string]*synth.Tool{}}
	for _, f := range files {
		rep.Results = append(rep.Results, runFile(f, loader, up, rep.Tools)...)
	}
	if !one {
		rep.Untested = untested(dir, files)
	}
	return rep, nil
}

// untested lists the manifests below dir whose NAME.cases.json is not
// among casesFiles.
func untested(dir string, casesFiles []string) []string {
	has := map[string]bool{}
	for _, c := range casesFiles {
		has[strings.TrimSuffix(c, ".cases.json")+".json"] = true
	}
	manifests, _ := synth.ManifestFiles(dir) // the walk above read the same folder
	var out []string
	for _, m := range manifests {
		if !has[m] {
			out = append(out, m)
		}
	}
	return out
}

// runFile runs the cases of casesFile against the manifest beside it,
// which it adds to loaded once it loads.
func runFile(casesFile string, loader *synth.Loader, up *Upstream, loaded map[string]*synth.Tool) []Result {
	manifest := strings.TrimSuffix(casesFile, ".cases.json") + ".json"
	fail := func(msg string) []Result { return []Result{{File: casesFile, Case: "(file)", Failures: []string{msg}}} }
	src, err := os.ReadFile(manifest)
	if err != nil {
		return fail(fmt.Sprintf("no manifest beside it: %v", err))
	}
	tool, err := loader.Load(src)
	if err != nil {
		return fail(fmt.Sprintf("%s does not load: %v", manifest, err))
	}
	loaded[manifest] = tool
	cases, err := LoadCases(casesFile)
	if err != nil {
		return fail(err.Error())
	}
	var out []Result
	for _, c := range cases {
		out = append(out, Result{File: casesFile, Case: c.Name, Failures: runCase(tool, c, up)})
	}
	return out
}

// tokens is the ConnectionSource of a case: its connection tokens by name.
type tokens map[string]string

func (t tokens) AccessToken(_ context.Context, req synth.ConnectionRequest) (string, error) {
	if tok, ok := t[req.Name]; ok && !req.ForceRefresh {
		return tok, nil
	}
	return "", synth.PreconditionFailed(synth.ReasonConnectionUnavailable, "the case gives no token for connection %q (context.connections)", req.Name)
}

func runCase(tool *synth.Tool, c Case, up *Upstream) []string {
	var script []Response
	if c.Response != nil {
		script = []Response{*c.Response}
	}
	up.Script(script...)
	tc := synth.CallContext{
		Tenant: "test", Person: c.Context.Person, IdempotencyKey: c.Context.IdempotencyKey,
		Unattended: c.Context.Unattended, Approved: c.Context.Approved,
		Secrets: auth.Map(c.Context.Secrets), Connections: tokens(c.Context.Connections),
	}
	res, err := tool.Invoke(context.Background(), tc, c.Input, synth.InvokeOptions{})
	var fails []string
	reqs := up.Requests()
	switch {
	case c.Request == nil && c.Response == nil && len(reqs) > 0:
		fails = append(fails, fmt.Sprintf("the tool sent %s %s, but the case expects no request", reqs[0].Method, reqs[0].URL))
	case c.Request != nil && len(reqs) == 0:
		fails = append(fails, "the tool sent no request; the case expects "+c.Request.Method+" "+c.Request.URL)
	case c.Request != nil:
		fails = append(fails, checkRequest(c.Request, reqs[0])...)
	}
	var e *synth.Error
	switch {
	case c.Error != nil && err == nil:
		fails = append(fails, fmt.Sprintf("want error %s %s; the call succeeded with %s", c.Error.Code, c.Error.Reason, res.Output))
	case c.Error != nil:
		if !errors.As(err, &e) || string(e.Code) != c.Error.Code || (c.Error.Reason != "" && e.Reason != c.Error.Reason) ||
			!strings.Contains(e.Error(), c.Error.MessageContains) {
			fails = append(fails, fmt.Sprintf("want error %s %s (message containing %q); got %v", c.Error.Code, c.Error.Reason, c.Error.MessageContains, describe(err)))
		}
	case err != nil:
		fails = append(fails, "the call failed: "+describe(err))
	case c.Output != nil:
		if d := jsonDiff(c.Output, res.Output); d != "" {
			fails = append(fails, "output differs (- expected, + got):\n"+d)
		}
	}
	return fails
}

func describe(err error) string {
	var e *synth.Error
	if errors.As(err, &e) {
		if e.Reason == "" { // no reason: no space before the colon
			return fmt.Sprintf("%s: %s", e.Code, e.Error())
		}
		return fmt.Sprintf("%s %s: %s", e.Code, e.Reason, e.Error())
	}
	return err.Error()
}

func checkRequest(want *WantRequest, got Recorded) []string {
	var fails []string
	if want.Method != "" && want.Method != got.Method {
		fails = append(fails, fmt.Sprintf("method: expected %s, got %s", want.Method, got.Method))
	}
	if want.URL != "" && want.URL != got.URL {
		fails = append(fails, fmt.Sprintf("url differs (- expected, + got):\n- %s\n+ %s", want.URL, got.URL))
	}
	for k, v := range sortedMap(want.Headers) {
		if g, ok := got.Header[http.CanonicalHeaderKey(k)]; !ok {
			fails = append(fails, fmt.Sprintf("header %s: expected %q, not sent", k, v))
		} else if g[0] != v {
			fails = append(fails, fmt.Sprintf("header %s: expected %q, got %q", k, v, g[0]))
		}
	}
	for _, k := range want.AbsentHeaders {
		if v := got.Header.Get(k); v != "" {
			fails = append(fails, fmt.Sprintf("header %s: must not be sent, got %q", k, v))
		}
	}
	switch {
	case want.JSON != nil:
		if !json.Valid(got.Body) {
			fails = append(fails, fmt.Sprintf("body: want JSON, got %q", got.Body))
		} else if d := jsonDiff(want.JSON, got.Body); d != "" {
			fails = append(fails, "body differs (- expected, + got):\n"+d)
		}
	case want.Text != nil && *want.Text != string(got.Body):
		fails = append(fails, fmt.Sprintf("body differs (- expected, + got):\n- %q\n+ %q", *want.Text, got.Body))
	case want.NoBody && len(got.Body) > 0:
		fails = append(fails, fmt.Sprintf("body: want none, got %q", got.Body))
	}
	return fails
}

func sortedMap(m map[string]string) func(func(string, string) bool) {
	return func(yield func(string, string) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// jsonDiff compares two JSON documents by value (numbers by their text) and
// returns a line diff of their indented forms, or "" when they are equal.
func jsonDiff(want, got []byte) string {
	var w, g any
	dw := json.NewDecoder(bytes.NewReader(want))
	dw.UseNumber()
	dg := json.NewDecoder(bytes.NewReader(got))
	dg.UseNumber()
	if dw.Decode(&w) != nil || dg.Decode(&g) != nil {
		if bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
			return ""
		}
		return lineDiff(string(want), string(got))
	}
	if reflect.DeepEqual(w, g) {
		return ""
	}
	wb, _ := json.MarshalIndent(w, "", "  ")
	gb, _ := json.MarshalIndent(g, "", "  ")
	return lineDiff(string(wb), string(gb))
}

// lineDiff is a small LCS line diff: "  " same, "- " only in a, "+ " only in b.
func lineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(x), len(y)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + x[i] + "\n")
			i++
		default:
			out.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
	return strings.TrimRight(out.String(), "\n")
}

// RunCases runs every case file below dir as subtests of t (file/case), for
// pack authors' own go test:
//
//	func TestPack(t *testing.T) { toolstest.RunCases(t, "tools") }
func RunCases(t *testing.T, dir string) {
	t.Helper()
	rep, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) == 0 {
		t.Fatalf("no *.cases.json below %s", dir)
	}
	for _, r := range rep.Results {
		t.Run(filepath.Base(r.File)+"/"+r.Case, func(t *testing.T) {
			for _, f := range r.Failures {
				t.Error(f)
			}
		})
	}
}
