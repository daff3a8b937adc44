package httptest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/httptools/httptools/synth"
)

//go:embed cases.schema.json
var casesSchemaJSON []byte

// CasesSchema returns the JSON Schema of a NAME.cases.json file: a copy.
func CasesSchema() []byte { return bytes.Clone(casesSchemaJSON) }

// Case is one test case of a tool: the input and context of a call, the
// request the tool must send, what the fake upstream answers, and the
// expected output or error.
type Case struct {
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Context  CaseContext     `json:"context"`
	Request  *WantRequest    `json:"request"`
	Response *Response       `json:"response"`
	Output   json.RawMessage `json:"output"`
	Error    *WantError      `json:"error"`
}

// CaseContext is who the call runs for, and the secrets and connection
// tokens it may use (test values, never real ones).
type CaseContext struct {
	Person         string            `json:"person"`
	Unattended     bool              `json:"unattended"`
	Approved       bool              `json:"approved"`
	IdempotencyKey string            `json:"idempotencyKey"`
	Secrets        map[string]string `json:"secrets"`     // "envName/name" → value
	Connections    map[string]string `json:"connections"` // connection name → access token
}

// WantRequest is the request a case expects. A case with neither a request
// nor a response expects the tool to send nothing; with a response only, the
// request is not checked.
type WantRequest struct {
	Method        string            `json:"method"`
	URL           string            `json:"url"`
	Headers       map[string]string `json:"headers"`
	AbsentHeaders []string          `json:"absentHeaders"`
	JSON          json.RawMessage   `json:"json"`
	Text          *string           `json:"text"`
	NoBody        bool              `json:"noBody"`
}

// Response is a scripted answer of the fake upstream.
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	JSON    json.RawMessage   `json:"json"`
	Body    *string           `json:"body"`
	DelayMs int               `json:"delayMs"`
}

// WantError is the error a case expects.
type WantError struct {
	Code            string `json:"code"`
	Reason          string `json:"reason"`
	MessageContains string `json:"messageContains"`
}

// LoadCases reads and checks a cases file; problems come back as a
// *synth.Error listing each with its field path ("[2].request.url").
func LoadCases(path string) ([]Case, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseCases(src)
}

var casesSchema = sync.OnceValue(func() *synth.DocumentSchema {
	d, err := synth.CompileDocumentSchema(casesSchemaJSON)
	if err != nil {
		panic("httptest: cases.schema.json: " + err.Error())
	}
	d.What = "a cases file (httptest/cases.schema.json)"
	return d
})

// ParseCases checks a cases document against CasesSchema() and decodes it.
func ParseCases(src []byte) ([]Case, error) {
	if ps := casesSchema().Check(src); len(ps) > 0 {
		msgs := make([]string, len(ps))
		for i, p := range ps {
			msgs[i] = p.String()
		}
		return nil, &synth.Error{Code: synth.CodeInvalidToolDefinition, Problems: ps, Message: "invalid cases file: " + strings.Join(msgs, "; ")}
	}
	var cs []Case
	if err := json.Unmarshal(src, &cs); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, c := range cs {
		if seen[c.Name] {
			return nil, fmt.Errorf("[%d].name: %q is used by another case: names must be unique", i, c.Name)
		}
		seen[c.Name] = true
	}
	return cs, nil
}
