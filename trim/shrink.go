package trim

import (
	"bytes"
	"io"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// One pass of Fit: the document read token by token and written again with
// at most so many items per container and characters per string, what is
// left out listed as it goes.

// level is an array or object being read.
type level struct {
	array bool
	name  string // the member being read, in an object
	index int    // the item being read
	total int    // items seen
}

// shrinker is the state of one shrink: the tokens read and written, the
// containers open, and the cuts so far.
type shrinker struct {
	dec          *jsontext.Decoder
	enc          *jsontext.Encoder
	items, chars int
	stack        []*level
	r            Result
	strs         []Cut // string cuts, listed after those of containers
}

// shrink writes doc with at most items items per container and chars
// characters per string.
func shrink(doc []byte, items, chars int) (Result, error) {
	var out bytes.Buffer
	out.Grow(min(len(doc), 1<<20))
	s := &shrinker{dec: jsontext.NewDecoder(bytes.NewReader(doc)), enc: jsontext.NewEncoder(&out), items: items, chars: chars}
	for {
		kind := s.dec.PeekKind()
		if kind == 0 {
			if _, err := s.dec.ReadToken(); err == io.EOF {
				break
			} else if err != nil {
				return Result{}, err
			}
		}
		var err error
		if kind == ']' || kind == '}' {
			err = s.close()
		} else {
			err = s.item()
		}
		if err != nil {
			return Result{}, err
		}
	}
	s.r.JSON = bytes.TrimRight(out.Bytes(), "\n")
	s.r.Cuts = append(s.r.Cuts, s.strs[:min(len(s.strs), MaxCuts-len(s.r.Cuts))]...)
	return s.r, nil
}

// cut counts c and lists it while there is room: containers' cuts and
// strings' apart, so that the first come first.
func (s *shrinker) cut(c Cut) {
	s.r.CutCount++
	switch {
	case c.Kind == "string" && len(s.strs) < MaxCuts:
		s.strs = append(s.strs, c)
	case c.Kind != "string" && len(s.r.Cuts) < MaxCuts:
		s.r.Cuts = append(s.r.Cuts, c)
	}
}

// top is the container being read, nil at the top level.
func (s *shrinker) top() *level {
	if len(s.stack) == 0 {
		return nil
	}
	return s.stack[len(s.stack)-1]
}

// close writes the end of the container being read, a cut if it had more
// items than were kept.
func (s *shrinker) close() error {
	tok, err := s.dec.ReadToken()
	if err != nil {
		return err
	}
	top := s.top()
	s.stack = s.stack[:len(s.stack)-1]
	if top.total > s.items {
		k := "array"
		if !top.array {
			k = "object"
		}
		s.cut(Cut{Path: pointer(s.stack), Kind: k, Kept: s.items, Total: top.total})
	}
	return s.enc.WriteToken(tok)
}

// item reads the next value, with its name in an object, and writes it,
// or skips both past the items kept.
func (s *shrinker) item() error {
	keep, err := s.counted()
	if err != nil || !keep {
		return err
	}
	return s.value()
}

// counted counts the next item of the container being read and says
// whether it is kept; a kept member's name is written, a skipped item is
// read past.
func (s *shrinker) counted() (bool, error) {
	top := s.top()
	if top == nil {
		return true, nil
	}
	var name jsontext.Token
	if !top.array {
		var err error
		if name, err = s.dec.ReadToken(); err != nil {
			return false, err
		}
	} else {
		top.index = top.total
	}
	top.total++
	if top.total > s.items {
		return false, s.dec.SkipValue()
	}
	if top.array {
		return true, nil
	}
	top.name = name.String()
	return true, s.enc.WriteToken(name)
}

// value writes the next token: a container opened, or a string cut to
// chars characters.
func (s *shrinker) value() error {
	tok, err := s.dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '[', '{':
		s.stack = append(s.stack, &level{array: tok.Kind() == '['})
	case '"':
		if str := tok.String(); len(str) > s.chars {
			if n := utf8.RuneCountInString(str); n > s.chars {
				s.cut(Cut{Path: pointer(s.stack), Kind: "string", Kept: s.chars, Total: n})
				tok = jsontext.String(cutString(str, s.chars, n))
			}
		}
	}
	return s.enc.WriteToken(tok)
}
