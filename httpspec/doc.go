// Package httpspec is the "http" kind: the HttpToolSpec types, their
// load-time rules, the RFC 6570 URL template engine and the synthesizer that
// turns a spec into a handler. Importing the package registers the kind in
// synth.DefaultRegistry:
//
//	import _ "github.com/httptools/httptools/httpspec"
package httpspec

import "github.com/httptools/httptools/synth"

// Kind is the spec kind this package synthesizes.
const Kind = "http"

func init() {
	synth.DefaultRegistry().MustRegister(Kind, NewSynthesizer(nil))
}
