// Package auth resolves secret references: from the process environment
// (HTTPTOOLS_SECRET_<ENV>_<NAME>), a map (tests, the CLI's --secret), a
// tenant's store, or a chain of those. How a kind sends a secret is the
// kind's (package httpspec: bearer, a named header, a connection's token).
package auth
