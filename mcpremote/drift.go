package mcpremote

// Drift: what a model reads of a remote tool (its title, description,
// input and output schemas, annotations, _meta and icons) is pinned as
// the handler first lists it, and every call is checked, before it is
// sent, against its session's listing: a tool that changed since is
// refused. The manifest's own checks (the remote tool missing, an input
// schema not the manifest's) stay warnings: a manifest may narrow what it
// passes on.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
)

// maxListed bounds the tools a listing keeps: a server that lists more
// (pages without end) is not used.
const maxListed = 10000

// listing is what a session's server said of its tools at one time.
type listing struct {
	epoch uint64 // the synthesizer's drift epoch when it was asked
	names []string
	tools map[string][]*mcp.Tool // every copy of a name, in listing order
	// verdicts holds each handler's reading of the listing (*Handler →
	// *verdict), made once.
	verdicts sync.Map
}

// verdict is a handler's reading of a listing: the notes to log, and the
// refusal of its calls when the remote tool drifted from its pin.
type verdict struct {
	notes   []string
	refusal *synth.Error
}

// view is what a model reads of a remote tool: each member of its listing
// but the name (which finds it), as canonical JSON. Members the SDK adds
// later are compared too.
type view map[string]string

// list asks the server of cs for its tools; epoch is the synthesizer's
// when the question was put.
func list(ctx context.Context, cs *mcp.ClientSession, epoch uint64) (*listing, error) {
	l := &listing{epoch: epoch, tools: map[string][]*mcp.Tool{}}
	n := 0
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if n++; n > maxListed {
			return nil, fmt.Errorf("the server lists more than %d tools", maxListed)
		}
		if _, ok := l.tools[t.Name]; !ok {
			l.names = append(l.names, t.Name)
		}
		l.tools[t.Name] = append(l.tools[t.Name], t)
	}
	return l, nil
}

// vet checks the remote tool as the server now lists it on s, before a
// call is sent: nil, or the refusal of a tool that drifted. It lists the
// tools again when the listing is older than the last CheckDriftAgain.
func (h *Handler) vet(ctx context.Context, s *session) error {
	l, err := h.listingOf(ctx, s)
	if err != nil {
		return err
	}
	v := h.verdictOf(l)
	if v.refusal == nil {
		return nil
	}
	e := *v.refusal // the caller's copy: the pipeline rewrites its message
	return &e
}

// listingOf returns s's listing, listed again when a reload asked for a
// newer one. Calls that find it stale at once each list (each within its
// own deadline); the last answer stays.
func (h *Handler) listingOf(ctx context.Context, s *session) (*listing, error) {
	l := s.listing.Load()
	if l != nil && l.epoch >= h.since.Load() {
		return l, nil
	}
	l, err := list(ctx, s.cs, h.syn.epoch.Load())
	if err != nil {
		return nil, &listError{err}
	}
	s.listing.Store(l)
	return l, nil
}

// verdictOf reads l once per handler and logs its notes when they are not
// the ones last logged (every session of every tenant lists the same
// server).
func (h *Handler) verdictOf(l *listing) *verdict {
	if v, ok := l.verdicts.Load(h); ok {
		return v.(*verdict)
	}
	v, loaded := l.verdicts.LoadOrStore(h, h.judge(l))
	if !loaded {
		h.log(v.(*verdict).notes)
	}
	return v.(*verdict)
}

// log logs notes unless they are the ones last logged.
func (h *Handler) log(notes []string) {
	joined := strings.Join(notes, "\n")
	if last := h.logged.Swap(&joined); last != nil && *last == joined {
		return
	}
	for _, n := range notes {
		h.syn.cfg.Logger.Warn("mcp drift: "+n, "tool", h.toolID, "server", h.where(), "remote_tool", h.remote)
	}
}

