// Package openapi turns the operations of an OpenAPI 3.0 or 3.1 document
// into tool manifests: path parameters become {x}, query parameters {?a,b},
// a JSON request body json-input with its schema merged into the input,
// API-key and bearer schemes header or bearer auth with a secretRef, OAuth 2
// schemes a connection need, the 2xx responses successStatus and output, the
// method mutating, and the server's host the network allowlist. Every
// manifest it returns passes the loader's checks.
package openapi

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3" // its kind checks the manifests: imported, it is registered
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/synth"
)

// Options steer an import.
type Options struct {
	// Operations lists the operationIds to import; nil imports all.
	Operations []string
	// Prefix starts every tool id ("<prefix>.<operation>"); "" derives it
	// from the server's host (api.stripe.com → stripe,
	// messaging.twilio.com → twilio-messaging), else the title.
	Prefix string
	// Server replaces the document's servers (every level).
	Server string
	// EnvName is the envName of generated secretRefs; "" means "production".
	EnvName string
	// Loader checks every manifest; nil means the zero synth.Loader.
	Loader *synth.Loader
	// Path is the document's file: external $refs are resolved from its
	// folder when AllowExternalRefs is set.
	Path string
	// AllowExternalRefs resolves $refs to other files (never URLs) below
	// the document's folder; without it such a document is refused,
	// naming the reference.
	AllowExternalRefs bool
	// RefsRoot, with AllowExternalRefs, is the folder below which
	// referenced files are read instead of the document's own: a
	// description that keeps shared schemas in a sibling folder
	// (../common/) names their common parent.
	RefsRoot string
	// AuthScheme names a security scheme of the document that every
	// operation needing a credential sends, whatever its own security
	// says: an API whose documented requirement a tool cannot send
	// (Cloudflare's api_email and api_key together) whose API tokens
	// work all the same. Where the document does not offer it, a warning
	// counts the operations: the document does not promise it works.
	AuthScheme string
	// Loaded, when set, is handed each manifest as soon as it is known to
	// load, before Import returns, from one of the goroutines that load
	// them (it must be safe for concurrent use; the order is not the
	// manifests'): a caller that writes each to a file (the CLI's --out)
	// writes while the import goes on, on a processor the import leaves
	// idle. A manifest Import does not return (it does not load) is never
	// handed. The first error it returns is Import's, and no manifest is
	// handed after it; what it was handed before stays handed (the CLI's
	// --out folder keeps the files written before a failure).
	Loaded func(Manifest) error
}

// Manifest is one generated tool.
type Manifest struct {
	ID   string
	JSON []byte // indented, ending in a newline
	// needs is what the tool needs stored before its first call, for
	// Result.Needs: known when it is written.
	needs []Need
}

// Result is what an import made, and what it skipped or changed, in words.
type Result struct {
	Manifests []Manifest
	Warnings  []string
	// Operations counts the operations considered; Skipped the ones not
	// imported, by reason (Warnings say which and why, in words).
	Operations int
	Skipped    map[SkipReason]int
}

// Summary is the coverage line: "N operations: M imported, K skipped
// (reasons: 22 × a request body a tool cannot send; 2 × a server a tool cannot name)".
func (r *Result) Summary() string {
	k := 0
	var reasons []string
	for _, why := range sortedKeys(r.Skipped) {
		k += r.Skipped[why]
		reasons = append(reasons, fmt.Sprintf("%d × %s", r.Skipped[why], why))
	}
	s := fmt.Sprintf("%d operations: %d imported, %d skipped", r.Operations, len(r.Manifests), k)
	if k > 0 {
		s += " (reasons: " + strings.Join(reasons, "; ") + ")"
	}
	return s
}

