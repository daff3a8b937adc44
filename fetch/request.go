package fetch

import (
	"io"
	"log/slog"
	"net/http"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/redact"
)

// Request is one outbound call.
type Request struct {
	Method string
	URL    string
	// Header is read, never changed: calls may share one.
	Header http.Header
	Body   []byte // nil for none; sent whole on every attempt

	// Allowlist restricts the hosts of the first request and of every
	// redirect hop when Restricted is set (see HostAllowed).
	Allowlist  []string
	Restricted bool
	// AuthHeaders are the headers that carry credentials; they are dropped
	// on a redirect to another host, as is any header holding one of
	// Secrets, in any spelling. Secrets also redacts the audit record.
	AuthHeaders []string
	Secrets     *redact.Set
	// MaxBody caps the response body; 0 means DefaultMaxBodyBytes.
	MaxBody int64
	// SuccessMin and SuccessMax: a status in this range is never retried.
	SuccessMin, SuccessMax int
	// Tool and Tenant label the audit record.
	Tool, Tenant string
	// Logger, when set, takes this call's audit record instead of the
	// client's; LogAttrs are added to it.
	Logger   *slog.Logger
	LogAttrs []slog.Attr
	// Stream, when set, takes a body whose status is in the success range
	// instead of Do reading it: body is capped at MaxBody (past it a read
	// fails with ErrTooLarge) and a body that breaks off fails with a
	// *TruncatedError. What Stream returns is Do's error; the response's
	// Body is then nil and Streamed true. Other statuses are read as usual.
	Stream func(status int, body io.Reader) error
	// StreamsType, when set, says whether Stream takes a body of this
	// Content-Type; one it refuses is read as usual. Nil: Stream takes
	// every type.
	StreamsType func(contentType string) bool
	// Hold, when set, is the caller's memory-budget hold the body is read
	// on: the bytes stay drawn after Do returns, for the caller to release
	// with the hold. Nil means a hold of the client's Budget, given back
	// when Do returns.
	Hold *budget.Hold
}

// Response is a fully read response.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte
	Attempts int
	IP       string // the address of the last connection, for the audit
	Streamed bool   // the body went to Request.Stream
}
