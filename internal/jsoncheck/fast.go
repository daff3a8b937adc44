package jsoncheck

import (
	"sync"
)

// accepts reports that data certainly passes CheckWith: one well-formed
// value, unique member names, nested at most max levels, its numbers within
// their bounds and, unless lenient, its strings valid UTF-8. It decides
// most documents in one pass of its own, strings read eight bytes at a
// time. What it cannot decide cheaply it declines (false), and CheckWith
// then reads the document as it did before, with jsontext, which also words
// the error: a member name with an escape in it (jsontext compares names
// unescaped), a name that is not valid UTF-8 (jsontext compares those after
// replacing the bad bytes), an escaped surrogate, and anything it refuses.
//
// It agrees with the full check by construction where it can: it answers
// only yes or "don't know", so every refusal and its words are the full
// check's; its bounds are the same constants (the caller's max,
// MaxNumberLength, MaxExponent). What it does itself (syntax, UTF-8,
// unique names) is held to the full check both ways by
// FuzzAcceptsOnlyWhatCheckAccepts, seeded with the repository's JSON
// files: it never says yes where the full check says no, and on documents
// without escapes and with valid UTF-8 it never declines what the full
// check takes. BenchmarkCheckAnswer measures the check with and without it.
//
// jsontext costs about 47 instructions a byte on an API answer (its
// duplicate-name check included); this costs about half of that (25 on
// the benchmarks' 1 KiB answer).
//
// Its nesting and names start in pooled buffers, not arrays of its own
// frame: a 2 KiB frame made it the deepest point of a REST invoke, and a
// goroutine on a keep-alive connection waits on a stack as big as its
// deepest point ever was.
func accepts(data []byte, max int, lenient bool) bool {
	sc := scratches.Get().(*scratch)
	ok := sc.accepts(data, max, lenient)
	clear(sc.stack[:]) // the duplicate-name maps hold the answer's names
	scratches.Put(sc)
	return ok
}

// scratch is accepts' starting room: 32 levels and 64 names.
type scratch struct {
	stack [32]frame
	names [64]span
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

func (sc *scratch) accepts(data []byte, max int, lenient bool) bool {
	var (
		stack = sc.stack[:0]
		names = sc.names[:0]
		n     = len(data)
		i     = skipSpace(data, 0)
		ok    bool
		s     span // the member name being read
	)

	// A value: open an array or object (and go to its first member), or
	// step over a scalar.
value:
	if i >= n {
		return false
	}
	if c := data[i]; c == '{' || c == '[' {
		if len(stack) >= max {
			return false
		}
		obj := c == '{'
		stack = append(stack, frame{obj: obj, first: len(names)})
		if i = skipSpace(data, i+1); i < n && data[i] == c+2 { // '}' or ']'
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		if obj {
			goto name
		}
		goto value
	}
	if i, ok = scalarEnd(data, i, lenient); !ok {
		return false
	}

	// After a value: the end of the document, the next member or element,
	// or the close of the innermost array or object.
after:
	i = skipSpace(data, i)
	if len(stack) == 0 {
		return i == n
	}
	if i >= n {
		return false
	}
	switch top := &stack[len(stack)-1]; data[i] {
	case ',':
		i = skipSpace(data, i+1)
		if top.obj {
			goto name
		}
		goto value
	case '}', ']':
		if top.obj != (data[i] == '}') {
			return false
		}
		names = names[:top.first]
		stack = stack[:len(stack)-1]
		i++
		goto after
	}
	return false

	// A member name, not yet in its object, then its colon.
name:
	if s, ok = nameAt(data, i); !ok {
		return false
	}
	if names, ok = stack[len(stack)-1].addName(data, names, s); !ok {
		return false
	}
	if i = skipSpace(data, int(s.end)+1); i >= n || data[i] != ':' {
		return false
	}
	i = skipSpace(data, i+1)
	goto value
}
