package httpspec

import (
	"fmt"
	"golang.org/x/net/http/httpguts"
	"net/url"
	"strconv"
	"strings"

	"github.com/httptools/httptools/body"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// forbiddenHeaders are set, dropped or refused by the transport (the
// hop-by-hop ones are stripped by proxies and refused by HTTP/2), so a value
// written in one would never reach the API as written.
var forbiddenHeaders = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"keep-alive": true, "proxy-connection": true, "upgrade": true, "te": true, "trailer": true,
}

// isForm reports whether the spec's text body is a form: its Content-Type
// header says application/x-www-form-urlencoded (parameters allowed).
func isForm(s *Spec) bool {
	for _, h := range s.Headers {
		if strings.EqualFold(h.Name, "Content-Type") {
			mt, _, _ := strings.Cut(h.Value, ";")
			return strings.EqualFold(strings.TrimSpace(mt), body.ContentTypeForm)
		}
	}
	return false
}

// origin is the literal scheme, host and port of a URL template.
type origin struct {
	scheme string // lower case
	host   string // host[:port] as written, lower case
	name   string // host name without port or brackets
}

// checkSpec runs the load-time rules of an http spec and compiles what the
// handler needs. Problems go to ps with paths from the manifest root.
func checkSpec(m *synth.Manifest, s *Spec, opts synth.LoadOptions, ps *synth.Problems) (*Template, origin) {
	tmpl, org := checkURL(s.URLTemplate, ps)
	checkHeaders(s, ps)
	if a := s.Authorization; a != nil {
		a.Check(m, "spec.authorization", ps)
	}
	if r := s.SuccessStatus; r != nil && r.Min > r.Max {
		ps.Error("spec.successStatus", swapAdvice(r.Min, r.Max))
	}
	if s.TimeoutMs > opts.MaxTimeoutMs {
		ps.Error("spec.timeoutMs", fmt.Sprintf("%d is above this runtime's maximum of %d ms: lower it", s.TimeoutMs, opts.MaxTimeoutMs))
	}
	if n := m.Network; n != nil {
		switch n.Kind {
		case synth.NetworkNone:
			ps.Error("network.kind", `"none" forbids all egress, so an http tool could never run: use "allowlist" with the API's host, or "unrestricted"`)
		case synth.NetworkAllowlist:
			if org.name != "" && !fetch.HostAllowed(n.Hosts, org.name) {
				ps.Error("network.hosts", fmt.Sprintf("does not cover the template's host %s: add %q", org.name, org.name))
			}
		}
	}
	if s.RequestBody != nil && s.RequestBody.Kind == body.Text {
		names := body.NewTemplate(s.RequestBody.Template).Names()
		if isForm(s) {
			f, err := body.ParseForm(s.RequestBody.Template)
			if err != nil {
				ps.Error("spec.requestBody.template", "is a form body (Content-Type "+body.ContentTypeForm+"): "+err.Error())
				names = nil
			} else {
				names = f.Names()
			}
		}
		checkPlaceholders(m, "spec.requestBody.template", names, ps)
	}
	warnings(m, s, tmpl, org, ps)
	return tmpl, org
}

// swapAdvice words a success range whose min is above its max as a fix
// that passes: swapping only when both ends are statuses (100–599), since
// a swapped "min 201, max 20" would be refused in turn.
func swapAdvice(lo, hi int) string {
	isStatus := func(n int) bool { return n >= 100 && n <= 599 }
	switch {
	case isStatus(lo) && isStatus(hi):
		return fmt.Sprintf("min %d is above max %d: swap them (min %d, max %d)", lo, hi, hi, lo)
	case isStatus(lo):
		class := lo / 100
		return fmt.Sprintf("min %d is above max %d, and max must be a status from %d to 599: set max to %d for %d alone, or to %d99 for any %dxx from %d", lo, hi, lo, lo, lo, class, class, lo)
	}
	return fmt.Sprintf("min %d is above max %d: both must be statuses from 100 to 599, min at most max (200 and 299 for any 2xx)", lo, hi)
}

