// Package auth resolves the credentials a tool declares and applies them to a
// request: a secret sent as a bearer token or in a named header, or the access
// token of an OAuth connection. It also holds the secret resolvers (the
// process environment, a map for tests, a chain) and the Redactor that keeps
// resolved values out of every error.
package auth
