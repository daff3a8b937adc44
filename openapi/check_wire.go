package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// The checker's dry runs: the request a tool would send for an input,
// described and not sent, with every secret and connection resolved to a
// stand-in.

// wire is a dry run's request.
type wire struct {
	Method  string
	URL     string
	Headers []string
	Body    json.RawMessage
}

func (w *wire) header(name string) (string, bool) {
	for _, h := range w.Headers {
		k, v, _ := strings.Cut(h, ": ")
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// anySecret resolves every secret to one value; anyToken every connection.
type anySecret struct{}

func (anySecret) ResolveSecret(context.Context, synth.SecretRef) (string, error) {
	return "checker-secret", nil
}

type anyToken struct{}

func (anyToken) AccessToken(context.Context, synth.ConnectionRequest) (string, error) {
	return "checker-token", nil
}

// dryRun is the request tool describes for the input raw.
func dryRun(tool *synth.Tool, raw []byte) (*wire, error) {
	described, err := tool.DryRun(context.Background(), synth.CallContext{Tenant: "check", Person: "p", Secrets: auth.Chain{anySecret{}}, Connections: anyToken{}}, raw, synth.InvokeOptions{})
	if err != nil {
		return nil, err
	}
	var w wire
	json.Unmarshal(described, &w)
	return &w, nil
}

// leftOut dry-runs the tool with its required members only (the values
// of input) and flags what it sends that the caller did not give: a
// query parameter (a default filled in), or a body, or its Content-Type,
// where the operation's body is optional and the tool's is one member.
func leftOut(tool *synth.Tool, id string, input map[string]any, required []string, params map[string]*openapi3.Parameter, order []string, whole string, bodyOptional bool) []Finding {
	min := map[string]any{}
	for _, r := range required {
		if v, ok := input[r]; ok {
			min[r] = v
		} else {
			min[r] = "x"
		}
	}
	raw, _ := json.Marshal(min)
	w, err := dryRun(tool, raw)
	if err != nil {
		return nil // the full input's dry run says why
	}
	var fs []Finding
	if u, err := url.Parse(w.URL); err == nil {
		q := u.Query()
		for _, k := range order {
			p := params[k]
			if p.In == "query" && !p.Required && q.Has(p.Name) && !slices.Contains(required, p.Name) {
				fs = append(fs, Finding{Tool: id, Class: ClassOptional, Detail: fmt.Sprintf("query parameter %q is sent (%s=%s) though the input leaves it out", p.Name, p.Name, q.Get(p.Name))})
			}
		}
	}
	if whole != "" && bodyOptional && !slices.Contains(required, whole) {
		ct, hasCT := w.header("Content-Type")
		if len(w.Body) > 0 && string(w.Body) != "null" || hasCT {
			fs = append(fs, Finding{Tool: id, Class: ClassOptional, Detail: fmt.Sprintf("the input leaves out the optional body %q, and the tool sends %s with Content-Type %q", whole, clipText(string(w.Body), 40), ct)})
		}
	}
	return fs
}
