// Package mcpremote calls tools that live on other MCP servers: a manifest
// with transport "mcp" and an mcpEndpoint (mcp+http, mcp+sse or
// mcp+stdio), under the same guards as an http tool. httptools is the MCP
// client (the official Go SDK's); the input is checked against the
// manifest's schema before anything is sent and the remote result against
// its output schema, by synth, as for every tool.
//
// Over mcp+http and mcp+sse every request of a session goes through a
// fetch.Client's session client: the SSRF guard on every address dialled,
// the tool's allowlist on every request and redirect hop, each answer
// capped (limits.memMB, else fetch.DefaultMaxBodyBytes; an event by the
// same cap) and drawn on the memory budget, a span and an audit record per
// request. The endpoint is reached over https, or plain http for a host
// Config.PlainHTTP names. The credential, when the tool has one (a spec of
// kind "mcp" with an authorization, as an http spec writes it: a secret as
// a bearer or a named header, or a declared connection), is sent only to
// the endpoint's own scheme and host, never on a hop elsewhere.
//
// A tool with no authorization whose server asks for OAuth (a 401 with a
// WWW-Authenticate challenge, or a 403 with insufficient_scope) is
// authorized through Config.Authorizer (package mcpauth: discovery,
// registration, the authorization code flow): a held token is sent first;
// a 401 is answered by one authorization and a 403 by one step-up per
// call, after which the refusal is the call's error. An authorization is
// not the call's time: it runs under the caller's context, not the tool's
// timeout, which starts again after it (a person may be at the page). The
// token goes to the endpoint's scheme and host only, as a declared
// credential does.
//
// Sessions are pooled per tenant, endpoint, credential and allowlist, and
// shut after Config.IdleTimeout unused (by Config.Now's clock). Every
// goroutine the package starts (the idle reaper, a session's watcher, the
// ping after a timed-out stdio call) is stopped and waited for by
// Synthesizer.Close. A session the server has forgotten
// (404 to its id) is opened again and the call sent again: the server did
// not run it. Any other failure is tried once more only for a tool that is
// mutating: false; a connection's token refused with 401 is refreshed once,
// as for http tools. Nothing is shared between replicas: each opens its
// own sessions, so a load balancer needs no sticky routing.
//
// Over mcp+stdio the command (which the loader allowed: serve
// --allow-stdio) runs with an empty environment in a folder of its own,
// one process per tenant and command, its output lines capped, its
// stderr kept to the log's first lines; a process that dies is started
// again on the next call, and one that does not answer a ping after a
// call timed out is killed.
//
// Each session lists the server's tools before its first call, and lists
// them again on its next call after Handler.CheckDriftAgain (a reload).
// What a model reads of the remote tool (title, description, input and
// output schemas, annotations, _meta, icons) is pinned by the handler's
// first listing; a call is sent only when the session's listing still
// says the same, else it is refused (reason remote-drifted, naming the
// members that changed, never their new text) and the drift logged. A
// remote tool missing, or whose input schema is not the manifest's, is a
// warning only.
//
// The result becomes the tool's output: structuredContent when the server
// gives it; else the text of its text blocks, parsed when it is one JSON
// value and a JSON string when not; else the content blocks as they are.
// A result with isError is a handler error (reason remote-tool-error)
// carrying the server's text, redacted.
//
// Importing the package registers a synthesizer for kind "mcp" in
// synth.DefaultRegistry, with the shared guarded client and no plain-HTTP
// hosts.
package mcpremote

import "github.com/httptools/httptools/synth"

func init() {
	synth.DefaultRegistry().MustRegister(synth.KindMCP, NewSynthesizer(Config{}))
}