// judge compares the remote tool of l with the manifest (notes) and with
// the pin, which the first listing that has the tool sets (a refusal).
func (h *Handler) judge(l *listing) *verdict {
	copies := l.tools[h.remote]
	if len(copies) == 0 {
		if h.pin.Load() != nil {
			return h.drifted([]string{"name"}, fmt.Sprintf("the server no longer offers tool %q", h.remote))
		}
		return &verdict{notes: []string{fmt.Sprintf("the server offers no tool %q (it offers %d: %s): name the remote tool in the endpoint's fragment (#name), or remove the manifest",
			h.remote, len(l.names), clip(fmt.Sprint(l.names)))}}
	}
	v := &verdict{}
	if theirs, err := json.Marshal(copies[0].InputSchema); err == nil && !sameSchema(h.input, theirs) {
		v.notes = append(v.notes, fmt.Sprintf("the server's input schema of tool %q differs from the manifest's input: update the manifest (the server's: %s)", h.remote, clip(string(theirs))))
	}
	first := viewOf(copies[0])
	h.pin.CompareAndSwap(nil, &first)
	pin := *h.pin.Load()
	var fields []string
	for _, c := range copies {
		for _, f := range pin.changed(viewOf(c)) {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	if len(fields) > 0 {
		slices.Sort(fields)
		d := h.drifted(fields, fmt.Sprintf("tool %q changed since this service first listed it", h.remote))
		d.notes = append(v.notes, d.notes...)
		return d
	}
	return v
}

// drifted is the verdict of a remote tool that is not what it was when
// pinned: fields name what changed; the new values are not quoted (they
// are the server's words, and the refusal reaches a model).
func (h *Handler) drifted(fields []string, what string) *verdict {
	msg := fmt.Sprintf("%s (changed: %s): its calls are refused and nothing is sent; review the remote tool, then change the manifest (its version) and reload, or restart, to accept it",
		what, strings.Join(fields, ", "))
	return &verdict{notes: []string{msg}, refusal: &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonRemoteDrifted,
		Message: fmt.Sprintf("the MCP server %s: %s", h.where(), msg)}}
}

// viewOf is what a model reads of t.
func viewOf(t *mcp.Tool) view {
	v := view{}
	raw, err := json.Marshal(t)
	var members map[string]json.RawMessage
	if err != nil || json.Unmarshal(raw, &members) != nil {
		v["(unreadable)"] = string(raw) // never equal to a readable pin
		return v
	}
	for k, m := range members {
		if k != "name" {
			v[k] = canonical(m)
		}
	}
	return v
}

// changed lists the members of now that differ from v, or that only one
// of them has.
func (v view) changed(now view) []string {
	var out []string
	for k, a := range v {
		if b, ok := now[k]; !ok || a != b {
			out = append(out, k)
		}
	}
	for k := range now {
		if _, ok := v[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// canonical is raw as a JSON value with sorted keys and its numbers as
// written, so member order and spacing are no change.
func canonical(raw []byte) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var x any
	if d.Decode(&x) != nil {
		return string(raw)
	}
	out, err := json.Marshal(x)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// Drift opens a session as a call with cc would, lists the server's tools
// and says how the remote tool differs from the manifest (missing, or its
// input schema not the manifest's) and from what this handler first saw
// of it. None is nil. validate --remote prints them.
func (h *Handler) Drift(ctx context.Context, cc synth.CallContext) ([]string, error) {
	l, err := h.listed(ctx, cc)
	if err != nil {
		return nil, err
	}
	return h.verdictOf(l).notes, nil
}

// Tools opens a session as a call with cc would and returns every tool
// the server lists, in listing order, each copy of a name listed twice
// included: what import mcp writes manifests from and validate --remote
// compares pins with. Within one session it is the listing Drift reads.
func (h *Handler) Tools(ctx context.Context, cc synth.CallContext) ([]*mcp.Tool, error) {
	l, err := h.listed(ctx, cc)
	if err != nil {
		return nil, err
	}
	var out []*mcp.Tool
	for _, n := range l.names {
		out = append(out, l.tools[n]...)
	}
	return out, nil
}

// listed is the listing of a session opened as a call with cc would,
// within the tool's timeout.
func (h *Handler) listed(ctx context.Context, cc synth.CallContext) (*listing, error) {
	call := &synth.Call{Context: cc, Secrets: &redact.Set{}}
	var err error
	ctx, cancel := context.WithTimeout(ctx, h.timeout.D)
	defer cancel()
	var cred httpspec.Credential
	if h.auth != nil {
		if cred, err = h.credential(ctx, call, ""); err != nil {
			return nil, err
		}
	}
	if h.oauth() {
		if cred, err = h.heldToken(ctx, call); err != nil {
			return nil, err
		}
	}
	var tries oauthTries
	for {
		s, err := h.syn.pool.get(ctx, h.key(cc.Tenant, cred), func(s *session) error { return h.open(ctx, s, call, cred) })
		var u *unauthorizedError
		if err != nil && errors.As(err, &u) && u.ch != nil && h.oauth() {
			// A server behind OAuth (import mcp, validate --remote):
			// authorized as a call is, at most once, then listed again.
			if cred, err = h.authorize(ctx, call, u.ch, &tries); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, h.openError(err, call)
		}
		defer h.syn.pool.done(s)
		return h.listingOf(ctx, s)
	}
}

// PinKey is the member of a manifest's metadata that holds the remote
// tool as its server listed it when a pack author imported it
// (httptools import mcp): the pin validate --remote compares the
// server's listing with.
const PinKey = "mcpTool"

// PinnedTool reads the remote tool a manifest's metadata pins under
// PinKey: nil and no error when it pins none.
func PinnedTool(metadata json.RawMessage) (*mcp.Tool, error) {
	if len(metadata) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(metadata, &m); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	raw, ok := m[PinKey]
	if !ok {
		return nil, nil
	}
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("metadata.%s is not an MCP tool as a server lists it: %w", PinKey, err)
	}
	return &t, nil
}

// Changed names, sorted, the members of what a model reads of a remote
// tool (every member of its listing but the name, as the handler's own
// pin compares them) that differ between was and now: nil when none.
func Changed(was, now *mcp.Tool) []string {
	fields := viewOf(was).changed(viewOf(now))
	slices.Sort(fields)
	return fields
}

// sameSchema compares two JSON Schemas as values, ignoring $schema.
func sameSchema(a, b []byte) bool {
	norm := func(raw []byte) []byte {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return raw
		}
		if m, ok := v.(map[string]any); ok {
			delete(m, "$schema")
		}
		out, _ := json.Marshal(v)
		return out
	}
	return bytes.Equal(norm(a), norm(b))
}

// listError is a server that did not list its tools: no call is sent
// unchecked.
type listError struct{ err error }

func (e *listError) Error() string { return "listing the server's tools: " + e.err.Error() }
func (e *listError) Unwrap() error { return e.err }
