package httpspec

import (
	"bytes"
	_ "embed"
)

//go:embed spec.schema.json
var specSchema []byte

// SpecSchema returns the JSON Schema of the http kind's spec
// (HttpToolSpec, Tool definition 1.3.0), which synth checks every http
// manifest's spec against: a copy.
func SpecSchema() []byte { return bytes.Clone(specSchema) }

// SpecSchema makes the synthesizer a synth.SpecSchemer.
func (*Synthesizer) SpecSchema() []byte { return SpecSchema() }
