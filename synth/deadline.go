package synth

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A call's deadlines, for every kind: its own timeout (a spec's timeoutMs,
// or the caller's InvokeOptions.Timeout) under the caller's context, and
// the words of the error that says which one ended it.

// Timeout is the cause a call's own deadline ends its context with. A
// handler makes the one of its manifest once; a call with its own
// InvokeOptions.Timeout makes another.
type Timeout struct {
	D    time.Duration
	What string // "the tool's timeoutMs", "the call's timeout option"
}

func (o *Timeout) Error() string {
	return fmt.Sprintf("%s of %dms passed", o.What, o.D.Milliseconds())
}

// Deadlines are what a call was given to run in: its own timeout and when
// it started. They keep no context: the call's (made by WithTimeout) is
// passed to Ended and TimeoutError, which tell from it what ended the call.
type Deadlines struct {
	Own   *Timeout
	Start time.Time
}

// WithTimeout starts a call under own within ctx: the call's context, ctx
// bounded by own (its cause when it fires), and its Deadlines. Cancel the
// context when the call ends.
func WithTimeout(ctx context.Context, own *Timeout) (context.Context, Deadlines, context.CancelFunc) {
	start := time.Now()
	own = &Timeout{D: own.D, What: own.What} // the call's own: Ended tells it from another call's of the same tool by identity
	cctx, cancel := context.WithTimeoutCause(ctx, own.D, own)
	return cctx, Deadlines{Own: own, Start: start}, cancel
}

// Ended words the error of a call whose context (call, WithTimeout's) has
// ended, naming what ended it: the call's own timeout (its cause is Own),
// the caller's deadline, or the caller cancelling (reason timeout or
// canceled).
func (dl Deadlines) Ended(call context.Context, err error) error {
	elapsed := time.Since(dl.Start).Milliseconds()
	var own *Timeout
	switch {
	case errors.As(context.Cause(call), &own) && own == dl.Own || call.Err() == nil:
		return &Error{Code: CodeHandlerError, Reason: ReasonTimeout, Err: err,
			Message: fmt.Sprintf("timed out after %dms (%s)", dl.Own.D.Milliseconds(), dl.Own.What)}
	case errors.Is(call.Err(), context.DeadlineExceeded):
		msg := fmt.Sprintf("timed out after %dms: the caller's deadline passed, before %s of %dms", elapsed, dl.Own.What, dl.Own.D.Milliseconds())
		return &Error{Code: CodeHandlerError, Reason: ReasonTimeout, Err: err, Message: msg}
	}
	return &Error{Code: CodeHandlerError, Reason: ReasonCanceled, Err: err,
		Message: fmt.Sprintf("the call was canceled by its caller after %dms", elapsed)}
}

// TimeoutError is err, or, when the call's context has ended and err is
// not already a *Error, the words of Ended: a connection refresh or a
// secret store cut off by the deadline says so.
func (dl Deadlines) TimeoutError(call context.Context, err error) error {
	var e *Error
	if call.Err() == nil || errors.As(err, &e) {
		return err
	}
	return dl.Ended(call, err)
}
