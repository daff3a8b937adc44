package body

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// ContentTypeForm is the content type that makes a text body a form.
const ContentTypeForm = "application/x-www-form-urlencoded"

// Form is a text body template sent as application/x-www-form-urlencoded:
// pairs key=value joined by "&". A value written as one {name} placeholder
// is filled from the input and form-encoded:
//
//   - a missing or null value drops the pair;
//   - a string, number or boolean is one pair (numbers as their JSON text);
//   - an array is one pair per item: key=v1&key=v2, or key[]=v1&key[]=v2
//     when the key is written with a trailing "[]"; an array of objects is
//     indexed, key[0][member]=v;
//   - an object is one pair per member, key[member]=v, nested deeper as
//     key[a][b]=v (the "deepObject" style Stripe and Rails read).
//
// A value that mixes literal text and placeholders ("%2B{to}") is the
// text with each value form-encoded in place; its values must be strings,
// numbers or booleans, and a missing one drops the pair. Keys and literal
// text are sent as written (they must be encoded already). A Form is
// immutable and safe for concurrent use.
type Form struct {
	pairs []formPair
}

type formPair struct {
	key, lit   string    // lit: a literal value, sent as written
	name, path string    // the placeholder, when the value is one
	mixed      *Template // a value of text and placeholders
	brackets   bool      // key ends in "[]": arrays as key[]=
}

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// ParseForm compiles a form template. Every pair is key=value; a value is
// a literal or exactly one {name}.
func ParseForm(s string) (*Form, error) {
	f := &Form{}
	if s == "" {
		return f, nil
	}
	for i, pair := range strings.Split(s, "&") {
		key, val, ok := strings.Cut(pair, "=")
		switch {
		case !ok || key == "":
			return nil, fmt.Errorf("pair %d (%q) is not key=value: write each pair as key={name} or key=value, joined by &", i+1, pair)
		case strings.ContainsAny(key, "{}"):
			return nil, fmt.Errorf("pair %d: the key %q holds a placeholder: only values are filled from the input", i+1, key)
		}
		if strings.ContainsAny(key+placeholder.ReplaceAllString(val, ""), "; #") {
			return nil, fmt.Errorf("pair %d (%q) holds a space, ';' or '#': write them encoded (+, %%3B, %%23)", i+1, pair)
		}
		if _, err := url.QueryUnescape(key); err != nil {
			return nil, fmt.Errorf("pair %d: the key %q is not form-encoded (%v): write %%25 for a %% sign", i+1, key, err)
		}
		if _, err := url.QueryUnescape(placeholder.ReplaceAllString(val, "")); err != nil {
			return nil, fmt.Errorf("pair %d: the text of the value %q is not form-encoded (%v): write %%25 for a %% sign", i+1, val, err)
		}
		p := formPair{key: key}
		if strings.HasSuffix(key, "[]") {
			p.key, p.brackets = strings.TrimSuffix(key, "[]"), true
		}
		if strings.HasPrefix(val, "{") && strings.HasSuffix(val, "}") && !strings.ContainsAny(val[1:len(val)-1], "{}") {
			p.name = val[1 : len(val)-1]
			if p.name == "" {
				return nil, fmt.Errorf("pair %d: {} names no input value", i+1)
			}
			p.path = Path(strings.Split(p.name, "."))
		} else if t := NewTemplate(val); !t.Static() {
			p.mixed = t
		} else {
			p.lit = val
		}
		f.pairs = append(f.pairs, p)
	}
	return f, nil
}

// Names returns the placeholders, in order.
func (f *Form) Names() []string {
	var out []string
	for _, p := range f.pairs {
		switch {
		case p.path != "":
			out = append(out, p.name)
		case p.mixed != nil:
			out = append(out, p.mixed.Names()...)
		}
	}
	return out
}

// ErrFormDepth refuses a value nested deeper than a form can carry.
var ErrFormDepth = errors.New("nested deeper than 8 levels")

// Fill returns the encoded body with the input's values in place.
func (f *Form) Fill(input []byte) (string, error) {
	var b strings.Builder
	add := func(k, v string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	for _, p := range f.pairs {
		if p.mixed != nil {
			v, ok, err := p.mixed.fillEncoded(input)
			if err != nil {
				return "", err
			}
			if ok {
				add(p.key+brackets(p.brackets), v)
			}
			continue
		}
		if p.path == "" {
			add(p.key+brackets(p.brackets), p.lit)
			continue
		}
		v := gjson.GetBytes(input, p.path)
		if err := formValue(add, p.key, p.brackets, v, 0); err != nil {
			return "", fmt.Errorf("{%s}: %w", p.name, err)
		}
	}
	return b.String(), nil
}

func brackets(b bool) string {
	if b {
		return "[]"
	}
	return ""
}

func formValue(add func(k, v string), key string, br bool, v gjson.Result, depth int) error {
	if depth > 8 {
		return ErrFormDepth
	}
	switch {
	case !v.Exists() || v.Type == gjson.Null:
	case v.IsArray():
		i := 0
		var err error
		v.ForEach(func(_, item gjson.Result) bool {
			if item.IsObject() || item.IsArray() {
				err = formValue(add, key+"["+strconv.Itoa(i)+"]", false, item, depth+1)
			} else {
				err = formValue(add, key+brackets(br), false, item, depth+1)
			}
			i++
			return err == nil
		})
		return err
	case v.IsObject():
		var err error
		v.ForEach(func(k, item gjson.Result) bool {
			err = formValue(add, key+"["+url.QueryEscape(k.Str)+"]", false, item, depth+1)
			return err == nil
		})
		return err
	case v.Type == gjson.String:
		add(key, url.QueryEscape(v.Str))
	default:
		add(key, url.QueryEscape(v.Raw))
	}
	return nil
}

// fillEncoded fills t with each value form-encoded; ok is false when a
// value is missing or null.
func (t *Template) fillEncoded(input []byte) (string, bool, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.path == "" {
			b.WriteString(p.lit)
			continue
		}
		v := gjson.GetBytes(input, p.path)
		switch {
		case !v.Exists() || v.Type == gjson.Null:
			return "", false, nil
		case v.IsArray() || v.IsObject():
			return "", false, fmt.Errorf("{%s}: must be a string, number or boolean inside a value with other text", p.name)
		case v.Type == gjson.String:
			b.WriteString(url.QueryEscape(v.Str))
		default:
			b.WriteString(url.QueryEscape(v.Raw))
		}
	}
	return b.String(), true, nil
}
