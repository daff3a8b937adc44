package synth

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Manifest is a Tool definition, schema version 1.3.0. Every field of the
// format has a Go field here; JSON Schemas and free-form maps stay raw JSON so
// that nothing is lost or re-encoded.
type Manifest struct {
	ID          string          `json:"id"`
	Description string          `json:"description"`
	Version     string          `json:"version"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output"`

	Needs       []Need          `json:"needs,omitempty"`
	Effects     []Effect        `json:"effects,omitempty"`
	Transport   string          `json:"transport,omitempty"` // "auto" (default), "native" or "mcp"
	MCPEndpoint string          `json:"mcpEndpoint,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Sandbox     string          `json:"sandbox,omitempty"`

	// Mutating is nil when absent, which counts as true.
	Mutating *bool `json:"mutating,omitempty"`
	// NeedsApprovalWhenUnattended asks for a person's yes on every call in a
	// run no person started.
	NeedsApprovalWhenUnattended bool `json:"needsApprovalWhenUnattended,omitempty"`
	// Pauses is only valid on pack tools with a handler, never with Spec.
	Pauses bool `json:"pauses,omitempty"`
	// ResultIsOutsideData is nil when absent. See [Manifest.OutsideData].
	ResultIsOutsideData *bool `json:"resultIsOutsideData,omitempty"`

	Limits          *Limits          `json:"limits,omitempty"`
	Network         *Network         `json:"network,omitempty"`
	NeedsSpec       *NeedsSpec       `json:"needsSpec,omitempty"`
	CodeArtifactRef *CodeArtifactRef `json:"codeArtifactRef,omitempty"`
	Spec            *Spec            `json:"spec,omitempty"`
}

// IsMutating reports whether the tool counts as mutating: absent means true.
func (m *Manifest) IsMutating() bool { return m.Mutating == nil || *m.Mutating }

// OutsideData reports whether results are to be read as outside data. httptools
// treats an HTTP response as outside data unless the manifest sets
// resultIsOutsideData: false.
func (m *Manifest) OutsideData() bool { return m.ResultIsOutsideData == nil || *m.ResultIsOutsideData }

// Need is a named context slot the runtime injects.
type Need struct {
	Name     string `json:"name"`
	Optional bool   `json:"optional,omitempty"`
}

// Effect is a declared side effect.
type Effect struct {
	Kind     string `json:"kind"` // reads, writes, deletes, network, spawns-run, emits-event, external-side-effect, sensitive-data-egress
	Resource string `json:"resource,omitempty"`
	Notes    string `json:"notes,omitempty"`
}

// Limits are resource caps at dispatch.
type Limits struct {
	MemMB int64 `json:"memMB"`
	CPUMs int64 `json:"cpuMs"`
}

// Network kinds.
const (
	NetworkNone         = "none"
	NetworkUnrestricted = "unrestricted"
	NetworkAllowlist    = "allowlist"
)

// Network is the egress policy: kind none, unrestricted or allowlist.
type Network struct {
	Kind  string   `json:"kind"`
	Hosts []string `json:"hosts,omitempty"`
}

// NeedsSpec holds the typed needs of a tool.
type NeedsSpec struct {
	Env          map[string]json.RawMessage `json:"env,omitempty"`
	Secrets      map[string]json.RawMessage `json:"secrets,omitempty"`
	Config       map[string]json.RawMessage `json:"config,omitempty"`
	Capabilities []string                   `json:"capabilities,omitempty"`
	Bindings     []string                   `json:"bindings,omitempty"`
	Connections  map[string]ConnectionNeed  `json:"connections,omitempty"`
}

// Connection owners.
const (
	AsPerson  = "person"
	AsCompany = "company"
)

// ConnectionNeed names an account at another app the tool acts with.
type ConnectionNeed struct {
	App         string   `json:"app"`
	Permissions []string `json:"permissions"`
	As          string   `json:"as"` // "person" or "company"
}

// CodeArtifactRef points at an imperative handler: kind "oci" or "filesystem".
type CodeArtifactRef struct {
	Kind            string `json:"kind"`
	ImageRef        string `json:"imageRef,omitempty"`
	ModulePath      string `json:"modulePath,omitempty"`
	ArtifactVersion string `json:"artifactVersion,omitempty"`
}

// Spec is a declarative handler spec. Kind picks the synthesizer; Raw is the
// whole spec object, which the synthesizer decodes into its own type.
type Spec struct {
	Kind string
	Raw  json.RawMessage
}

// UnmarshalJSON keeps the raw object and reads its kind.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	s.Kind, s.Raw = k.Kind, append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes the raw spec back unchanged.
func (s Spec) MarshalJSON() ([]byte, error) {
	if s.Raw == nil {
		return []byte("null"), nil
	}
	return s.Raw, nil
}

// clone returns a deep copy of m: nothing in it shares memory with m.
func (m *Manifest) clone() *Manifest {
	c := *m
	c.Input, c.Output, c.Metadata = bytes.Clone(m.Input), bytes.Clone(m.Output), bytes.Clone(m.Metadata)
	c.Needs, c.Effects = slices.Clone(m.Needs), slices.Clone(m.Effects)
	if m.Mutating != nil {
		v := *m.Mutating
		c.Mutating = &v
	}
	if m.ResultIsOutsideData != nil {
		v := *m.ResultIsOutsideData
		c.ResultIsOutsideData = &v
	}
	if m.Limits != nil {
		v := *m.Limits
		c.Limits = &v
	}
	if m.Network != nil {
		v := Network{Kind: m.Network.Kind, Hosts: slices.Clone(m.Network.Hosts)}
		c.Network = &v
	}
	if ns := m.NeedsSpec; ns != nil {
		v := NeedsSpec{Env: cloneRaws(ns.Env), Secrets: cloneRaws(ns.Secrets), Config: cloneRaws(ns.Config),
			Capabilities: slices.Clone(ns.Capabilities), Bindings: slices.Clone(ns.Bindings)}
		if ns.Connections != nil {
			v.Connections = make(map[string]ConnectionNeed, len(ns.Connections))
			for k, cn := range ns.Connections {
				cn.Permissions = slices.Clone(cn.Permissions)
				v.Connections[k] = cn
			}
		}
		c.NeedsSpec = &v
	}
	if m.CodeArtifactRef != nil {
		v := *m.CodeArtifactRef
		c.CodeArtifactRef = &v
	}
	if m.Spec != nil {
		c.Spec = &Spec{Kind: m.Spec.Kind, Raw: bytes.Clone(m.Spec.Raw)}
	}
	return &c
}

func cloneRaws(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = bytes.Clone(v)
	}
	return out
}
