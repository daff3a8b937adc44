package server

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// ExactIDs wraps the two ends of an MCP session on stdio so that every
// request id comes back as it was sent, as at the HTTP door (mcpwire.go):
// the SDK reads an id through a float64, so 2^53+1 came back as 2^53. Each
// newline-delimited message read from in has its ids the SDK would not
// echo as sent swapped for placeholders; each message the SDK writes to
// out has them put back, and the placeholders are forgotten once answered.
// A line that is not a JSON-RPC message is passed on as it is, for the SDK
// to refuse.
func ExactIDs(in io.Reader, out io.Writer) (io.ReadCloser, io.WriteCloser) {
	book := &idBook{}
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				msg := bytes.TrimRight(line, "\r\n")
				if rb := readRPC(msg); rb.code == 0 && len(rb.swaps) > 0 {
					book.add(rb.swaps)
					msg = rb.sdk
				}
				if _, werr := pw.Write(append(bytes.Clone(msg), '\n')); werr != nil {
					return // the SDK stopped reading
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr, &idWriter{w: out, book: book}
}

// idBook holds the placeholders of the ids in flight on a stdio session.
type idBook struct {
	mu    sync.Mutex
	swaps []idSwap
}

func (b *idBook) add(s []idSwap) {
	b.mu.Lock()
	b.swaps = append(b.swaps, s...)
	b.mu.Unlock()
}

// restore puts back the ids whose placeholders p holds, and forgets them:
// a request is answered once.
func (b *idBook) restore(p []byte) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.swaps) == 0 {
		return p
	}
	rb := rpcBody{}
	keep := b.swaps[:0]
	for _, s := range b.swaps {
		if bytes.Contains(p, s.placeholder[1:len(s.placeholder)-1]) {
			rb.swaps = append(rb.swaps, s)
		} else {
			keep = append(keep, s)
		}
	}
	b.swaps = keep
	if len(rb.swaps) == 0 {
		return p
	}
	return rb.restore(bytes.Clone(p))
}

// idWriter is the SDK's end of stdout: one Write per message.
type idWriter struct {
	w    io.Writer
	book *idBook
}

func (w *idWriter) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.book.restore(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *idWriter) Close() error { return nil }
