// Package mcpauth finds its way into a remote MCP server that sits behind
// OAuth, as the MCP authorization specification (2025-11-25) lays out, with
// no arrangement made beforehand:
//
//   - ParseChallenge reads the server's 401 or 403: WWW-Authenticate: Bearer
//     resource_metadata=…, scope=…, error=insufficient_scope.
//   - Discover fetches the protected resource metadata (RFC 9728: the
//     challenge's URL, else the well-known URL at the endpoint's path, else
//     at the root), then the metadata of the first authorization server it
//     names (RFC 8414, then OpenID discovery, path insertion first).
//   - Registrar picks the client, in the specification's order: one the
//     operator pre-registered (apps.json, or the CLI's flags), a Client ID
//     Metadata Document (when the server takes one: ClientMetadataDocument
//     builds it and MetadataHandler serves it at the URL that is the
//     client_id), dynamic registration (RFC 7591; RegistrationStore keeps one
//     per authorization server), else an *UnregisteredError saying what the
//     operator must register.
//   - Begin builds the authorization URL (PKCE S256, the resource indicator
//     of RFC 8707, a state, the scopes ChooseScopes picks); Pending.Exchange
//     checks the answer (state, the iss of RFC 9207) and trades the code for
//     a token at the token endpoint, authenticating as the server supports
//     (client_secret_basic, client_secret_post or none); Refresh renews it,
//     the resource indicator sent with it too.
//   - Flow strings these together for one process (httptools call): it
//     implements Authorizer, the hook mcpremote calls on a challenge, keeps
//     a token per resource and the union of the scopes asked, and opens the
//     authorization URL with an Opener (Headless follows its redirects to a
//     loopback callback, as the official conformance suite expects).
//
// Metadata is chosen by whoever runs the server, so it is treated as hostile:
// every URL learned from a server or its metadata is fetched through a
// fetch.Client under the tool's Egress (the SSRF guard, the tool's
// allowlist, a size cap per document, one deadline over discovery and
// registration); every URL, and every redirect hop, must be https unless
// Config.PlainHTTP names its host; the protected resource metadata must name the endpoint's own origin
// and a resource the endpoint lies under; the authorization server must be
// one it names and its metadata must carry that issuer; a registration
// answer must be for the redirect URI asked; a token whose response or JWT
// says it is for another resource is refused. A token is bound to its
// resource and mcpremote sends it to the endpoint's scheme and host only.
package mcpauth
