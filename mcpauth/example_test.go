package mcpauth_test

import (
	"fmt"

	"github.com/httptools/httptools/mcpauth"
)

// A server's step-up challenge, as mcpremote hands it on.
func ExampleParseChallenge() {
	ch, err := mcpauth.ParseChallenge([]string{
		`Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(ch.InsufficientScope(), ch.Scopes, ch.ResourceMetadata)
	// Scopes to ask: the challenge's, with those asked before.
	fmt.Println(mcpauth.ChooseScopes(ch, nil, []string{"files:read"}))
	// Output:
	// true [files:read files:write] https://mcp.example.com/.well-known/oauth-protected-resource/mcp
	// [files:read files:write]
}

// The Client ID Metadata Document serve publishes at its client_id URL.
func ExampleClientMetadataDocument() {
	doc := mcpauth.ClientMetadataDocument("https://tools.example.com/oauth/client-metadata.json", "httptools",
		[]string{"https://tools.example.com/v1/oauth/callback"})
	fmt.Println(string(doc))
	// Output:
	// {"client_id":"https://tools.example.com/oauth/client-metadata.json","client_name":"httptools","grant_types":["authorization_code","refresh_token"],"redirect_uris":["https://tools.example.com/v1/oauth/callback"],"response_types":["code"],"token_endpoint_auth_method":"none"}
}
