// Package synth turns a Tool manifest (the Tool definition, schema version
// 1.3.0) into a callable [Tool].
//
// It holds the manifest model, strict load-time validation that reports every
// problem at once with its field path, JSON Schema compilation for a tool's
// input and output, the synthesizer [Registry] that maps a spec kind to the
// code that runs it, the [Tool.Invoke] pipeline and the error taxonomy.
//
// synth knows nothing about HTTP: the "http" kind lives in package httpspec,
// which registers itself in [DefaultRegistry] when imported:
//
//	import _ "github.com/httptools/httptools/httpspec"
//
//	tool, err := synth.Load(src)
//	res, err := tool.Invoke(ctx, synth.CallContext{Tenant: "acme", Secrets: resolver}, input,
//		synth.InvokeOptions{Timeout: 2 * time.Second})
//
// Another kind registers a [Synthesizer] in a registry of its own (see the
// example); one that is a [SpecSchemer] has its spec checked at load.
package synth
