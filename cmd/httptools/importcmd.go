package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/httptools/httptools/openapi"
)

// importCmd: httptools import openapi FILE [--operations id,id] [--out DIR]
// [--prefix P] [--server URL] [--env-name E].
func importCmd(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("import openapi", "import openapi FILE [--operations id,id] [--out DIR] [--prefix P] [--server URL] [--env-name NAME] [--auth-scheme NAME] [--allow-external-refs [--refs-root DIR]] [--check]",
		`Turn the operations of an OpenAPI 3.0/3.1 or Swagger 2.0 document (JSON or YAML) into manifests: printed as a JSON
array, or one NAME.json per tool with --out. What could not be imported is a warning on stderr; the import ends with
"N operations: M imported, K skipped (reasons: …)".`)
	ops := fs.String("operations", "", "comma-separated operationIds to import (default: all)")
	out := fs.String("out", "", "write one NAME.json per tool into this folder (default: print a JSON array)")
	prefix := fs.String("prefix", "", "tool id prefix (default: from the server's host, else the title)")
	server := fs.String("server", "", "the API's base URL, when the document's first server is not absolute")
	envName := fs.String("env-name", "production", "the envName of the secretRefs the imported tools name: their secrets are stored as ENV/NAME (production/GITHUB_TOKEN; HTTPTOOLS_SECRET_PRODUCTION_GITHUB_TOKEN)")
	external := fs.Bool("allow-external-refs", false, "resolve $refs to other files below the document's folder (never URLs)")
	check := fs.Bool("check", false, "compare every imported tool with its operation without sending anything (method, server, path, parameters in their places and styles, body, credentials), printing each finding and the count by class; exit 1 if any")
	refsRoot := fs.String("refs-root", "", "with --allow-external-refs: read referenced files below this folder instead (a description whose shared schemas sit in a sibling folder, ../common/)")
	authScheme := fs.String("auth-scheme", "", "a security scheme of the document to send on every operation that needs a credential, where the documented one cannot be sent but this one works (Cloudflare: api_token); a warning counts the operations that do not offer it")
	if len(args) > 0 && wantsHelp(args[:1]) {
		fs.help(stdout)
		return 0
	}
	if len(args) > 0 && args[0] == "mcp" {
		return importMCP(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "openapi" {
		fmt.Fprintln(stderr, "httptools import: import openapi FILE, or import mcp URL")
		fs.help(stderr)
		return 2
	}
	pos, rc, ok := fs.parse(args[1:], stdout, stderr)
	if !ok {
		return rc
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "httptools import openapi: name one OpenAPI file (JSON or YAML)")
		return 2
	}
	src, err := os.ReadFile(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "httptools import:", err)
		return 2
	}
	opts := openapi.Options{Prefix: *prefix, Server: *server, EnvName: *envName, Path: pos[0], AllowExternalRefs: *external, RefsRoot: *refsRoot, AuthScheme: *authScheme}
	if *ops != "" {
		opts.Operations = strings.Split(*ops, ",")
	}
	var files *toolFiles
	if *out != "" {
		// Each file is written as soon as its tool is known to load, while
		// the import goes on: a thousand files take a good half second.
		files = newToolFiles(*out)
		opts.Loaded = files.startWriter()
	}
	res, err := openapi.Import(src, opts)
	if files != nil {
		err = cmp.Or(err, files.waitWriter())
	}
	if err != nil {
		fmt.Fprintln(stderr, "httptools import:", err)
		return 1
	}
	report(res, stderr)
	flagged := false
	if *check {
		if flagged, err = checkImport(src, opts, res, stderr); err != nil {
			fmt.Fprintln(stderr, "httptools import: --check:", err)
			return 1
		}
	}
	if len(res.Manifests) == 0 {
		fmt.Fprintln(stderr, "httptools import: no operation could be imported")
		return 1
	}
	if files != nil {
		files.printPaths(res.Manifests, stdout)
	} else if err := writeManifests("", res.Manifests, stdout); err != nil {
		fmt.Fprintln(stderr, "httptools import:", err)
		return 1
	}
	return exitFlagged(flagged)
}

// report prints an import's warnings, its summary and what its tools
// need stored, with the command that stores each.
func report(res *openapi.Result, stderr io.Writer) {
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	fmt.Fprintln(stderr, res.Summary())
	for _, n := range res.Needs() {
		fmt.Fprintf(stderr, "needs: %s%s\n", n, howToStore(n))
	}
}