// Import reads an OpenAPI 3.0 or 3.1 document, or a Swagger 2.0 one
// (converted with kin-openapi's openapi2conv), JSON or YAML, and returns
// manifests for its operations.
func Import(src []byte, opts Options) (*Result, error) {
	if t := bytes.TrimLeft(src, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		// A JSON document: refused when malformed or nested past the
		// document limit, before kin-openapi walks it. (YAML has its
		// parser's own depth limit.)
		if err := jsoncheck.Check(src, jsoncheck.MaxDocumentDepth); err != nil {
			var je *jsoncheck.Error
			if errors.As(err, &je) && je.Kind == jsoncheck.TooDeep {
				return nil, fmt.Errorf("not an OpenAPI document: %w", err)
			}
		}
	}
	var skips []skip
	aliases := map[string]string{}
	doc, err := load(src, opts, &skips, aliases)
	if err != nil {
		return nil, err
	}
	im := &importer{doc: doc, aliases: aliases, opts: opts, res: &Result{Skipped: map[SkipReason]int{}}, noted: map[string]bool{}}
	for _, sk := range skips {
		im.res.Operations++
		im.res.Skipped[SkipBrokenComponent]++
		im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("%s: skipped: it uses a broken component: %s", sk.name, sk.why))
	}
	base, err := im.prepare()
	if err != nil {
		return nil, err
	}
	missing := im.operations(base)
	if err := im.loadAll(); err != nil {
		return nil, err
	}
	if im.unpromised > 0 {
		im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("--auth-scheme %s: %d operations do not offer it in their security, and their tools send it all the same: the document does not promise it works there; try one before relying on them", im.opts.AuthScheme, im.unpromised))
	}
	for id := range missing {
		im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("operation %q is not in the document", id))
	}
	sort.Strings(im.res.Warnings)
	return im.res, nil
}

// prepare fills the options an import derives (the prefix, the envName,
// the loader), checks --auth-scheme, and starts the loads: the base server
// of the document's operations.
func (im *importer) prepare() (server, error) {
	if im.doc.Info == nil {
		im.doc.Info = &openapi3.Info{}
	}
	base, err := im.baseServer()
	if err != nil {
		return server{}, err
	}
	if im.opts.Prefix == "" {
		im.opts.Prefix = prefixOf(base.host, im.doc.Info.Title)
	}
	if im.opts.EnvName == "" {
		im.opts.EnvName = "production"
	}
	if im.opts.Loader == nil {
		im.opts.Loader = &synth.Loader{}
	}
	if err := im.checkAuthScheme(); err != nil {
		return server{}, err
	}
	im.loads = startLoads(im.opts.Loader, im.opts.Loaded)
	return base, nil
}

// operations imports every operation wanted, in the order of their paths
// and methods, and returns the operationIds wanted that the document does
// not have.
func (im *importer) operations(base server) (missing map[string]bool) {
	wanted := map[string]bool{}
	missing = map[string]bool{}
	for _, id := range im.opts.Operations {
		wanted[id], missing[id] = true, true
	}
	var paths map[string]*openapi3.PathItem
	if im.doc.Paths != nil {
		paths = im.doc.Paths.Map()
	}
	ids := map[string]string{} // tool id → the operation that has it
	for _, p := range sortedKeys(paths) {
		item := paths[p]
		if item == nil {
			continue
		}
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"} {
			op := item.GetOperation(method)
			if op == nil || len(wanted) > 0 && !wanted[op.OperationID] {
				continue
			}
			delete(missing, op.OperationID)
			im.res.Operations++
			srv, err := im.serverFor(base, item, op)
			if err == nil {
				err = im.operation(p, method, item, op, srv, ids)
			}
			if err != nil {
				im.skipped(method, p, op, err)
			}
		}
	}
	return missing
}

// skipped counts and words an operation that was not imported.
func (im *importer) skipped(method, path string, op *openapi3.Operation, err error) {
	im.warn(method, path, op, err.Error())
	var se *skipError
	if !errors.As(err, &se) {
		// Not a skip the importer decided (writing the manifest
		// failed): named as the loader would.
		se = &skipError{reason: SkipDoesNotLoad}
	}
	im.res.Skipped[se.reason]++
}
