package openapi

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The checker's comparison of a described request's URL and headers with
// the operation: its server, its path and each parameter's encoding.

// compareServer flags a URL under none of the operation's servers (its
// own, its path's, the document's) or --server, and returns the URL's
// path with the server's own trimmed.
func (c *checking) compareServer(u *url.URL) string {
	bases := c.serverBases()
	path := u.EscapedPath()
	// The longest first: --server with the document's relative path
	// before --server alone.
	slices.SortStableFunc(bases, func(a, b string) int { return len(b) - len(a) })
	for _, b := range bases {
		su, err := url.Parse(b)
		if err != nil || su.Host == "" {
			continue
		}
		if strings.EqualFold(su.Host, u.Host) && strings.HasPrefix(path, strings.TrimSuffix(su.EscapedPath(), "/")) {
			return strings.TrimPrefix(path, strings.TrimSuffix(su.EscapedPath(), "/"))
		}
	}
	if len(bases) > 0 {
		c.flag(ClassServer, "sends to %s://%s%s, which is under none of the operation's servers %v", u.Scheme, u.Host, u.EscapedPath(), bases)
	}
	return path
}

// serverBases are the URLs a request may start with: the operation's
// servers (or its path's, or the document's), and --server, alone and
// with each of their relative paths.
func (c *checking) serverBases() []string {
	servers := c.op.Servers
	if servers == nil || len(*servers) == 0 {
		servers = &c.item.Servers
	}
	if len(*servers) == 0 {
		servers = &c.doc.Servers
	}
	var bases []string
	for _, s := range *servers {
		bases = append(bases, serverURL(s))
	}
	if c.opts.Server != "" {
		bases = append(bases, c.opts.Server)
		for _, s := range *servers {
			if rel := serverURL(s); strings.HasPrefix(rel, "/") {
				bases = append(bases, strings.TrimRight(c.opts.Server, "/")+rel)
			}
		}
	}
	return bases
}

// comparePath flags a path (the server's trimmed) other than the
// operation's with each {name} the expected encoding of its value.
func (c *checking) comparePath(path string) {
	want := c.origin.Path
	if i := strings.IndexAny(want, "?#"); i >= 0 {
		want = want[:i]
	}
	for _, k := range c.order {
		p := c.params[k]
		if p.In != "path" {
			continue
		}
		v, ok := c.values[k]
		if !ok {
			continue
		}
		want = strings.ReplaceAll(want, "{"+p.Name+"}", pathValue(p, v))
	}
	if escapeLiterals(want) != path && want != path {
		if dec, err := url.PathUnescape(path); err != nil || dec != want {
			c.flag(ClassPath, "sends path %s, the operation's is %s", path, want)
		}
	}
}

// compareQuery flags each query parameter given whose value q does not
// carry in its style.
func (c *checking) compareQuery(q url.Values) {
	for _, k := range c.order {
		p := c.params[k]
		v, ok := c.values[k]
		if p.In != "query" || !ok {
			continue
		}
		if msg := queryMatches(p, v, q); msg != "" {
			c.flag(ClassQuery, "query parameter %q: %s", p.Name, msg)
		}
	}
}

// compareHeaders flags each header parameter given that w does not send
// with its value.
func (c *checking) compareHeaders(w *wire) {
	for _, k := range c.order {
		p := c.params[k]
		v, ok := c.values[k]
		if p.In != "header" || !ok {
			continue
		}
		got, sent := w.header(p.Name)
		if !sent || got != scalarText(v) {
			c.flag(ClassHeader, "header %q: sent %q (present %v), want %q", p.Name, got, sent, scalarText(v))
		}
	}
}

// serverURL is a server's URL with its variables' defaults.
func serverURL(s *openapi3.Server) string {
	if s == nil {
		return ""
	}
	u := s.URL
	for name, v := range s.Variables {
		if v != nil {
			u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
		}
	}
	return u
}

// scalarText is a value as a URL or a header spells it.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalarText(e)
		}
		return strings.Join(parts, ",")
	}
	return jsonText(v)
}

// pathValue is a path parameter's value in its style.
func pathValue(p *openapi3.Parameter, v any) string {
	text := url.PathEscape(scalarText(v))
	switch p.Style {
	case "label":
		return "." + text
	case "matrix":
		return ";" + p.Name + "=" + text
	}
	return text
}

// queryMatches says how q does not carry v as p's style says, "" when it
// does.
func queryMatches(p *openapi3.Parameter, v any, q url.Values) string {
	style := p.Style
	if style == "" {
		style = "form"
	}
	explode := style == "form"
	if p.Explode != nil {
		explode = *p.Explode
	}
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalarText(e)
		}
		switch {
		case style == "form" && explode:
			if got := q[p.Name]; strings.Join(got, "\x00") != strings.Join(parts, "\x00") {
				return fmt.Sprintf("sent %q, want each value repeated %q", got, parts)
			}
			return ""
		case style == "form":
			if got := q.Get(p.Name); got != strings.Join(parts, ",") {
				return fmt.Sprintf("sent %q, want %q (comma-joined)", got, strings.Join(parts, ","))
			}
			return ""
		case style == "pipeDelimited":
			if got := q.Get(p.Name); got != strings.Join(parts, "|") {
				return fmt.Sprintf("sent %q, want %q", got, strings.Join(parts, "|"))
			}
			return ""
		case style == "spaceDelimited":
			if got := q.Get(p.Name); got != strings.Join(parts, " ") {
				return fmt.Sprintf("sent %q, want %q", got, strings.Join(parts, " "))
			}
			return ""
		}
	case map[string]any:
		if style == "deepObject" {
			for k, e := range x {
				if got := q.Get(p.Name + "[" + k + "]"); got != scalarText(e) {
					return fmt.Sprintf("%s[%s] sent %q, want %q", p.Name, k, got, scalarText(e))
				}
			}
			return ""
		}
		if explode {
			for k, e := range x {
				if got := q.Get(k); got != scalarText(e) {
					return fmt.Sprintf("member %s sent %q, want %q", k, got, scalarText(e))
				}
			}
			return ""
		}
		return "" // form, not exploded: k,v pairs joined; not compared
	}
	if got, ok := q[p.Name]; !ok || len(got) != 1 || got[0] != scalarText(v) {
		return fmt.Sprintf("sent %q, want %q", got, scalarText(v))
	}
	return ""
}
