package jsoncheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Decode checks data as CheckWith does and returns its value as a JSON
// Schema validator takes it: map[string]any, []any, json.Number (the number's
// own text, exact), string, bool and nil. It builds the value with an
// explicit stack, in one pass, and stops with ctx's error when ctx ends.
func Decode(ctx context.Context, data []byte, maxDepth int, o Options) (any, error) {
	if err := scan(data, maxDepth); err != nil {
		return nil, err
	}
	p := decoders.Get().(*pooled)
	defer decoders.Put(p)
	p.buf = *bytes.NewBuffer(data)
	p.dec.Reset(&p.buf, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(o.AllowInvalidUTF8))
	defer func() { p.buf = bytes.Buffer{}; p.dec.Reset(&p.buf) }()

	type frame struct {
		obj  map[string]any
		arr  []any
		name string // the member whose value comes next, in an object
	}
	var stack []frame
	var root any
	done := false
	put := func(v any) {
		if len(stack) == 0 {
			root, done = v, true
			return
		}
		f := &stack[len(stack)-1]
		if f.obj != nil {
			f.obj[f.name] = v
		} else {
			f.arr = append(f.arr, v)
		}
	}
	for n := 0; ; n++ {
		if n&4095 == 4095 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		tok, err := p.dec.ReadToken()
		if err != nil {
			if err == io.EOF && n > 0 {
				return root, nil
			}
			return nil, wrap(err, data)
		}
		if done {
			return nil, &Error{Kind: Syntax, Offset: p.dec.InputOffset(), Err: errors.New("more than one value")}
		}
		if f := top(stack); f != nil && f.obj != nil && p.dec.StackDepth() == len(stack) && tok.Kind() == '"' && needName(&p.dec) {
			f.name = tok.String()
			continue
		}
		switch tok.Kind() {
		case '{':
			stack = append(stack, frame{obj: map[string]any{}})
		case '[':
			stack = append(stack, frame{arr: []any{}})
		case '}':
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			put(f.obj)
		case ']':
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			put(f.arr)
		case '"':
			put(tok.String())
		case '0':
			put(json.Number(tok.String()))
		case 't':
			put(true)
		case 'f':
			put(false)
		case 'n':
			put(nil)
		}
	}
}

func top[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[len(s)-1]
}

// needName reports whether the string just read was an object member's
// name: after a name the object's length is odd (names and values both
// count).
func needName(d *jsontext.Decoder) bool {
	_, length := d.StackIndex(d.StackDepth())
	return length%2 == 1
}
