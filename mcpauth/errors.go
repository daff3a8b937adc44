package mcpauth

import "fmt"

// Reasons of an *Error, for callers that branch on them.
const (
	// ReasonInsecureURL: a URL learned from metadata is not https (and its
	// host is not one Config.PlainHTTP lets use http), or is no URL.
	ReasonInsecureURL = "insecure-url"
	// ReasonNoMetadata: no protected resource or authorization server
	// metadata was found where the specification says to look.
	ReasonNoMetadata = "no-metadata"
	// ReasonForeignMetadata: metadata that speaks for another resource or
	// issuer than the one asked (RFC 9728 §3.3, RFC 8414 §3.3).
	ReasonForeignMetadata = "foreign-metadata"
	// ReasonBadMetadata: metadata that is not JSON, lacks a required
	// member, or is over the size cap.
	ReasonBadMetadata = "bad-metadata"
	// ReasonUnregistered: the authorization server takes none of the
	// registrations httptools can make.
	ReasonUnregistered = "unregistered"
	// ReasonRegistrationRefused: dynamic registration failed, or answered
	// for another client than the one asked.
	ReasonRegistrationRefused = "registration-refused"
	// ReasonAuthorizationDenied: the authorization response carries an
	// error, a wrong state, or an iss other than the issuer (RFC 9207).
	ReasonAuthorizationDenied = "authorization-denied"
	// ReasonTokenRefused: the token endpoint refused the code or the
	// refresh, or issued a token for another resource.
	ReasonTokenRefused = "token-refused"
)

// Error is a step of the authorization that failed: what was asked of whom,
// and what the operator can do about it.
type Error struct {
	Reason string
	// URL is the address concerned, when there is one.
	URL     string
	Message string
	Err     error
}

// Error says what failed, where, and what to do.
func (e *Error) Error() string {
	s := "mcp authorization: " + e.Message
	if e.URL != "" {
		s += " (" + e.URL + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func errorf(reason, u string, cause error, format string, args ...any) *Error {
	return &Error{Reason: reason, URL: u, Message: fmt.Sprintf(format, args...), Err: cause}
}
