package redact

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// The scan that clears a text without decoding it. Every output of every
// call with a credential is redacted, and almost none holds one: this is
// what that costs. (BenchmarkRedactOutput: a 2 KiB answer that holds no
// secret, with the escapes an API's JSON has, is cleared by it alone.)

// compiled is a set's needles, and what mayHold reads of them.
type compiled struct {
	list []needle
	// heads are the needles' heads (the first min bytes: what a match
	// must hold), as bytes for bytes.Index.
	heads [][]byte
	// wanted are the bytes an escape must not stand for in a text that
	// holds no needle: a byte of a head (inHead), or of the syntax of an
	// escape that could stand for one (inSyntax; see mayHold).
	wanted [256]uint8
}

// Why a byte is wanted.
const (
	inHead   = 1 << iota // a byte of a needle's head
	inSyntax             // a byte an escape that stands for a wanted byte is written with
)

func compile(list []needle) *compiled {
	c := &compiled{list: list, heads: make([][]byte, len(list))}
	for i, n := range list {
		head := n.text[:n.min]
		c.heads[i] = []byte(head)
		for k := 0; k < len(head); k++ {
			c.wanted[head[k]] |= inHead
		}
	}
	// The syntax of the escapes that may stand for any byte (\uXXXX,
	// \xHH, %HH, &#D; and &#xH;) and of the named references (letters),
	// and the triggers: an escape that stands for one of these may make,
	// with what follows it, an escape one view further down.
	for _, b := range []byte("\\%&#;") {
		c.wanted[b] |= inSyntax
	}
	for b := '0'; b <= 'z'; b++ {
		if b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' {
			c.wanted[b] |= inSyntax
		}
	}
	if c.wanted[' '] != 0 {
		c.wanted['+'] |= inSyntax // + stands for a space in a form
	}
	return c
}

// mayHold reports whether text may hold a needle in any spelling find
// looks for; false is certain, true is a maybe that find settles.
//
// A needle found in a decoded view is found there by its head. Each byte
// of that head is either a byte of the text as it is or stands for an
// escape decoded (at some depth). If no byte of it comes from an escape,
// the head is in the text as it is: bytes.Index finds it. Else some escape
// stands for a byte of the head, or for a byte of the syntax of an escape
// that, one view further down, stands for one, and so on down: each such
// escape's own bytes are either in the text as they are or stand for a
// wanted byte again, so the shallowest one is in the text as it is, and
// stands for a wanted byte (compile). So a text that holds no head and no
// escape that stands for a wanted byte holds no needle in any view. The
// triggers (\ % &) are wanted as syntax, but an escape that stands for one
// that is in no head (\\, &amp;, \u0026: common in answers) counts only
// when the trigger, with the bytes after the escape, makes an escape.
func (c *compiled) mayHold(text string) bool {
	for _, n := range c.list {
		if strings.Contains(text, n.text[:n.min]) {
			return true
		}
	}
	return escapesWanted(c, text, strings.IndexByte)
}

// mayHoldBytes is mayHold for bytes.
func (c *compiled) mayHoldBytes(text []byte) bool {
	for _, h := range c.heads {
		if bytes.Contains(text, h) {
			return true
		}
	}
	return escapesWanted(c, text, bytes.IndexByte)
}

// escapesWanted reports whether text has an escape, of any kind, that
// stands for a wanted byte.
func escapesWanted[T text](c *compiled, text T, indexByte func(T, byte) int) bool {
	triggers := "\\%&"
	if c.wanted['+'] != 0 {
		triggers += "+"
	}
	for k := 0; k < len(triggers); k++ {
		for i := 0; i < len(text); {
			j := indexByte(text[i:], triggers[k])
			if j < 0 {
				break
			}
			i += j
			if e := escapeAt(text, i, allEsc|plusEsc); e.n > 0 && wantedBy(c, e, text[i+e.n:]) {
				return true
			}
			i++
		}
	}
	return false
}

// wantedBy reports whether the escape e, which after follows in the
// text, stands for a wanted byte that counts (mayHold).
func wantedBy[T text](c *compiled, e escape, after T) bool {
	var buf [utf8.UTFMax]byte
	b := e.appendTo(buf[:0])
	for _, x := range b {
		w := c.wanted[x]
		if w == 0 {
			continue
		}
		if w&inHead != 0 || x != '\\' && x != '%' && x != '&' {
			return true
		}
		// A trigger: it counts when it starts an escape with the bytes
		// after it (an escape is at most 18 bytes: &NonBreakingSpace;).
		var tmp [20]byte
		t := append(tmp[:0], x)
		t = append(t, after[:min(len(after), len(tmp)-1)]...)
		if escapeAt(t, 0, allEsc|plusEsc).n > 0 {
			return true
		}
	}
	return false
}
