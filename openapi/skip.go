package openapi

import "fmt"

// SkipReason is why an operation was not imported: one of a fixed set,
// so that a count by reason never depends on how a message is worded (or
// on a library's error text).
type SkipReason string

// The reasons an operation is not imported.
const (
	// SkipMethod: HEAD, OPTIONS or TRACE; a tool's method is GET, POST,
	// PUT, PATCH or DELETE.
	SkipMethod SkipReason = "a method a tool cannot have"
	// SkipParameter: a parameter with no RFC 6570 form (its style), not
	// in the path it belongs to, or whose input name another one has.
	SkipParameter SkipReason = "a parameter a tool cannot send"
	// SkipBody: a request body that is not JSON or a form (multipart,
	// XML, binary), or JSON that is not one object.
	SkipBody SkipReason = "a request body a tool cannot send"
	// SkipCredential: every security alternative needs what a tool cannot
	// send: two credentials at once, an API key in the query or a cookie,
	// a scheme of another kind.
	SkipCredential SkipReason = "credentials a tool cannot send"
	// SkipServer: the operation's own server is not a URL a tool can
	// name (a variable without a default).
	SkipServer SkipReason = "a server a tool cannot name"
	// SkipBrokenComponent: the operation uses a component of the document
	// that is malformed or missing.
	SkipBrokenComponent SkipReason = "it uses a broken component"
	// SkipTooBig: the manifest is over the size budget even cut down.
	SkipTooBig SkipReason = "the manifest is too big"
	// SkipDoesNotLoad: the generated manifest fails the loader's checks.
	SkipDoesNotLoad SkipReason = "the generated manifest does not load"
)

// skipError is an operation not imported: its reason, and the words that
// say what in the operation it was.
type skipError struct {
	reason SkipReason
	msg    string
}

func (e *skipError) Error() string { return "skipped: " + e.msg }

// skipf is a skipError whose words are formatted.
func skipf(reason SkipReason, format string, args ...any) error {
	return &skipError{reason: reason, msg: fmt.Sprintf(format, args...)}
}
