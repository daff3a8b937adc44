package mcpauth

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Challenge is what a server's 401 or 403 asks of an OAuth client: its
// Bearer challenge's parameters.
type Challenge struct {
	// ResourceMetadata is the URL of the protected resource metadata, ""
	// when the server gives none.
	ResourceMetadata string
	// Scopes are the scopes the server wants, nil when it names none.
	Scopes []string
	// Error is the OAuth error code: "invalid_token", "insufficient_scope"…
	Error string
}

// InsufficientScope says the server asks for more scopes than the token has
// (a step-up).
func (c Challenge) InsufficientScope() bool { return c.Error == "insufficient_scope" }

// maxChallengeBytes bounds the WWW-Authenticate values read: a server may
// send anything.
const maxChallengeBytes = 8 << 10

// ParseChallenge reads the Bearer challenge of WWW-Authenticate values (the
// SDK's parser splits them). A response with no Bearer challenge gives the
// zero Challenge; a malformed or oversized one an error.
func ParseChallenge(values []string) (Challenge, error) {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	if n > maxChallengeBytes {
		return Challenge{}, fmt.Errorf("the WWW-Authenticate header is %d bytes, over the %d read", n, maxChallengeBytes)
	}
	cs, err := oauthex.ParseWWWAuthenticate(values)
	if err != nil {
		return Challenge{}, fmt.Errorf("the WWW-Authenticate header is malformed: %w", err)
	}
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		out := Challenge{ResourceMetadata: c.Params["resource_metadata"], Error: c.Params["error"]}
		if s := strings.Fields(c.Params["scope"]); len(s) > 0 {
			out.Scopes = s
		}
		return out, nil
	}
	return Challenge{}, nil
}

// ChallengeOf reads the challenge of a response: its WWW-Authenticate
// values.
func ChallengeOf(h http.Header) (Challenge, error) {
	return ParseChallenge(h.Values("WWW-Authenticate"))
}