func checkURL(raw string, ps *synth.Problems) (*Template, origin) {
	const path = "spec.urlTemplate"
	if ps.SchemaRefused(path) {
		return nil, origin{}
	}
	lower := strings.ToLower(raw)
	var scheme string
	switch {
	case strings.HasPrefix(lower, "https://"):
		scheme = "https"
	case strings.HasPrefix(lower, "http://"):
		scheme = "http"
	case strings.HasPrefix(raw, "{"):
		ps.Error(path, "the scheme must be written literally: start with https:// and the API's host, e.g. https://api.example.com/{id}")
		return nil, origin{}
	default:
		ps.Error(path, fmt.Sprintf("must start with https:// or http:// and a host; got %q", raw))
		return nil, origin{}
	}
	rest := raw[len(scheme)+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	if brace := strings.IndexAny(authority, "{}"); brace >= 0 {
		if host := authority[:brace]; brace == len(authority)-1 && host != "" && !strings.ContainsAny(host, "{}@") {
			// https://api.x.com{/id} or https://api.x.com{?q}
			ps.Error(path, fmt.Sprintf("an expression must come after the first / of the path: start the path with a literal /, e.g. %s://%s/%s", scheme, host, "{id}"))
		} else {
			ps.Error(path, "fills {placeholders} in its path and query only, never in its scheme, user info, host or port: write the host literally, e.g. https://api.example.com/{id}")
		}
		return nil, origin{}
	}
	if authority == "" {
		ps.Error(path, "has no host: write it after the scheme, e.g. https://api.example.com/")
		return nil, origin{}
	}
	for _, c := range []byte(authority) {
		if c >= 0x80 {
			ps.Error(path, fmt.Sprintf("host %q must be ASCII: write an international name in punycode (xn--…)", authority))
			return nil, origin{}
		}
	}
	if strings.Contains(authority, "@") {
		ps.Error(path, "holds user info (user:password@): never put credentials in a URL; declare authorization with a secretRef")
		return nil, origin{}
	}
	if end < len(rest) && rest[end] != '/' && strings.ContainsAny(rest[end:], "{") {
		ps.Error(path, fmt.Sprintf("an expression must come after the first / of the path: write %s://%s/%s", scheme, authority, rest[end:]))
		return nil, origin{}
	}
	u, err := url.Parse(scheme + "://" + authority + "/")
	if err != nil || u.Hostname() == "" {
		ps.Error(path, fmt.Sprintf("host %q is not a valid host[:port]", authority))
		return nil, origin{}
	}
	if p := u.Port(); p != "" || strings.HasSuffix(authority, ":") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || p[0] == '0' {
			ps.Error(path, fmt.Sprintf("port %q is not a number from 1 to 65535: fix it, or leave it out for the scheme's default", p))
			return nil, origin{}
		}
	}
	tmpl, err := ParseTemplate(raw)
	if err != nil {
		ps.Error(path, err.Error())
		return nil, origin{}
	}
	// Every variable as "x": what is left of a dot segment is the
	// template's own.
	sample, _ := tmpl.Expand(func(*VarSpec) Value { return Value{Kind: String, Str: "x"} })
	if len(dotSegments(sample, len(scheme)+3+len(authority))) > 0 {
		ps.Error(path, "has a \".\" or \"..\" path segment, which servers resolve away: write the path it means")
		return nil, origin{}
	}
	return tmpl, origin{scheme: scheme, host: strings.ToLower(u.Host), name: strings.ToLower(u.Hostname())}
}

func checkHeaders(s *Spec, ps *synth.Problems) {
	for i, h := range s.Headers {
		p := synth.JoinPath("spec.headers", i)
		switch {
		case ps.SchemaRefused(p):
			continue
		case !httpguts.ValidHeaderFieldName(h.Name):
			ps.Error(p+".name", fmt.Sprintf("%q is not a valid header name (RFC 9110 token): use letters, digits and !#$%%&'*+-.^_`|~ only", h.Name))
		case forbiddenHeaders[strings.ToLower(h.Name)]:
			ps.Error(p+".name", fmt.Sprintf("%s is set by the HTTP client: remove this header", h.Name))
		case strings.EqualFold(h.Name, "Authorization") && s.Authorization != nil:
			ps.Error(p+".name", "a static Authorization header conflicts with spec.authorization: remove one of them")
		case s.Authorization != nil && s.Authorization.Kind == AuthHeader && strings.EqualFold(h.Name, s.Authorization.HeaderName):
			ps.Error(p+".name", fmt.Sprintf("a static %s header conflicts with spec.authorization, which sends the secret in it: remove one of them", h.Name))
		}
		if hasLineBreakOrNUL(h.Value) {
			ps.Error(p+".value", "holds a CR, LF or NUL character, which would split the request: remove it")
		}
	}
}

