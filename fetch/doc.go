// Package fetch is the outbound HTTP client for untrusted manifests.
//
// Every call goes through an SSRF guard that checks the IP really dialled
// (every connection, redirect hops included) against loopback, private,
// link-local, metadata and the other ranges in deniedRanges; an optional
// per-call host allowlist checked on the first request and on every redirect
// hop; credential stripping on cross-host redirects; retries by method class
// that never repeat a write the upstream may have received; one deadline from
// the caller's context over everything; a cap on the response body enforced
// while reading; and one structured audit record per call (to the logger it
// is given: none by default). Environment proxies are ignored unless
// configured. Config.WrapTransport layers tracing or recording above the
// policy, and every attempt is an OpenTelemetry client span carrying the
// W3C trace context to the upstream.
package fetch
