package mcpauth

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// FuzzTokenAnswer: no token endpoint answer panics the parser or the
// resource check (its resource, aud, or a JWT's aud), and a token the check
// lets through has an access token.
func FuzzTokenAnswer(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"a","token_type":"Bearer","expires_in":3600}`,
		`{"access_token":"a","token_type":"bearer","expires_in":"60","resource":"https://r.example/mcp"}`,
		`{"access_token":"x.eyJhdWQiOlsiaHR0cHM6Ly9yLmV4YW1wbGUvbWNwIl19.y","aud":["https://o.example",5]}`,
		`{"error":"invalid_grant"}`, `[]`, `null`, `{"access_token":7}`,
	} {
		f.Add([]byte(s), 200)
	}
	d := &Discovery{Resource: "https://r.example/mcp", Server: &oauthex.AuthServerMeta{TokenEndpoint: "https://as.example/token"}}
	f.Fuzz(func(t *testing.T, body []byte, status int) {
		tok, err := parseToken(body, status)
		if err != nil {
			return
		}
		if checkToken(tok, d) == nil && tok.AccessToken == "" {
			t.Fatal("a token without access_token passed the check")
		}
	})
}