func warnings(m *synth.Manifest, s *Spec, tmpl *Template, org origin, ps *synth.Problems) {
	in := gjson.ParseBytes(m.Input)
	props := in.Get("properties")
	if tmpl != nil {
		seen := map[string]bool{}
		for _, v := range tmpl.Vars() {
			top := InputKeys(v.Name)[0]
			if seen[top] || props.Get(body.Path([]string{top})).Exists() {
				continue
			}
			seen[top] = true
			if v.Operator == 0 && declares(in) {
				// A simple {x} must have a value, and an input that lists
				// its properties tells no caller to send this one: every
				// call would fail with missing-value.
				ps.Error("spec.urlTemplate", fmt.Sprintf("placeholder {%s} is not declared in input.properties, so no call can fill it and every call fails with missing-value: declare %q in input.properties and input.required, or fix the placeholder's spelling%s", v.Name, top, suggestName(top, props)))
				continue
			}
			ps.Warn("spec.urlTemplate", fmt.Sprintf("placeholder {%s} is not declared in input.properties: declare %q so callers know to send it", v.Name, top))
		}
		required := map[string]bool{}
		for _, r := range in.Get("required").Array() {
			required[r.Str] = true
		}
		for _, v := range tmpl.Vars() {
			top := InputKeys(v.Name)[0]
			prop := props.Get(body.Path([]string{top}))
			if v.Operator == 0 && prop.Exists() && !required[top] && !prop.Get("default").Exists() {
				ps.Warn("spec.urlTemplate", fmt.Sprintf("{%s} must have a value on every call, but input.required does not list %q: add it, or use an optional form such as {?%s}", v.Name, top, v.Name))
			}
		}
	}
	for i, h := range s.Headers {
		checkPlaceholders(m, synth.JoinPath("spec.headers", i)+".value", body.NewTemplate(h.Value).Names(), ps)
	}
	if s.Method == "GET" && m.Mutating == nil {
		ps.Warn("mutating", "is absent, so this GET counts as mutating and asks for approval on first use: set mutating: false if it only reads")
	}
	if s.Method == "GET" && s.RequestBody != nil {
		ps.Warn("spec.requestBody", "a GET with a body is ignored or refused by many servers: send the values in the query instead")
	}
	if org.name != "" && !hasNetworkEffect(m, org.name) {
		ps.Warn("effects", fmt.Sprintf("declares no network effect for %s: add {\"kind\": \"network\", \"resource\": \"external:%s\"}", org.name, org.name))
	}
}

// declares reports whether an input schema says, at its top, every
// property a caller sends: it lists properties or refuses others, and
// declares none elsewhere (a $ref, a combination, patterns). A bare
// {"type":"object"} declares nothing, so an undeclared placeholder there
// is only a warning.
func declares(in gjson.Result) bool {
	for _, k := range []string{"$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "if", "patternProperties", "dependentSchemas", "dependencies"} {
		if in.Get(body.Path([]string{k})).Exists() {
			return false
		}
	}
	props := in.Get("properties")
	return props.IsObject() && len(props.Map()) > 0 || in.Get("additionalProperties").Type == gjson.False
}

// suggestName is ` (did you mean "x"?)` when a declared property is
// within two edits of name, else "".
func suggestName(name string, props gjson.Result) string {
	var known []string
	props.ForEach(func(k, _ gjson.Result) bool {
		known = append(known, k.Str)
		return true
	})
	if best := synth.Closest(name, known); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// checkPlaceholders warns about placeholders input.properties does not declare.
func checkPlaceholders(m *synth.Manifest, path string, names []string, ps *synth.Problems) {
	props := gjson.GetBytes(m.Input, "properties")
	seen := map[string]bool{}
	for _, n := range names {
		top := strings.SplitN(n, ".", 2)[0]
		if seen[top] || props.Get(body.Path([]string{top})).Exists() {
			continue
		}
		seen[top] = true
		ps.Warn(path, fmt.Sprintf("placeholder {%s} is not declared in input.properties: declare %q so callers know to send it", n, top))
	}
}

func hasNetworkEffect(m *synth.Manifest, host string) bool {
	for _, e := range m.Effects {
		if e.Kind != "network" {
			continue
		}
		r := strings.TrimPrefix(strings.ToLower(e.Resource), "external:")
		if r == "" || r == "*" || fetch.HostAllowed([]string{r}, host) {
			return true
		}
	}
	return false
}
