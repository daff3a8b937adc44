package jsoncheck

// CheckReader: the check of a value read from a stream as it arrives.

import (
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// CheckReader is CheckWith for a value read from r as it arrives (an
// answer being streamed on): it reads r to its end, holding only the token
// being read and the names of the open objects, and reports the first rule
// broken as an *Error, or r's own error.
func CheckReader(r io.Reader, maxDepth int, o Options) error {
	cr := &countingReader{r: r, grow: o.Grow}
	dec := jsontext.NewDecoder(cr, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(o.AllowInvalidUTF8))
	cr.dec = dec
	for {
		if dec.PeekKind() == '0' {
			// A number: its raw text without copying it.
			v, err := dec.ReadValue()
			if err != nil {
				return wrapStream(err)
			}
			if !numberOK(v) {
				return &Error{Kind: BadNumber, Offset: dec.InputOffset(), Pointer: string(dec.StackPointer())}
			}
		} else {
			tok, err := dec.ReadToken()
			if err != nil {
				if err == io.EOF {
					return &Error{Kind: Syntax, Offset: dec.InputOffset(), Err: errors.New("unexpected end of input")}
				}
				return wrapStream(err)
			}
			if k := tok.Kind(); (k == '{' || k == '[') && dec.StackDepth() > maxDepth {
				return &Error{Kind: TooDeep, Offset: dec.InputOffset() - 1, Limit: maxDepth, Pointer: string(dec.StackPointer())}
			}
		}
		if dec.StackDepth() == 0 {
			break
		}
	}
	if _, err := dec.ReadToken(); err == nil {
		return &Error{Kind: Syntax, Offset: dec.InputOffset(), Err: errors.New("more than one value")}
	} else if err != io.EOF {
		return wrapStream(err)
	}
	return nil
}

// wrapStream is wrap for a streaming decoder: a reader's own error (a cap,
// a broken connection) is returned as it is.
func wrapStream(err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	return wrap(err, nil)
}

// countingReader tells Options.Grow how much the decoder may hold: what it
// has read and not yet consumed, plus the room it reads into.
type countingReader struct {
	r          io.Reader
	dec        *jsontext.Decoder
	grow       func(int64) error
	read, high int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.grow != nil {
		if held := c.read - c.dec.InputOffset() + int64(len(p)); held > c.high {
			if err := c.grow(held - c.high); err != nil {
				return 0, err
			}
			c.high = held
		}
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}
