package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
)

// What net/http's Transport sends on its own, below the attempt loop.
//
// The Transport sends a request again by itself: HTTP/1 on the next pooled
// connection, or a new one, when a kept-alive connection dies under an
// idempotent request (or under one it had not written); HTTP/2 when the
// upstream refuses the stream (REFUSED_STREAM), goes away (GOAWAY) or its
// connection can take no stream, on another pooled connection or on a new
// one, dialled and handshaken — without end when every connection
// announces SETTINGS_MAX_CONCURRENT_STREAMS 0 (issue 39: some 20 TLS
// handshakes a second until the deadline). None of that passes the
// attempt loop, and net/http has no switch for it. So the call counts each
// of those sends as an attempt, where net/http shows them, and refuses the
// one past its attempts where net/http lets it refuse:
//
//   - every connection the Transport acquires for a request passes
//     Transport.Proxy (Client.proxy), synchronously, before it is looked
//     for or dialled: a try of the Transport's own HTTP/1 loop is refused
//     there;
//   - every connection dialled for the call passes the dialer: refused
//     there, before the TCP connection and its TLS handshake;
//   - every stream or request handed to a connection is a GotConn event:
//     an HTTP/2 stream the call may not send is stopped there by ending
//     the call's context, which HTTP/2 checks before writing the stream's
//     headers (a select with a default, so never a race).
//
// A request that is not repeatable goes again only on HTTP/2, where the
// Transport resends only what the upstream said it did not process
// (docs/design.md, "Every send counts").
//
// The call is found from the request's context (callKey): net/http gives
// the proxy function and the dialer nothing else.

// callKey is the context key of the call a request belongs to.
type callKey struct{}

// callOf returns the call whose request ctx is, if any.
func callOf(ctx context.Context) *call {
	cl, _ := ctx.Value(callKey{}).(*call)
	return cl
}

// attach is parent with the call's trace hooks, the call itself and a
// cancel of its own (cl.cancel), for the call's requests.
func (cl *call) attach(parent context.Context) context.Context {
	cl.trace.GotConn = cl.gotConnection
	cl.trace.WroteHeaders = cl.rs.wroteHeaders
	ctx := httptrace.WithClientTrace(parent, &cl.trace)
	ctx, cl.cancel = context.WithCancel(ctx)
	return context.WithValue(ctx, callKey{}, cl)
}

// rejoin gives a request a wrapper handed down in a context of its own
// back to the call: its sends count all the same.
func (cl *call) rejoin(r *http.Request) *http.Request {
	if callOf(r.Context()) == cl {
		return r
	}
	return r.WithContext(context.WithValue(httptrace.WithClientTrace(r.Context(), &cl.trace), callKey{}, cl))
}

// end lets go of the call's context.
func (cl *call) end() {
	if cl.cancel != nil {
		cl.cancel()
	}
}

// resent is err, or the refusal of a send that ended it: a send stopped
// at GotConn comes back from the Transport as the context's cancellation,
// unless ctx, the caller's, has ended.
func (cl *call) resent(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	st := cl.rs.stopped()
	if st == nil {
		return err
	}
	var ue *url.Error
	switch {
	case isResend(err):
		return err
	case asURLError(err, &ue):
		u := *ue
		u.Err = st
		return &u
	}
	return st
}

// gotConnection is the GotConn hook: every stream or request handed to a
// connection. One the call may not send is stopped before it is written.
func (cl *call) gotConnection(info httptrace.GotConnInfo) {
	cl.gotConn = true
	cl.remote = info.Conn.RemoteAddr()
	if tc, ok := info.Conn.(*tls.Conn); ok && tc.ConnectionState().NegotiatedProtocol == "h2" {
		cl.rs.http2()
	}
	if cl.rs.stream() != nil {
		cl.cancel()
	}
}

// proxy is the Transport's Proxy: asked for every connection the
// Transport acquires for a request (its first, and each of its own tries
// after), it refuses a try the call may not make, then asks
// Config.Proxy.
func (c *Client) proxy(r *http.Request) (*url.URL, error) {
	if cl := callOf(r.Context()); cl != nil {
		if err := cl.rs.acquire(); err != nil {
			return nil, err
		}
	}
	if c.cfg.Proxy == nil {
		return nil, nil
	}
	return c.cfg.Proxy(r)
}

// resends counts a call's attempts: the attempt loop's own and every send
// of the Transport's below it. Dial goroutines share it, hence mu.
type resends struct {
	mu         sync.Mutex
	used       int // attempts used
	max        int // Config.MaxAttempts
	repeatable bool
	// Of the request being sent (an attempt, or a redirect hop of one):
	// its first connection and first stream are the attempt's (or the
	// hop's), each one past them is an attempt more.
	dials, streams int
	units          int  // attempts the request has taken: max(1, dials, streams)
	wrote          bool // a stream's headers were written: the upstream may have the request
	// h2: the request went out on HTTP/2, where the Transport sends a
	// request again only when the upstream said it did not process it (a
	// REFUSED_STREAM, a GOAWAY below its stream; RFC 9113 §8.7), so a
	// request that is not repeatable may go again too, as an attempt.
	h2   bool
	stop *ResendError
}

func (r *resends) init(max int, repeatable bool) {
	r.max, r.repeatable = max, repeatable
}

// begin counts an attempt of the loop (or a session's request).
func (r *resends) begin() {
	r.mu.Lock()
	r.used++
	r.mu.Unlock()
}

// hop starts a request of the call: an attempt, or a redirect hop.
func (r *resends) hop() {
	r.mu.Lock()
	r.dials, r.streams, r.units, r.wrote, r.h2, r.stop = 0, 0, 1, false, false, nil
	r.mu.Unlock()
}

// count is the attempts used so far.
func (r *resends) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used
}

func (r *resends) stopped() *ResendError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stop
}

// acquire: the Transport is about to get a connection and send on it.
func (r *resends) acquire() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.takeLocked(r.streams + 1)
}

// dial: the Transport dials a connection for the call.
func (r *resends) dial() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dials++
	return r.takeLocked(r.dials)
}

// stream: the Transport hands the request to a connection.
func (r *resends) stream() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streams++
	return r.takeLocked(r.streams)
}

// http2 notes that the request goes out on HTTP/2.
func (r *resends) http2() {
	r.mu.Lock()
	r.h2 = true
	r.mu.Unlock()
}

func (r *resends) wroteHeaders() {
	r.mu.Lock()
	r.wrote = true
	r.mu.Unlock()
}

// takeLocked makes n the request's count of connections or streams: past
// what it has taken, one attempt more, refused when none is left or when
// the request is not repeatable and the upstream may have it already.
// The nil result is a nil error, not a nil *ResendError.
func (r *resends) takeLocked(n int) error {
	if n <= r.units {
		return nil
	}
	if r.stop == nil {
		switch {
		case r.wrote && !r.repeatable && !r.h2:
			r.stop = &ResendError{Attempts: r.used, Unrepeatable: true}
		case r.used >= r.max:
			r.stop = &ResendError{Attempts: r.used}
		default:
			r.units = n
			r.used++
			return nil
		}
	}
	return r.stop
}

func isResend(err error) bool {
	var re *ResendError
	return errors.As(err, &re)
}

func asURLError(err error, ue **url.Error) bool { return errors.As(err, ue) }
