package httpspec

import (
	"encoding/json"
)

// Spec is the declarative HTTP invocation of a tool (HttpToolSpec).
type Spec struct {
	Kind          string         `json:"kind"`
	Method        string         `json:"method"`
	URLTemplate   string         `json:"urlTemplate"`
	Headers       []Header       `json:"headers,omitempty"`
	Authorization *Authorization `json:"authorization,omitempty"`
	RequestBody   *RequestBody   `json:"requestBody,omitempty"`
	TimeoutMs     int            `json:"timeoutMs,omitempty"`
	ParseJSON     *bool          `json:"parseJson,omitempty"`
	SuccessStatus *StatusRange   `json:"successStatus,omitempty"`
}

// Header is one manifest header; {name} in Value is filled from the input.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// RequestBody says how the body is built: kind json-input, input-passthrough
// or text (with Template).
type RequestBody struct {
	Kind     string `json:"kind"`
	Template string `json:"template,omitempty"`
}

// StatusRange is the inclusive range of upstream statuses that count as
// success.
type StatusRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// DefaultTimeoutMs bounds a call whose spec sets no timeoutMs.
const DefaultTimeoutMs = 30000

// Timeout returns timeoutMs or its default.
func (s *Spec) Timeout() int {
	if s.TimeoutMs > 0 {
		return s.TimeoutMs
	}
	return DefaultTimeoutMs
}

// Parse reports whether the response is parsed as JSON (the default).
func (s *Spec) Parse() bool { return s.ParseJSON == nil || *s.ParseJSON }

// Success returns the success range, 200–299 unless set.
func (s *Spec) Success() StatusRange {
	if s.SuccessStatus != nil {
		return *s.SuccessStatus
	}
	return StatusRange{200, 299}
}

// BodyKind returns the effective body kind: the spec's, or json-input for
// POST, PUT, PATCH and DELETE, or "" (no body) for GET.
func (s *Spec) BodyKind() string {
	if s.RequestBody != nil {
		return s.RequestBody.Kind
	}
	if s.Method == "GET" {
		return ""
	}
	return "json-input"
}

func decodeSpec(raw json.RawMessage) *Spec {
	s := &Spec{}
	_ = json.Unmarshal(raw, s) // the manifest schema reported every shape problem
	return s
}
