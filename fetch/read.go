package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// readCapped reads a whole body, refusing one longer than limit bytes and
// one shorter than its Content-Length (contentLength, -1 when unknown). It
// reads into blocks (4 KiB growing to 256 KiB) joined once the end is
// reached, so memory grows with the bytes that really arrive — a length the
// server announces is never an allocation — and an endless or oversized body
// is dropped at the cap.
func readCapped(r io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, contentLength, limit)
	}
	var blocks [][]byte
	var total int64
	size := int64(4 << 10)
	if contentLength >= 0 && contentLength < size {
		size = contentLength + 1 // room to see the end: one read, no waste
	}
	for {
		b := make([]byte, min(size, limit+1-total))
		n, err := readFull(r, b)
		total += int64(n)
		if total > limit {
			return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, limit)
		}
		blocks = append(blocks, b[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			// The connection broke inside the body (a chunked or gzip
			// stream cut short, a reset): what arrived is not the answer.
			return nil, &TruncatedError{Got: total, Want: contentLength, Err: err}
		}
		size = min(max(size, 2<<10)*2, 256<<10)
	}
	if contentLength >= 0 && total < contentLength {
		return nil, &TruncatedError{Got: total, Want: contentLength}
	}
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

// readFull fills b from r. Unlike io.ReadFull it keeps the reader's own
// error: io.EOF is the end of the body, while io.ErrUnexpectedEOF from the
// HTTP client means the body was cut short.
func readFull(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

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
