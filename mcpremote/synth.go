package mcpremote

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/mcpauth"
	"github.com/httptools/httptools/synth"
)

// DefaultTimeoutMs is a call's timeout when the spec sets none: opening
// the session, when there is none yet, included.
const DefaultTimeoutMs = 30000

// DefaultIdleTimeout is how long an unused session stays open.
const DefaultIdleTimeout = 5 * time.Minute

// Config is a synthesizer's: what its tools' calls go through. The zero
// value is the shared guarded client, https only, sessions shut after
// DefaultIdleTimeout.
type Config struct {
	// Client makes every request of an mcp+http or mcp+sse session (its
	// SessionClient); nil is one shared client with the SSRF guard on and
	// no exceptions.
	Client *fetch.Client
	// PlainHTTP are the hosts (patterns as fetch.HostAllowed reads them)
	// whose endpoints are reached over plain http; every other endpoint is
	// https.
	PlainHTTP []string
	// Logger takes the warnings of drift (a remote tool missing, or whose
	// input schema differs from the manifest's; a remote tool that changed
	// since first listed, whose calls are refused) and of sessions and
	// processes; nil discards them.
	Logger *slog.Logger
	// IdleTimeout shuts a session (and stops a stdio process) unused this
	// long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Now is the clock of the sessions' last use and of the idle cut; nil
	// means time.Now. (How often the idle sessions are looked for is real
	// time: a quarter of IdleTimeout, at least 50 ms.)
	Now func() time.Time
	// Authorizer, when set, answers the OAuth challenge of a server that
	// refuses a tool with no spec.authorization (mcp+http and mcp+sse): a
	// 401, or a 403 with insufficient_scope. Its token is sent as a bearer
	// to the endpoint's own scheme and host only; each call authorizes at
	// most once for a 401 and steps up at most once, under the caller's
	// context rather than the tool's timeout (which starts again after).
	// nil: such a refusal is the call's error (reason remote-unauthorized).
	Authorizer mcpauth.Authorizer
}

// Synthesizer builds the handlers of kind "mcp": tools served by a remote
// MCP server. It owns the sessions of every tool it built; Close shuts
// them. It is safe for concurrent use.
type Synthesizer struct {
	cfg  Config
	pool *pool
	// epoch counts the handlers' CheckDriftAgain: a listing knows the
	// epoch it was asked at.
	epoch atomic.Uint64
}

var _ synth.SpecSchemer = (*Synthesizer)(nil)

var (
	sharedOnce   sync.Once
	sharedClient *fetch.Client
)

// NewSynthesizer returns a synthesizer whose calls go through cfg.
// Register it for kind synth.KindMCP:
//
//	reg.MustRegister(synth.KindMCP, mcpremote.NewSynthesizer(mcpremote.Config{Client: client}))
func NewSynthesizer(cfg Config) *Synthesizer {
	if cfg.Client == nil {
		sharedOnce.Do(func() { sharedClient = fetch.NewClient(fetch.Config{UserAgent: httpspec.UserAgent}) })
		cfg.Client = sharedClient
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Synthesizer{cfg: cfg, pool: newPool(cfg.IdleTimeout, cfg.Now, cfg.Logger)}
}

// Close shuts every session and stops every process and every goroutine
// the synthesizer started (the idle reaper, the pings after a timed-out
// stdio call), waiting for them (at most 3 s); a call after it opens new
// ones.
func (s *Synthesizer) Close() error {
	s.pool.closeAll()
	return nil
}

//go:embed spec.schema.json
var specSchema []byte

// SpecSchema returns the JSON Schema of a spec of kind "mcp".
func (*Synthesizer) SpecSchema() []byte { return bytes.Clone(specSchema) }

// Spec is a spec of kind "mcp" (optional in a manifest).
type Spec struct {
	Kind          string                  `json:"kind"`
	Authorization *httpspec.Authorization `json:"authorization,omitempty"`
	TimeoutMs     int                     `json:"timeoutMs,omitempty"`
}

// Synthesize checks what the remote tool needs and makes its handler.
func (s *Synthesizer) Synthesize(b *synth.Build) synth.Handler {
	m, ps, ep := b.Manifest, b.Problems, b.Endpoint
	if ep == nil {
		ps.Error("mcpEndpoint", "is required for a spec of kind \"mcp\": name the server, mcp+http://HOST/PATH, mcp+sse://HOST/PATH or mcp+stdio:///ABSOLUTE/COMMAND")
		return nil
	}
	var spec Spec
	if m.Spec != nil {
		_ = json.Unmarshal(m.Spec.Raw, &spec) // the schema reported what does not fit
	}
	if spec.TimeoutMs > b.Options.MaxTimeoutMs {
		ps.Error("spec.timeoutMs", fmt.Sprintf("%d is above this runtime's maximum of %d ms: lower it", spec.TimeoutMs, b.Options.MaxTimeoutMs))
	}
	h := &Handler{syn: s, ep: ep, remote: ep.RemoteTool(m.ID), toolID: m.ID, auth: spec.Authorization,
		timeout: &synth.Timeout{D: time.Duration(cmp(spec.TimeoutMs, DefaultTimeoutMs)) * time.Millisecond, What: "the tool's timeoutMs"}, mutating: m.IsMutating(),
		input: m.Input}
	if a := spec.Authorization; a != nil {
		a.Check(m, "spec.authorization", ps)
		if a.Kind == httpspec.AuthConnection && m.NeedsSpec != nil {
			if need, ok := m.NeedsSpec.Connections[a.Connection]; ok {
				need.Permissions = slices.Clone(need.Permissions)
				h.need = &need
			}
		}
		if ep.Transport == "stdio" {
			ps.Error("spec.authorization", "a stdio server is a process of this machine and gets no credential: remove the authorization")
		}
	}
	if n := m.Network; n != nil && ep.Transport != "stdio" {
		switch n.Kind {
		case synth.NetworkNone:
			ps.Error("network.kind", "is \"none\", but the tool's server is reached over the network: use an allowlist that names "+ep.URL.Hostname())
		case synth.NetworkAllowlist:
			if !fetch.HostAllowed(n.Hosts, ep.URL.Hostname()) {
				ps.Error("network.hosts", fmt.Sprintf("does not allow the server's host %s: add it", ep.URL.Hostname()))
			}
			h.allowlist, h.restricted = n.Hosts, true
		}
	}
	if l := m.Limits; l != nil && l.MemMB > 0 && l.MemMB<<20 < fetch.DefaultMaxBodyBytes {
		h.maxBody = l.MemMB << 20
	} else {
		h.maxBody = fetch.DefaultMaxBodyBytes
	}
	if ep.Transport != "stdio" {
		h.url = *ep.URL
		if fetch.HostAllowed(s.cfg.PlainHTTP, ep.URL.Hostname()) {
			h.url.Scheme = "http"
		}
	}
	if ps.HasErrors() {
		return nil
	}
	return h
}

func cmp(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
