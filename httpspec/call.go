package httpspec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
)

// Handle: one call from the prepared request to its output, with the
// call's deadlines and the words of its errors.

// Handle runs invoke steps 2–8.
func (h *Handler) Handle(ctx context.Context, call *synth.Call) (*synth.Output, error) {
	cctx, dl, cancel := h.deadlines(ctx, call)
	defer cancel()
	req, err := h.planCall(cctx, call, "")
	if err != nil {
		return nil, dl.TimeoutError(cctx, err)
	}
	stream, small := h.streamer(cctx, call)
	resp, err := h.send(cctx, req, stream)
	if err == nil && resp.Status == http.StatusUnauthorized && h.spec.Authorization != nil && h.spec.Authorization.Kind == AuthConnection {
		// The token may have been revoked early: refresh once, retry once.
		attempts := resp.Attempts
		if req, err = h.planCall(cctx, call, req.credential); err != nil {
			return nil, dl.TimeoutError(cctx, err)
		}
		resp, err = h.send(cctx, req, stream)
		if resp != nil {
			resp.Attempts += attempts
		}
	}
	return h.answer(cctx, dl, req, resp, small, err)
}

// deadlines are the call's: its own timeout under the caller's.
//
//go:noinline
func (h *Handler) deadlines(ctx context.Context, call *synth.Call) (context.Context, synth.Deadlines, context.CancelFunc) {
	own := h.timeout
	if call.Options.Timeout > 0 {
		own = &synth.Timeout{D: call.Options.Timeout, What: "the call's timeout option"}
	}
	return synth.WithTimeout(ctx, own)
}

// streamer is how a success answer reaches the call's sink as it
// arrives, when it may; small then gets an answer that fit in the first
// read, which is not streamed.
//
//go:noinline
func (h *Handler) streamer(cctx context.Context, call *synth.Call) (stream func(int, io.Reader) error, small *[]byte) {
	if sink := call.Options.Sink; sink != nil && h.streams {
		small = new([]byte)
		stream = func(status int, body io.Reader) (err error) {
			*small, err = streamJSON(cctx, call.Options.Hold, call.Secrets, sink, status, body)
			return err
		}
	}
	return stream, small
}

// answer makes the call's output of its answer or error.
//
//go:noinline
func (h *Handler) answer(cctx context.Context, dl synth.Deadlines, req *plan, resp *fetch.Response, small *[]byte, err error) (*synth.Output, error) {
	if err != nil {
		return nil, h.fetchError(cctx, dl, req, err)
	}
	if resp.Streamed {
		if small == nil || *small == nil {
			return &synth.Output{Status: resp.Status, Attempts: resp.Attempts, Streamed: true}, nil
		}
		resp.Body, resp.Streamed = *small, false
	}
	return h.output(req, resp)
}

// send hands the plan's request to the client as it is; stream, when set,
// takes an answer in the success range as it arrives.
func (h *Handler) send(ctx context.Context, r *plan, stream func(int, io.Reader) error) (*fetch.Response, error) {
	r.Stream = stream
	if stream != nil {
		r.StreamsType = streamsType // bytes are read whole, to become a media output (media.go)
	}
	return h.client.Do(ctx, &r.Request)
}

func (h *Handler) fetchError(cctx context.Context, dl synth.Deadlines, r *plan, err error) error {
	var denied *fetch.DeniedError
	var truncated *fetch.TruncatedError
	var over *budget.OverError
	var own *synth.Error
	switch {
	case errors.As(err, &own):
		return own // a streamed answer found broken
	case errors.As(err, &over):
		return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonOverloaded, Err: err,
			Message: "the service is at its memory budget and could not hold this answer in time: try again shortly (" + over.Error() + ")"}
	case errors.As(err, &denied):
		hint := "add the host to the manifest's network allowlist if the tool should reach it"
		if denied.IP.IsValid() {
			hint = "the operator can allow the range (httptools call --allow-cidr)"
		}
		// The host refused may be a redirect's, which the upstream
		// chose: the guard's words are Outside.
		return &synth.Error{Code: synth.CodePreconditionFailed, Reason: ReasonEgressDenied, Err: err,
			Message: "the outbound guard refused the request, so nothing was sent (" + hint + ")", Outside: r.Secrets.Redact(denied.Error())}
	case errors.Is(err, fetch.ErrTooManyRedirects):
		return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonTooManyRedirects, Err: err,
			Message: r.Secrets.Redact(fmt.Sprintf("%s %s: %v", r.Method, redactURL(r.URL), fetch.Describe(err, r.Secrets)))}
	case errors.Is(err, fetch.ErrTooLarge):
		return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonResponseTooLarge, Err: err,
			Message: r.Secrets.Redact(fmt.Sprintf("the response is larger than the %d-byte cap (%v): raise limits.memMB or ask the API for less", h.cap(), err))}
	case errors.As(err, &truncated) && cctx.Err() == nil:
		return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonResponseTruncated, Err: err,
			Message: r.Secrets.Redact(fmt.Sprintf("%s %s: fetch failed: %v, so the answer is incomplete", r.Method, redactURL(r.URL), truncated))}
	case cctx.Err() != nil:
		return dl.Ended(cctx, err)
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		// The service's own limit, not the upstream's fault.
		return &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonOverloaded, Err: err,
			Message: "the service has no file descriptor left to open a connection upstream; nothing was sent: try again shortly (the operator can raise the process's limit, ulimit -n or LimitNOFILE=)"}
	}
	// The network's words may quote the upstream (a malformed status
	// line, a certificate's names, a GOAWAY's debug text): Outside.
	return &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonFetchFailed, Err: err,
		Message: r.Secrets.Redact(fmt.Sprintf("%s %s failed", r.Method, redactURL(r.URL))), Outside: fetch.Describe(err, r.Secrets)}
}

func (h *Handler) cap() int64 {
	if h.maxBody > 0 {
		return h.maxBody
	}
	return fetch.DefaultMaxBodyBytes
}
