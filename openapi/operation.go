package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

type importer struct {
	doc   *openapi3.T
	opts  Options
	res   *Result
	noted map[string]bool // the security schemes warned about once
	// unpromised counts the operations that send Options.AuthScheme
	// though their security does not offer it.
	unpromised int
	written    []written // the operation of each manifest, until loadAll
	loads      *loads    // the manifests' loads, under way
	// aliases names the components bundling told apart by a suffix
	// (bundle.go) by their own names, for $defs.
	aliases map[string]string
}

func (im *importer) warn(method, path string, op *openapi3.Operation, msg string) {
	name := op.OperationID
	if name == "" {
		name = method + " " + path
	}
	im.res.Warnings = append(im.res.Warnings, fmt.Sprintf("%s: %s", name, msg))
}

// tool is the manifest as written, in the manifest's own types (synth's
// and httpspec's), its fields in a readable order. The input and output
// are JSON Schemas, built as values by the converter (schema.go).
type tool struct {
	ID          string           `json:"id"`
	Description string           `json:"description"`
	Version     string           `json:"version"`
	Mutating    bool             `json:"mutating"`
	Input       map[string]any   `json:"input"`
	Output      map[string]any   `json:"output"`
	Effects     []synth.Effect   `json:"effects"`
	Network     synth.Network    `json:"network"`
	NeedsSpec   *synth.NeedsSpec `json:"needsSpec,omitempty"`
	Metadata    metadata         `json:"metadata"`
	Spec        httpspec.Spec    `json:"spec"`
}

// metadata is where an imported tool came from.
type metadata struct {
	OpenAPI origin `json:"openapi"`
}

// origin is the operation a tool was imported from.
type origin struct {
	OperationID string `json:"operationId"`
	Method      string `json:"method"`
	Path        string `json:"path"`
}

func (im *importer) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation, srv server, ids map[string]string) error {
	if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, method) {
		return skipf(SkipMethod, "method %s: a tool's method is GET, POST, PUT, PATCH or DELETE", method)
	}
	id := toolID(im.opts.Prefix, kebab(op.OperationID, method, path))
	name := op.OperationID
	if name == "" {
		name = method + " " + path
	}
	if prev, dup := ids[id]; dup {
		id = toolID(im.opts.Prefix, kebab(op.OperationID, method, path)+"-"+shortHash(method+" "+path))
		im.warn(method, path, op, fmt.Sprintf("its id is %s: %s has the plain one", id, prev))
	}
	ids[id] = name
	t := tool{
		ID:       id,
		Version:  version(im.doc.Info.Version),
		Mutating: method != "GET",
		Network:  synth.Network{Kind: synth.NetworkAllowlist, Hosts: []string{srv.host}},
		Metadata: metadata{OpenAPI: origin{OperationID: op.OperationID, Method: method, Path: path}},
	}
	t.Description = describeOperation(op, item, method, path)
	effect := "reads"
	if t.Mutating {
		effect = "writes"
	}
	t.Effects = []synth.Effect{{Kind: effect, Resource: "external:" + srv.host}, {Kind: "network", Resource: "external:" + srv.host}}

	path, literalQuery := im.requestPath(method, path, op)

	in := newConverter(im.aliases)
	in.input = true
	x := &inputs{in: in, props: map[string]any{}, params: map[string]*openapi3.Parameter{}, path: path}
	if err := im.parameters(method, op, item, x); err != nil {
		return err
	}
	path = x.path
	tmpl := srv.url + path
	if len(x.query) > 0 {
		sep := "?"
		if literalQuery {
			sep = "&"
		}
		tmpl += "{" + sep + strings.Join(x.query, ",") + "}"
	}
	spec := &t.Spec
	*spec = httpspec.Spec{Kind: httpspec.Kind, Method: method, URLTemplate: tmpl, Headers: x.headers}
	if err := im.body(method, op, x, spec); err != nil {
		return err
	}
	t.Input = x.in.attach(map[string]any{"type": "object", "properties": x.props})
	if c := x.in.cuts("input"); c != "" {
		im.warn(method, path, op, "to keep the tool readable, "+c)
	}
	for _, n := range x.in.notes {
		im.warn(method, path, op, "input: "+n)
	}
	if len(x.required) > 0 {
		t.Input["required"] = x.required
	}
	if err := im.security(method, path, op, &t, spec); err != nil {
		return err
	}
	if err := im.responses(method, path, op, &t, spec); err != nil {
		return err
	}
	return im.write(method, path, op, &t)
}

// requestPath is the path a tool sends for a path key, and whether it
// carries a literal query. A path key may carry a literal query
// ("/{Bucket}?cors") or a fragment that only tells operations apart
// ("/#GetObject"): the fragment is never sent, so it is dropped; the
// literal query stays, and the parameters continue it. Characters RFC
// 6570 does not allow as literals ("/<upload_url>") are sent
// percent-encoded, as a client would.
func (im *importer) requestPath(method, path string, op *openapi3.Operation) (string, bool) {
	literalQuery := false
	if i := strings.IndexByte(path, '#'); i >= 0 {
		im.warn(method, path, op, fmt.Sprintf("the path's fragment %q is left out: a fragment is never sent to the server", path[i:]))
		path = path[:i]
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		literalQuery = true
		if i == len(path)-1 {
			path, literalQuery = path[:i], false
		}
	}
	return escapeLiterals(path), literalQuery
}

// write encodes the manifest, cut to the size budget if it must be, and
// adds it if it loads.
func (im *importer) write(method, path string, op *openapi3.Operation, t *tool) error {
	var buf bytes.Buffer
	encode := func() error {
		buf.Reset()
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	}
	if err := encode(); err != nil {
		return err
	}
	// Over the budget, cut down (fit encodes again after each cut); most
	// manifests are encoded once.
	if buf.Len() > maxManifestBytes {
		cuts := fit(t, func() int { encode(); return buf.Len() })
		if err := encode(); err != nil {
			return err
		}
		im.warn(method, path, op, fmt.Sprintf("the manifest is cut to %d KB (the budget is %d KB): %s were left out", buf.Len()>>10, maxManifestBytes>>10, strings.Join(cuts, ", then ")))
		if buf.Len() > maxManifestBytes {
			return skipf(SkipTooBig, "the manifest is %d KB even cut down, over the %d KB budget", buf.Len()>>10, maxManifestBytes>>10)
		}
	}
	// Loaded, to be sure it does, on the other cores while the next
	// operations are written: it is half of a big import's time.
	m := Manifest{ID: t.ID, JSON: buf.Bytes(), needs: needsOf(t)}
	im.loads.add(len(im.res.Manifests), m)
	im.res.Manifests = append(im.res.Manifests, m)
	im.written = append(im.written, written{method, path, op})
	return nil
}

// written is the operation a manifest of Result.Manifests was made of, at
// the same index.
type written struct {
	method, path string
	op           *openapi3.Operation
}

// loadAll waits for the load of every manifest written, and skips the
// operations whose manifest does not load. Its error is Options.Loaded's.
func (im *importer) loadAll() error {
	errs, handed := im.loads.wait()
	kept := im.res.Manifests[:0]
	for i, m := range im.res.Manifests {
		if errs[i] != nil {
			w := im.written[i]
			im.warn(w.method, w.path, w.op, fmt.Sprintf("skipped: the generated manifest does not load: %v", errs[i]))
			im.res.Skipped[SkipDoesNotLoad]++
			continue
		}
		kept = append(kept, m)
	}
	im.res.Manifests, im.written = kept, nil
	return handed
}
