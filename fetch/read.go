package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/httptools/httptools/budget"
)

// readCapped reads a whole body, refusing one longer than limit bytes and
// one shorter than its Content-Length (contentLength, -1 when unknown). It
// reads into blocks (4 KiB growing to 256 KiB) joined once the end is
// reached, so memory grows with the bytes that really arrive — a length the
// server announces is never an allocation — and an endless or oversized body
// is dropped at the cap.
//
// The bytes are drawn on the memory budget hold (nil: no budget) before
// they are allocated, waiting within ctx, so that a call never waits for
// more while holding part of its answer in a way that could lock calls out
// of each other: with a
// Content-Length, all of them at once (the blocks and their join); without
// one, a first 64 KiB, and past that the worst case (twice the cap), whatever
// the answer does not use being given back once it is read.
func readCapped(ctx context.Context, r io.Reader, contentLength, limit int64, hold *budget.Hold) ([]byte, error) {
	if contentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, contentLength, limit)
	}
	drawn := int64(0) // what this read has drawn
	if contentLength >= 0 {
		drawn = contentLength + 1
		if drawn > 4<<10 {
			drawn += contentLength // the join
		}
	} else {
		drawn = min(limit+1, firstDraw)
	}
	if err := draw(ctx, hold, drawn); err != nil {
		return nil, err
	}
	used := int64(0)
	var blocks [][]byte
	var total int64
	size := int64(4 << 10)
	if contentLength >= 0 && contentLength < size {
		size = contentLength + 1 // room to see the end: one read, no waste
	}
	room := limit + 1 // the most a block may hold, the end of the body included
	if contentLength >= 0 {
		room = contentLength + 1
	}
	for {
		want := min(size, room-total)
		if used+want > drawn {
			// Past the first draw of an answer of unknown length: the
			// worst case at once.
			more := 2*(limit+1) - drawn
			if err := draw(ctx, hold, more); err != nil {
				return nil, err
			}
			drawn += more
		}
		used += want
		b := make([]byte, want)
		n, err := readFull(r, b)
		total += int64(n)
		if total > limit {
			return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, limit)
		}
		if contentLength >= 0 && total > contentLength {
			// net/http frames a body by its length, so only a body it did
			// not frame gets here: never read on into room that is not
			// there (a zero-length read would loop for ever).
			return nil, fmt.Errorf("the response body runs past the %d bytes its Content-Length announced", contentLength)
		}
		blocks = append(blocks, b[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, brokenRead(err, total, contentLength)
		}
		size = min(max(size, 2<<10)*2, 256<<10)
	}
	if contentLength >= 0 && total < contentLength {
		return nil, &TruncatedError{Got: total, Want: contentLength}
	}
	if len(blocks) == 1 {
		return blocks[0], nil
	}
	if len(blocks) > 1 {
		used += total
	}
	giveBack(hold, drawn-used)
	if len(blocks) == 1 {
		return blocks[0], nil
	}
	out := make([]byte, 0, total)
	for i, b := range blocks {
		out = append(out, b...)
		blocks[i] = nil
	}
	return out, nil
}

// firstDraw is what an answer of unknown length draws first: most API
// answers fit.
const firstDraw = 64 << 10

// draw draws n bytes of a call's read on its memory budget hold (nil: no
// budget), waiting within ctx, the call's.
func draw(ctx context.Context, hold *budget.Hold, n int64) error {
	if hold == nil {
		return nil
	}
	return hold.Take(ctx, n)
}

// giveBack returns n bytes a read drew but did not use to hold (nil: no
// budget).
func giveBack(hold *budget.Hold, n int64) {
	if hold != nil {
		hold.Return(n)
	}
}

// brokenRead words a read error inside a body: the call's own end
// (canceled, past its deadline) as it is; anything else — a chunked or gzip
// stream cut short, a reset — is a *TruncatedError, since what arrived is
// not the answer.
func brokenRead(err error, got, want int64) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &TruncatedError{Got: got, Want: want, Err: err}
}

// readFull fills b from r. Unlike io.ReadFull it keeps the reader's own
// error: io.EOF is the end of the body, while io.ErrUnexpectedEOF from the
// HTTP client means the body was cut short.
// A reader that keeps returning nothing and no error is refused with
// io.ErrNoProgress after maxEmptyReads reads in a row: every read makes
// progress or fails.
func readFull(r io.Reader, b []byte) (int, error) {
	n, empty := 0, 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m > 0 {
			empty = 0
		} else if empty++; empty >= maxEmptyReads {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}

// maxEmptyReads is how many reads in a row may return no byte and no
// error (bufio's own bound).
const maxEmptyReads = 100

// TruncatedError is a response body that ended before its end: fewer bytes
// than its Content-Length, or a stream the connection broke off.
type TruncatedError struct {
	Got  int64 // bytes received
	Want int64 // the announced length, -1 when none was
	Err  error // the read error, when the connection broke
}

func (e *TruncatedError) Error() string {
	if e.Want >= 0 {
		return fmt.Sprintf("the response body ended after %d of the %d bytes its Content-Length announced", e.Got, e.Want)
	}
	return fmt.Sprintf("the response body broke off after %d bytes", e.Got)
}

// Unwrap returns the read error.
func (e *TruncatedError) Unwrap() error { return e.Err }

// cappedReader is a streamed body: at most limit bytes (then ErrTooLarge),
// and a break before the end a *TruncatedError.
type cappedReader struct {
	r           io.Reader
	left, limit int64
	got, want   int64 // bytes so far; the announced length or -1
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.got += int64(n)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, c.limit)
	}
	switch {
	case err == io.EOF && c.want >= 0 && c.got < c.want:
		return n, &TruncatedError{Got: c.got, Want: c.want}
	case err != nil && err != io.EOF:
		return n, brokenRead(err, c.got, c.want)
	}
	return n, err
}
