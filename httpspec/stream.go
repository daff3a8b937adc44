package httpspec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
)

// An answer passed on to the call's OutputSink as it arrives.

// streamJSON passes an answer to the call's sink as it arrives, checking it
// as the buffered path does (one value, unique names, the depth and number
// limits). An answer that ends within the first streamBlock bytes is not
// streamed: it is returned whole, for the usual path (and its usual errors).
// A bigger one found broken after the sink has begun is an error: the
// sink's owner cuts its response off.
//
// What goes to the sink has every secret of the call masked, as a held
// answer has (synth): an upstream that echoes the request's credential
// streams it to no one.
func streamJSON(ctx context.Context, hold *budget.Hold, secrets *redact.Set, sink synth.OutputSink, status int, body io.Reader) ([]byte, error) {
	// What the check holds (the read buffer; a long string whole) is drawn
	// on the call's memory budget hold as it grows, waiting briefly once
	// the call holds part of its answer (see fetch's readCapped).
	if err := hold.Take(ctx, 2*streamBlock); err != nil {
		return nil, err
	}
	grow := func(n int64) error { return hold.TakeWithin(ctx, n, time.Second) }
	br := bufio.NewReaderSize(body, streamBlock)
	first, err := br.Peek(streamBlock)
	if err == io.EOF {
		return bytes.Clone(first), nil
	}
	if err != nil {
		return nil, err
	}
	// Nothing has gone to the client yet: an answer already broken within
	// its first block is refused as an error answer, not begun and cut.
	if err := jsoncheck.CheckReader(io.MultiReader(bytes.NewReader(first), prefixEnd{}), jsoncheck.MaxDepth, jsoncheck.Options{AllowInvalidUTF8: true}); !errors.Is(err, errPrefixEnd) {
		var je *jsoncheck.Error
		if errors.As(err, &je) {
			msg, where := notJSON(err)
			return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonResponseNotJSON, Status: status, Message: msg, Outside: where}
		}
	}
	out := sink.Begin(status)
	var masker *redact.JSONWriter
	if !secrets.Empty() {
		masker = secrets.JSONWriter(out)
		out = masker
	}
	w := &errWriter{w: out}
	// What is checked is what is sent: the answer with its invalid UTF-8
	// replaced by U+FFFD, as a held answer is (synth).
	err = jsoncheck.CheckReader(io.TeeReader(jsoncheck.ValidUTF8Reader(br), w), jsoncheck.MaxDepth, jsoncheck.Options{Grow: grow})
	if err == nil && masker != nil && w.err == nil {
		// What the masker still holds (the answer's last token).
		if cerr := masker.Close(); cerr != nil {
			w.err = cerr
		}
	}
	if ne := (*redact.NameError)(nil); errors.As(w.err, &ne) {
		return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonResponseNotJSON, Status: status,
			Message: synth.EchoedNames + " (it was being streamed, and was cut off)"}
	}
	if w.err != nil {
		return nil, fmt.Errorf("writing the answer on: %w", w.err)
	}
	var je *jsoncheck.Error
	if errors.As(err, &je) {
		msg, where := notJSON(err)
		return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonResponseNotJSON, Status: status,
			Message: msg + " (it was being streamed, and was cut off)", Outside: where}
	}
	return nil, err
}

// prefixEnd ends the first block of a streamed answer for its check: what
// follows has not arrived yet.
type prefixEnd struct{}

var errPrefixEnd = errors.New("the end of the first block")

func (prefixEnd) Read([]byte) (int, error) { return 0, errPrefixEnd }

// streamBlock is the first read of an answer that may stream: one that ends
// within it is handled whole.
const streamBlock = 32 << 10

// errWriter keeps a write error (a client gone) apart from the answer's.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
