package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/httptools/httptools"

// TestLayoutIsTheImportGraph holds design.md's layout table to the code:
// every package of the module has a row, and imports nothing (of the
// module, or from outside it) that its row's "may import" does not name.
func TestLayoutIsTheImportGraph(t *testing.T) {
	t.Chdir("../..")
	design, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, aliases := layoutTable(t, string(design))
	for pkg, imports := range packageImports(t) {
		allowed, ok := rows[pkg]
		if !ok {
			for dir := pkg; dir != "."; dir = filepath.Dir(dir) {
				if allowed, ok = rows[dir]; ok {
					break
				}
			}
		}
		if !ok {
			t.Errorf("package %s has no row in design.md's layout table", pkg)
			continue
		}
		for _, imp := range imports {
			if !permitted(imp, allowed, aliases) {
				t.Errorf("%s imports %s, which its row in design.md's layout table does not name", pkg, imp)
			}
		}
	}
}

var (
	layoutRow = regexp.MustCompile("(?m)^\\| (`[^|]+`) \\| .* \\| ([^|]+) \\|$")
	pathCell  = regexp.MustCompile("`([a-z0-9/_.-]+?)/?`")
	aliasPair = regexp.MustCompile("([a-z0-9/-]+) `([A-Za-z0-9./_-]+)`")
)

// layoutTable is the table's rows, by path, each with the names its
// "may import" gives (a remark in parentheses or after a dash left out),
// and the outside modules' names.
func layoutTable(t *testing.T, design string) (map[string][]string, map[string]string) {
	start := strings.Index(design, "## 1. Layout")
	end := strings.Index(design, "**Configuration** has one style")
	if start < 0 || end < start {
		t.Fatal("design.md has no layout table")
	}
	section := design[start:end]
	rows := map[string][]string{}
	for _, m := range layoutRow.FindAllStringSubmatch(section, -1) {
		var names []string
		cell, _, _ := strings.Cut(m[2], " — ")
		for _, item := range strings.Split(cell, ",") {
			if i := strings.Index(item, "("); i >= 0 {
				item = item[:i]
			}
			if item = strings.TrimSpace(item); item != "" && item != "stdlib" && item != "—" {
				names = append(names, item)
			}
		}
		for _, p := range pathCell.FindAllStringSubmatch(m[1], -1) {
			rows[p[1]] = names
		}
	}
	aliases := map[string]string{}
	_, tail, _ := strings.Cut(section, "Outside modules go by these names:")
	for _, m := range aliasPair.FindAllStringSubmatch(strings.Join(strings.Fields(tail), " "), -1) {
		aliases[m[1]] = m[2]
	}
	if len(rows) < 20 || len(aliases) < 10 {
		t.Fatalf("read %d rows and %d module names from design.md's layout table: its shape changed", len(rows), len(aliases))
	}
	return rows, aliases
}

// permitted says whether a row's names allow an import.
func permitted(imp string, allowed []string, aliases map[string]string) bool {
	if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
		return slices.Contains(allowed, rel)
	}
	for _, name := range allowed {
		if mod, ok := aliases[name]; ok && (imp == mod || strings.HasPrefix(imp, mod+"/")) {
			return true
		}
	}
	return false
}

// packageImports is each package's imports that are not the standard
// library's, from its non-test files, by its folder.
func packageImports(t *testing.T) map[string][]string {
	out := map[string][]string{}
	eachGoFile(t, parser.ImportsOnly, false, func(dir string, f *ast.File) {
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			first, _, _ := strings.Cut(imp, "/")
			if strings.Contains(first, ".") && !slices.Contains(out[dir], imp) {
				out[dir] = append(out[dir], imp)
			}
		}
	})
	return out
}

// eachGoFile parses every Go file of the module (its _test.go files too
// when tests is set; never node_modules, testdata or dot folders) and
// hands it to fn with its folder. Run from the module's root.
func eachGoFile(t *testing.T, mode parser.Mode, tests bool, fn func(dir string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "node_modules" || e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".") && p != ".") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".go") || !tests && strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, mode|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(filepath.Dir(p)), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
