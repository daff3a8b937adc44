package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// Request bodies are read as strictly as a manifest: every member must be
// one the body's type has, spelled exactly (encoding/json would take
// "Role" for "role", and drop "tool_set" without a word: a key made
// unbound, a flag never set). decodeStrict is the one decoding of every
// REST body (readJSON, readCall, noBody, the policy document).

// unknownMemberError is a member of a body that its type does not have.
type unknownMemberError struct {
	// Path is the member's dotted path in the body: "context.approvd",
	// "rules[0].tools.idz".
	Path string
	// Members are the names the object holding it takes.
	Members []string
	// Suggest is the member it was likely meant to be, "" for none.
	Suggest string
}

func (e *unknownMemberError) Error() string {
	msg := strconv.Quote(e.Path) + " is not a member of this body"
	if e.Suggest != "" {
		msg += ": did you mean " + strconv.Quote(e.Suggest) + "?"
	}
	if len(e.Members) == 0 {
		return msg + " (it takes no members)"
	}
	return msg + " (the members there: " + strings.Join(e.Members, ", ") + ")"
}

// refusal is the answer to a body holding e: 400 bad-request,
// reason, naming the member.
func (e *unknownMemberError) refusal(reason string) *refusal {
	return &refusal{status: http.StatusBadRequest, code: "bad-request", reason: reason, msg: e.Error(),
		details: map[string]any{"member": e.Path, "members": e.Members}}
}

// decodeStrict decodes body, a JSON object, into v (a pointer to a
// struct): a member v's type does not have, at any depth its structs
// reach, is an *unknownMemberError, checked before anything is decoded; a
// value of the wrong type is a *refusal naming its member.
func decodeStrict(body []byte, v any) error {
	if err := checkMembers(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &refusal{status: http.StatusBadRequest, code: "bad-request", reason: "malformed-json", msg: fmt.Sprintf("at byte %d: %s must be %s", te.Offset, te.Field, te.Type)}
		}
		return &refusal{status: http.StatusBadRequest, code: "bad-request", reason: "malformed-json", msg: err.Error()}
	}
	return nil
}

// checkMembers checks every member of body against t, a struct type (or
// a pointer to one): the body must be an object whose members t has.
func checkMembers(body []byte, t reflect.Type) error {
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return &refusal{status: http.StatusBadRequest, code: "bad-request", reason: synth.ReasonInputInvalid, msg: "the body is a JSON object, {…}"}
	}
	if e := unknownMember(root, t, ""); e != nil {
		return e.refusal(synth.ReasonInputInvalid)
	}
	return nil
}

// unknownMember is the first member of v, at path at, that t does not
// have: structs are checked member by member, slices and maps of structs
// element by element; any other type (json.RawMessage, a type with its
// own UnmarshalJSON, any, a string…) takes what it is given, and
// encoding/json checks its type.
func unknownMember(v gjson.Result, t reflect.Type, at string) *unknownMemberError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return nil // read as a whole, by its own rules
	}
	switch t.Kind() {
	case reflect.Struct:
		if !v.IsObject() {
			return nil
		}
		fields := jsonFields(t)
		var bad *unknownMemberError
		v.ForEach(func(k, val gjson.Result) bool {
			name := k.String()
			path := joinPath(at, name)
			ft, ok := fields[name]
			if !ok {
				bad = &unknownMemberError{Path: path, Members: fieldNames(t), Suggest: suggest(name, fieldNames(t))}
				return false
			}
			bad = unknownMember(val, ft, path)
			return bad == nil
		})
		return bad
	case reflect.Slice, reflect.Array:
		if !v.IsArray() {
			return nil
		}
		for i, el := range v.Array() {
			if e := unknownMember(el, t.Elem(), at+"["+strconv.Itoa(i)+"]"); e != nil {
				return e
			}
		}
	case reflect.Map:
		if !v.IsObject() {
			return nil
		}
		var bad *unknownMemberError
		v.ForEach(func(k, val gjson.Result) bool {
			bad = unknownMember(val, t.Elem(), joinPath(at, k.String()))
			return bad == nil
		})
		return bad
	}
	return nil
}

func joinPath(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

// jsonFields maps the JSON names of t's fields (exported, not "-",
// embedded structs' own included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for n, ft := range jsonFields(f.Type) {
				out[n] = ft
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// fieldNames are t's JSON member names, in the order of its fields.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, fieldNames(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// suggest is the member of names that name was likely meant to be: the
// same but for case, '_' and '-', or at most two edits away; "" for none.
func suggest(name string, names []string) string {
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r == ' ' {
				return -1
			}
			return unicode.ToLower(r)
		}, s)
	}
	best, bestD := "", 3
	for _, n := range names {
		if fold(n) == fold(name) {
			return n
		}
		if d := synth.EditDistance(strings.ToLower(n), strings.ToLower(name)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// noBody reads the body of a route that takes none (approve, deny, the
// deletes): nothing, or an empty object, passes; any member is refused by
// name as decodeStrict refuses it (a {"approve": false} sent to …/approve
// would otherwise approve without a word).
func (s *Server) noBody(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength == 0 {
		return true
	}
	body, ok := s.readCheckedBody(w, r)
	if !ok {
		return false
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return true
	}
	return decodeBody(w, body, &struct{}{})
}

// strictMembers is checkMembers for a document that its own parser reads
// (a policy): an unknown member, or one spelled in another case, is
// refused with reason; anything else is left to the parser.
func strictMembers(doc []byte, t reflect.Type, reason string) error {
	if e := unknownMember(gjson.ParseBytes(doc), t, ""); e != nil {
		return e.refusal(reason)
	}
	return nil
}
