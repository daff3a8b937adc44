package mcpremote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
)

// driftTimeout bounds the listing of a server's tools.
const driftTimeout = 10 * time.Second

// checkDrift lists the server's tools once, after the first call of the
// handler, and logs what differs from the manifest.
func (h *Handler) checkDrift(cs *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), driftTimeout)
	defer cancel()
	notes, err := h.compare(ctx, cs)
	if err != nil {
		h.syn.cfg.Logger.Warn("mcp drift: could not list the server's tools", "tool", h.toolID, "server", h.where(), "error", err.Error())
		return
	}
	for _, n := range notes {
		h.syn.cfg.Logger.Warn("mcp drift: "+n, "tool", h.toolID, "server", h.where(), "remote_tool", h.remote)
	}
}

// Drift opens a session as a call with cc would, lists the server's tools
// and says how the manifest differs from what the server offers: the
// remote tool missing, or its input schema not the manifest's. None is
// nil. validate --remote prints them.
func (h *Handler) Drift(ctx context.Context, cc synth.CallContext) ([]string, error) {
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
	s, err := h.syn.pool.get(ctx, h.key(cc.Tenant, cred), func(s *session) error { return h.open(ctx, s, call, cred) })
	if err != nil {
		return nil, h.openError(err, call)
	}
	defer s.done()
	return h.compare(ctx, s.cs)
}

// compare lists the server's tools and compares the manifest's with its
// namesake.
func (h *Handler) compare(ctx context.Context, cs *mcp.ClientSession) ([]string, error) {
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t.Name != h.remote {
			names = append(names, t.Name)
			continue
		}
		theirs, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, err
		}
		if !sameSchema(h.input, theirs) {
			return []string{fmt.Sprintf("the server's input schema of tool %q differs from the manifest's input: update the manifest (the server's: %s)", h.remote, clip(string(theirs)))}, nil
		}
		return nil, nil
	}
	return []string{fmt.Sprintf("the server offers no tool %q (it offers %d: %s): name the remote tool in the endpoint's fragment (#name), or remove the manifest", h.remote, len(names), clip(fmt.Sprint(names)))}, nil
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
