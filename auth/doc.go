// Package auth holds the credentials of both sides of a call.
//
// Upstream, it resolves a tool's secret references: from the process
// environment (HTTPTOOLS_SECRET_<ENV>_<NAME>), a map (tests, the CLI's
// --secret), a tenant's store, or a chain of those. How a kind sends a
// secret is the kind's (package httpspec: bearer, a named header, a
// connection's token).
//
// Toward the service, it says what an API key is (APIKey, its role) and
// which keys make sense (CheckRole); the store keeps them hashed and the
// service checks them.
package auth
