package jsoncheck

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// The member names of accepts: each object's names so far, compared by a
// key of their first bytes, and a name refused when its object has it.

// frame is an open array or object; an object's member names so far are
// names[first:], and once it has many, also the keys of seen.
type frame struct {
	obj   bool
	first int
	seen  map[string]struct{}
}

// span is a member name, data[start:end] between its quotes, with a key
// made of its length and first eight bytes: two names with different keys
// differ, and most names differ in their keys.
type span struct {
	start, end int32
	key        uint64
}

func newSpan(data []byte, start, end int) span {
	var prefix uint64
	if l := end - start; start+8 <= len(data) {
		prefix = binary.LittleEndian.Uint64(data[start:])
		if l < 8 {
			prefix &= 1<<(8*l) - 1
		}
	} else {
		for k := min(end, start+8) - 1; k >= start; k-- {
			prefix = prefix<<8 | uint64(data[k])
		}
	}
	return span{int32(start), int32(end), prefix ^ uint64(end-start)<<56}
}

func (p span) same(data []byte, s span) bool {
	return p.end-p.start == s.end-s.start && string(data[p.start:p.end]) == string(data[s.start:s.end])
}

// manyNames is the count of names past which an object's names are looked
// up in a map instead of compared one by one.
const manyNames = 16

// addName records the name s of f, or reports false if f has it already:
// compared with each name so far while f has few, then through f's map.
func (f *frame) addName(data []byte, names []span, s span) ([]span, bool) {
	if f.seen != nil || len(names)-f.first >= manyNames {
		return f.add(data, names, s)
	}
	for _, p := range names[f.first:] {
		if p.key == s.key && p.same(data, s) {
			return names, false
		}
	}
	return append(names, s), true
}

// nameAt reads the member name whose quote is at i; false for a name the
// pass declines (see nameEnd). Most names are short and plain: their end
// and their key come from one word.
func nameAt(data []byte, i int) (span, bool) {
	if i >= len(data) || data[i] != '"' {
		return span{}, false
	}
	start := i + 1
	if start+8 <= len(data) {
		w := binary.LittleEndian.Uint64(data[start:])
		if m := special(w); m != 0 {
			if k := bits.TrailingZeros64(m) / 8; data[start+k] == '"' {
				return span{int32(start), int32(start + k), w&(1<<(8*k)-1) ^ uint64(k)<<56}, true
			}
		}
	}
	end, ok := nameEnd(data, start)
	if !ok {
		return span{}, false
	}
	return newSpan(data, start, end), true
}

// add records the name s of f in f's map, made from its names so far when
// it has none yet, or reports false if f has the name already.
func (f *frame) add(data []byte, names []span, s span) ([]span, bool) {
	if f.seen == nil {
		f.seen = make(map[string]struct{}, 2*manyNames)
		for _, p := range names[f.first:] {
			f.seen[string(data[p.start:p.end])] = struct{}{}
		}
		names = names[:f.first]
	}
	name := data[s.start:s.end]
	if _, dup := f.seen[string(name)]; dup {
		return names, false
	}
	f.seen[string(name)] = struct{}{}
	return names, true
}

// nameEnd returns the offset of the quote that closes the member name whose
// content starts at i; false for a name this pass declines: one with an
// escape, a control character or bytes that are not UTF-8.
func nameEnd(data []byte, i int) (int, bool) {
	n := len(data)
	for {
		if i = nextSpecial(data, i); i >= n {
			return i, false
		}
		switch c := data[i]; {
		case c == '"':
			return i, true
		case c == '\\' || c < 0x20:
			return i, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		default:
			i++
		}
	}
}
