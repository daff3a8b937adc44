// Package connections holds the OAuth accounts tools act with: apps
// (apps.json), connection records per tenant and owner (a person or the
// company), their storage (SQLite and PostgreSQL, tokens encrypted at rest),
// token refresh that happens once per connection even under concurrency and
// across replicas, and the authorization-code connect flow with PKCE.
//
// A Manager is the synth.ConnectionSource the http handler asks for tokens.
package connections
