package main

import (
	"go/ast"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameWhatExists keeps the names the design, the README and the
// authoring guide give true by construction: every file or folder of this
// repository they name in backticks is there, every test, fuzzer and benchmark is a function of
// some _test.go, and every pkg.Name (pkg.Type.Member) of one of this
// module's packages is declared in that package — so a rename or a removal
// that leaves the docs behind fails here, not in a reader's hands.
func TestDocsNameWhatExists(t *testing.T) {
	t.Chdir("../..")
	decls := declarations(t)
	for _, doc := range []string{"docs/design.md", "README.md", "docs/authoring.md"} {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range backticked(string(src)) {
			if why := missing(name, decls); why != "" {
				t.Errorf("%s names `%s`, %s", doc, name, why)
			}
		}
	}
}

var (
	inBackticks = regexp.MustCompile("`([^`\n]+)`")
	repoPath    = regexp.MustCompile(`^(\.ci|auth|bench|body|budget|cmd|connections|demo|docs|fetch|fixtures|history|httpspec|httptest|internal|interop|mcpauth|mcpremote|openapi|policy|redact|scripts|server|synth|trim)(/[A-Za-z0-9_.-]+)*/?$`)
	testName    = regexp.MustCompile(`^(Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*$`)
	qualified   = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Za-z_][A-Za-z0-9_]*)(\.([A-Za-z_][A-Za-z0-9_]*))?(\(\))?$`)
)

// backticked is every backticked span of src, a span of words cut at its
// spaces and parentheses' insides (`fetch.Do(ctx, req)` names fetch.Do).
func backticked(src string) []string {
	var out []string
	for _, m := range inBackticks.FindAllStringSubmatch(src, -1) {
		s := m[1]
		if i := strings.IndexAny(s, "( "); i > 0 && s[i] == '(' {
			s = s[:i]
		}
		out = append(out, s)
	}
	return out
}

// notNames are backticked spans that look like the names checked and are
// something else, each with why.
var notNames = map[string]string{
	"server/discover":       "an MCP method",
	"BenchmarkRetryWrapper": "the README says it was dropped with go-retryablehttp, its figures kept in a commit message",
}

// fileName is a span that names a file or host by its suffix, not a Go
// declaration (policy.json, demo.httptools.test).
var fileName = regexp.MustCompile(`\.(json|md|go|ya?ml|db|sh|txt|html|test|example|com|org|io)$`)

// missing says what is wrong with a name, "" when it is there or is not
// one of the kinds checked.
func missing(name string, d *decls) string {
	switch {
	case notNames[name] != "" || strings.ContainsAny(name, "*?{}<>[]…") || strings.HasPrefix(name, "/"):
		return ""
	case strings.Contains(name, "/") && repoPath.MatchString(name):
		if _, err := os.Stat(strings.TrimSuffix(name, "/")); err == nil {
			return ""
		}
		// internal/hangup.C: a declaration of the package in that folder.
		dir, last := filepath.Split(name)
		if pkg, ident, ok := strings.Cut(last, "."); ok && !fileName.MatchString(last) {
			if _, err := os.Stat(filepath.Join(dir, pkg)); err == nil {
				return missing(pkg+"."+ident, d)
			}
		}
		return "a path this repository does not have"
	case fileName.MatchString(name):
		return ""
	case testName.MatchString(name):
		if !d.tests[name] {
			return "a test function no _test.go declares"
		}
	case qualified.MatchString(name):
		m := qualified.FindStringSubmatch(name)
		pkg, ident, member := m[1], m[2], m[4]
		idents, ok := d.pkgs[pkg]
		if !ok {
			return "" // not one of this module's packages (http.Client, json.Number)
		}
		if !idents[ident] {
			return "which package " + pkg + " does not declare"
		}
		if member != "" && !idents[ident+"."+member] {
			return "but " + pkg + "." + ident + " has no field or method " + member
		}
	}
	return ""
}

// decls is what this module declares: each package's top-level names and
// its types' fields and methods (Type.Member), by package name, and every
// test function.
type decls struct {
	pkgs  map[string]map[string]bool
	tests map[string]bool
}

func declarations(t *testing.T) *decls {
	d := &decls{pkgs: map[string]map[string]bool{}, tests: map[string]bool{}}
	eachGoFile(t, 0, true, func(dir string, f *ast.File) {
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && testName.MatchString(fn.Name.Name) {
				d.tests[fn.Name.Name] = true
			}
		}
		names := d.pkgs[strings.TrimSuffix(f.Name.Name, "_test")]
		if names == nil {
			names = map[string]bool{}
			d.pkgs[strings.TrimSuffix(f.Name.Name, "_test")] = names
		}
		for _, decl := range f.Decls {
			declare(decl, names)
		}
	})
	// Folder names stand for their package too (internal/jsoncheck is
	// "jsoncheck"; httptest's package is toolstest's import of it).
	return d
}

// declare records one top-level declaration's names.
func declare(decl ast.Decl, names map[string]bool) {
	switch x := decl.(type) {
	case *ast.FuncDecl:
		if x.Recv == nil || len(x.Recv.List) == 0 {
			names[x.Name.Name] = true
			return
		}
		names[receiver(x.Recv.List[0].Type)+"."+x.Name.Name] = true
	case *ast.GenDecl:
		for _, spec := range x.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				names[s.Name.Name] = true
				st, ok := s.Type.(*ast.StructType)
				if !ok {
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								names[s.Name.Name+"."+n.Name] = true
							}
						}
					}
					continue
				}
				for _, f := range st.Fields.List {
					for _, n := range f.Names {
						names[s.Name.Name+"."+n.Name] = true
					}
					if len(f.Names) == 0 { // embedded: its name is its type's
						names[s.Name.Name+"."+receiver(f.Type)] = true
					}
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names[n.Name] = true
				}
			}
		}
	}
}

// receiver is the type name of a receiver or embedded field: T, *T, T[P],
// pkg.T.
func receiver(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiver(x.X)
	case *ast.IndexExpr:
		return receiver(x.X)
	case *ast.IndexListExpr:
		return receiver(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}
