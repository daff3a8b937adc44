package openapi

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The checker's comparison of a described request's body with the
// operation's: its media type, its members, and no parameter among them.

// compareBody flags a body of another media type than the operation's,
// one that is not JSON where JSON is asked for, and members missing,
// different, or holding a parameter.
func (c *checking) compareBody(w *wire) {
	noBody := len(w.Body) == 0 || string(w.Body) == "null" || string(w.Body) == `""`
	if empty, _ := c.bodyVal.(map[string]any); c.bodyType != "" && noBody && empty != nil && c.onlyCredentials(empty) {
		// An empty object body (a form of no members, Stripe's deletes),
		// or one of credentials only, which the header carries (Slack's
		// users.deletePhoto): nothing to send.
		return
	}
	if c.bodyType == "" || c.bodyVal == nil && noBody {
		return
	}
	got, _ := w.header("Content-Type")
	gotBase, _, _ := strings.Cut(got, ";")
	if !strings.EqualFold(strings.TrimSpace(gotBase), c.bodyType) && !(c.bodyType == "*/*") {
		c.flag(ClassMediaType, "sends Content-Type %q, the operation takes %s", got, c.bodyType)
	}
	if !strings.Contains(c.bodyType, "json") {
		return
	}
	sent := c.sentJSON(w.Body)
	if obj, ok := c.bodyVal.(map[string]any); ok {
		so, _ := sent.(map[string]any)
		c.compareMembers(obj, so)
	} else if c.bodyVal != nil && !holds(sent, c.bodyVal) {
		c.flag(ClassBody, "sends body %s, want %s", clipText(jsonText(sent), 80), clipText(jsonText(c.bodyVal), 80))
	}
}

// onlyCredentials says every member of obj carries a credential.
func (c *checking) onlyCredentials(obj map[string]any) bool {
	for k := range obj {
		if !c.credMembers[k] {
			return false
		}
	}
	return true
}

// sentJSON is the body sent, decoded, flagging one that is not JSON (a
// dry run shows a non-JSON body as a JSON string).
func (c *checking) sentJSON(body json.RawMessage) any {
	var sent any
	if err := json.Unmarshal(body, &sent); err != nil {
		var s string
		if json.Unmarshal(body, &s) == nil && json.Unmarshal([]byte(s), &sent) != nil {
			c.flag(ClassBody, "the body is not JSON")
		}
	}
	return sent
}

// compareMembers flags each member of want (credentials aside) that sent
// does not hold, and each member sent beyond want that is a parameter's.
func (c *checking) compareMembers(want, sent map[string]any) {
	for k, v := range want {
		if c.credMembers[k] {
			continue
		}
		if got, ok := sent[k]; !ok || !holds(got, v) {
			c.flag(ClassBody, "body member %q: sent %s, want %s", k, clipText(jsonText(got), 80), clipText(jsonText(v), 80))
		}
	}
	for k := range sent {
		if _, ok := want[k]; ok {
			continue
		}
		for _, pk := range c.order {
			if p := c.params[pk]; p.In != "body" && (k == p.Name || k == headerVar(p.Name)) {
				c.flag(ClassBodyLeak, "the body holds %q, the %s parameter %q", k, p.In, p.Name)
			}
		}
	}
}

// memberSchemas are a body's members, through allOf, collected once.
type memberSchemas map[string]*openapi3.Schema

func bodyMembers(mt *openapi3.MediaType) memberSchemas {
	props, req := memberSchemas{}, []string{}
	collect(schemaOf(mt.Schema), props, &req, 0)
	return props
}

// of is what the importer's credential rule reads of member name: its
// description.
func (m memberSchemas) of(name string) map[string]any {
	if p := m[name]; p != nil {
		return map[string]any{"description": p.Description}
	}
	return map[string]any{}
}

// readOnlyMember says s has a read-only member name, through allOf.
func readOnlyMember(s *openapi3.Schema, name string, depth int) bool {
	props, req := map[string]*openapi3.Schema{}, []string{}
	collect(s, props, &req, depth)
	return props[name] != nil && props[name].ReadOnly && !slices.Contains(req, name)
}

// holds says sent holds want: the same scalars, and for objects at
// least want's members (the tool fills its schema's defaults too).
func holds(sent, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		s, ok := sent.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !holds(s[k], v) {
				return false
			}
		}
		return true
	case []any:
		s, ok := sent.([]any)
		if !ok || len(s) != len(w) {
			return false
		}
		for i := range w {
			if !holds(s[i], w[i]) {
				return false
			}
		}
		return true
	}
	return jsonText(sent) == jsonText(want)
}

// bodyRequired says the body of mt requires member k.
func bodyRequired(mt *openapi3.MediaType, k string) bool {
	props, req := map[string]*openapi3.Schema{}, []string{}
	collect(schemaOf(mt.Schema), props, &req, 0)
	return slices.Contains(req, k)
}

// collect gathers the members of s and its allOf parts, and the names any
// part requires.
func collect(s *openapi3.Schema, props map[string]*openapi3.Schema, req *[]string, depth int) {
	if s == nil || depth > maxDepth {
		return
	}
	for k, p := range s.Properties {
		if p != nil && p.Value != nil {
			props[k] = p.Value
		}
	}
	*req = append(*req, s.Required...)
	for _, part := range s.AllOf {
		collect(schemaOf(part), props, req, depth+1)
	}
}