// checkImport compares every imported tool with its operation (--check),
// printing each finding and the count by class; true when it flagged one.
func checkImport(src []byte, opts openapi.Options, res *openapi.Result, stderr io.Writer) (bool, error) {
	rep, err := openapi.Check(src, opts, res.Manifests)
	if err != nil {
		return false, err
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(stderr, "check: %s: %s: %s\n", f.Tool, f.Class, f.Detail)
	}
	fmt.Fprintln(stderr, "check:", strings.ReplaceAll(rep.String(), "\n", "; "))
	return rep.Flagged > 0, nil
}

// howToStore is the command that stores what an imported tool needs,
// before its first call answers 409: a secret through the service's API
// (or, for call and a local serve on SQLite, the environment), a
// connection through its app and the connect flow.
func howToStore(n openapi.Need) string {
	const key = `curl -H "Authorization: Bearer $K"`
	if n.Kind == "secret" {
		env, name, _ := strings.Cut(n.Secret, "/")
		return fmt.Sprintf(`: %s -X PUT localhost:8080/v1/secrets/%s -d '{"value":"…"}'   (a local call or serve on SQLite: HTTPTOOLS_SECRET_%s_%s=…)`, key, n.Secret, strings.ToUpper(env), name)
	}
	return fmt.Sprintf(`: app %q in serve --apps FILE, then %s -X POST localhost:8080/v1/connections/%s/authorize -d '{"as":"person","person":"…"}'`, n.App, key, n.App)
}

// writeManifests prints ms as a JSON array when out is "", else writes
// each as out/ID.json, printing its path: every import's output.
func writeManifests(out string, ms []openapi.Manifest, stdout io.Writer) error {
	if out == "" {
		var b bytes.Buffer
		size := 4
		for _, m := range ms {
			size += len(m.JSON) + 2
		}
		b.Grow(size) // one allocation, not a doubling copy per size class
		b.WriteString("[\n")
		for i, m := range ms {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.Write(bytes.TrimRight(m.JSON, "\n"))
		}
		b.WriteString("\n]\n")
		_, err := stdout.Write(b.Bytes())
		return err
	}
	files := newToolFiles(out)
	for _, m := range ms {
		if err := files.write(m); err != nil {
			return err
		}
		fmt.Fprintln(stdout, files.path(m))
	}
	return nil
}

// toolFiles writes manifests as DIR/ID.json, the folder made before
// the first. Safe for concurrent use.
type toolFiles struct {
	dir   string
	mkdir func() error
	// The writer startWriter starts: one goroutine, since files made in
	// one folder from several contend for it (measured: a third more
	// system time from the import's two loaders than from one writer).
	queue  chan openapi.Manifest
	done   chan struct{}
	mu     sync.Mutex
	failed error // the writer's first error; nothing is written after it
}

// startWriter starts a goroutine writing the manifests handed to the
// function it returns, in turn; that function returns the writer's first
// error, once it has one. waitWriter waits for the last.
func (f *toolFiles) startWriter() func(openapi.Manifest) error {
	f.queue, f.done = make(chan openapi.Manifest, 256), make(chan struct{})
	go func() {
		defer close(f.done)
		for m := range f.queue {
			if f.firstError() == nil {
				if err := f.write(m); err != nil {
					f.mu.Lock()
					f.failed = err
					f.mu.Unlock()
				}
			}
		}
	}()
	return func(m openapi.Manifest) error {
		if err := f.firstError(); err != nil {
			return err
		}
		f.queue <- m
		return nil
	}
}

func (f *toolFiles) firstError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// waitWriter waits until every manifest handed to the writer is written
// (or refused) and returns its first error.
func (f *toolFiles) waitWriter() error {
	close(f.queue)
	<-f.done
	return f.firstError()
}

func newToolFiles(dir string) *toolFiles {
	return &toolFiles{dir: dir, mkdir: sync.OnceValue(func() error { return os.MkdirAll(dir, 0o755) })}
}

func (f *toolFiles) path(m openapi.Manifest) string { return filepath.Join(f.dir, m.ID+".json") }

func (f *toolFiles) write(m openapi.Manifest) error {
	if err := f.mkdir(); err != nil {
		return err
	}
	return os.WriteFile(f.path(m), m.JSON, 0o644)
}

// printPaths prints the path of each manifest written, in order.
func (f *toolFiles) printPaths(ms []openapi.Manifest, stdout io.Writer) {
	w := bufio.NewWriter(stdout)
	for _, m := range ms {
		fmt.Fprintln(w, f.path(m))
	}
	w.Flush()
}

// exitFlagged is import's exit code: 1 when --check flagged a tool (the
// manifests are written all the same, to look at).
func exitFlagged(flagged bool) int {
	if flagged {
		return 1
	}
	return 0
}
