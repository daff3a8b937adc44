package synth_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

const base = `{
  "id": "acme.get-item",
  "description": "Get an item.",
  "version": "1.0.0",
  "mutating": false,
  "input": {"type": "object", "properties": {"id": {"type": "string"}, "q": {"type": "string"}}, "required": ["id"]},
  "output": {"type": "object"},
  "effects": [{"kind": "network", "resource": "external:api.acme.test"}],
  "spec": {"kind": "http", "method": "GET", "urlTemplate": "https://api.acme.test/items/{id}{?q}"}
}`

// patch applies an RFC 7386 merge patch to the base manifest.
func patch(t testing.TB, p string) []byte {
	t.Helper()
	var doc, pt any
	if err := json.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(p), &pt); err != nil {
		t.Fatalf("patch %s: %v", p, err)
	}
	b, _ := json.Marshal(merge(doc, pt))
	return b
}

func merge(doc, p any) any {
	pm, ok := p.(map[string]any)
	if !ok {
		return p
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
		} else {
			dm[k] = merge(dm[k], v)
		}
	}
	return dm
}

func TestBaseManifestLoadsClean(t *testing.T) {
	tool, err := synth.Load([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if len(tool.Warnings()) != 0 {
		t.Errorf("warnings: %v", tool.Warnings())
	}
}

// TestLoadErrors has one case per error rule of docs/design.md section 2; each
// names the path and a piece of the message that says what to change.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, patch, path, msg string
		code                   synth.Code
	}{
		{"unknown field", `{"colour": "red"}`, "colour", "unknown field", ""},
		{"unknown spec field", `{"spec": {"retries": 3}}`, "spec.retries", "unknown field", ""},
		{"wrong type", `{"mutating": "no"}`, "mutating", "must be a boolean, not string", ""},
		{"enum", `{"spec": {"method": "HEAD"}}`, "spec.method", `must be one of "GET"`, ""},
		{"required", `{"description": null}`, "description", "is required", ""},
		{"required nested", `{"spec": {"authorization": {"kind": "bearer"}}}`, "spec.authorization.secretRef", "is required", ""},
		{"version", `{"version": "1.0"}`, "version", "must be X.Y.Z", ""},
		{"version v", `{"version": "v1.0.0"}`, "version", "must be X.Y.Z", ""},
		{"connection need as", `{"needsSpec": {"connections": {"g": {"app": "google", "permissions": [], "as": "team"}}}}`, "needsSpec.connections.g.as", `"person", "company"`, ""},
		{"input not 2020-12", `{"input": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}}`, "input.$schema", "names draft-07", synth.CodeInvalidSchema},
		{"input does not compile", `{"input": {"type": "object", "properties": {"id": {"type": "strin"}}}}`, "input.properties.id.type", "is not a valid JSON Schema", synth.CodeInvalidSchema},
		{"output does not compile", `{"output": {"minLength": -1}}`, "output.minLength", "is not a valid JSON Schema", synth.CodeInvalidSchema},
		{"remote ref refused", `{"output": {"$ref": "https://example.com/s.json"}}`, "output", "external $ref", synth.CodeInvalidSchema},
		{"file ref refused", `{"output": {"$ref": "file:///etc/passwd"}}`, "output", "external $ref", synth.CodeInvalidSchema},
		{"mcp draft-04", `{"transport": "mcp", "mcpEndpoint": "mcp+http://mcp.acme.test/mcp", "spec": null, "input": {"$schema": "http://json-schema.org/draft-04/schema#"}}`, "input.$schema", "draft-06, draft-07, 2019-09 or 2020-12", synth.CodeInvalidSchema},
		{"spec and artifact", `{"codeArtifactRef": {"kind": "oci", "imageRef": "i", "modulePath": "m", "artifactVersion": "1"}}`, "spec", "mutually exclusive", ""},
		{"unknown kind", `{"spec": {"kind": "sql"}}`, "spec.kind", `unknown kind "sql": registered kinds are "http"`, ""},
		{"pauses with spec", `{"pauses": true}`, "pauses", "only a pack tool with a handler can pause", ""},
		{"not http", `{"spec": {"urlTemplate": "ftp://api.acme.test/x"}}`, "spec.urlTemplate", "must start with https:// or http://", ""},
		{"no host", `{"spec": {"urlTemplate": "https:///x"}}`, "spec.urlTemplate", "has no host", ""},
		{"placeholder scheme", `{"spec": {"urlTemplate": "{scheme}://api.acme.test/x"}}`, "spec.urlTemplate", "scheme must be written literally", ""},
		{"placeholder host", `{"spec": {"urlTemplate": "https://{host}/x"}}`, "spec.urlTemplate", "never in its scheme, user info, host or port", ""},
		{"placeholder subdomain", `{"spec": {"urlTemplate": "https://api.{domain}/x"}}`, "spec.urlTemplate", "never in its scheme, user info, host or port", ""},
		{"placeholder port", `{"spec": {"urlTemplate": "https://api.acme.test:{port}/x"}}`, "spec.urlTemplate", "never in its scheme, user info, host or port", ""},
		{"placeholder userinfo", `{"spec": {"urlTemplate": "https://{user}@api.acme.test/x"}}`, "spec.urlTemplate", "never in its scheme, user info, host or port", ""},
		{"non-ASCII host", `{"spec": {"urlTemplate": "https://bücher.example/x"}}`, "spec.urlTemplate", "punycode", ""},
		{"literal userinfo", `{"spec": {"urlTemplate": "https://me:pw@api.acme.test/x"}}`, "spec.urlTemplate", "never put credentials in a URL", ""},
		{"expression before path", `{"spec": {"urlTemplate": "https://api.acme.test{/id}"}}`, "spec.urlTemplate", "must come after the first / of the path", ""},
		{"expression in query without path", `{"spec": {"urlTemplate": "https://api.acme.test?q={q}"}}`, "spec.urlTemplate", "must come after the first / of the path", ""},
		{"invalid template", `{"spec": {"urlTemplate": "https://api.acme.test/{id"}}`, "spec.urlTemplate", "never closed", ""},
		{"invalid varname", `{"spec": {"urlTemplate": "https://api.acme.test/{a-b}"}}`, "spec.urlTemplate", "invalid URI template", ""},
		{"header name", `{"spec": {"headers": [{"name": "X Y", "value": "1"}]}}`, "spec.headers[0].name", "RFC 9110 token", ""},
		{"header CR", `{"spec": {"headers": [{"name": "X", "value": "a\rb"}]}}`, "spec.headers[0].value", "CR, LF or NUL", ""},
		{"header NUL", `{"spec": {"headers": [{"name": "X", "value": "a\u0000b"}]}}`, "spec.headers[0].value", "CR, LF or NUL", ""},
		{"header Host", `{"spec": {"headers": [{"name": "host", "value": "evil.test"}]}}`, "spec.headers[0].name", "set by the HTTP client", ""},
		{"header Transfer-Encoding", `{"spec": {"headers": [{"name": "Transfer-Encoding", "value": "chunked"}]}}`, "spec.headers[0].name", "set by the HTTP client", ""},
		{"header Connection", `{"spec": {"headers": [{"name": "Connection", "value": "close"}]}}`, "spec.headers[0].name", "set by the HTTP client", ""},
		{"header Content-Length", `{"spec": {"headers": [{"name": "Content-Length", "value": "1"}]}}`, "spec.headers[0].name", "set by the HTTP client", ""},
		{"static Authorization with auth", `{"spec": {"headers": [{"name": "authorization", "value": "Basic x"}], "authorization": {"kind": "bearer", "secretRef": {"envName": "p", "name": "T"}}}}`, "spec.headers[0].name", "conflicts with spec.authorization", ""},
		{"auth header name", `{"spec": {"authorization": {"kind": "header", "headerName": "X Key", "secretRef": {"envName": "p", "name": "T"}}}}`, "spec.authorization.headerName", "not a valid header name", ""},
		{"undeclared connection", `{"spec": {"authorization": {"kind": "connection", "connection": "gmail"}}}`, "spec.authorization.connection", "needsSpec.connections.gmail", ""},
		{"status range", `{"spec": {"successStatus": {"min": 300, "max": 200}}}`, "spec.successStatus", "min 300 is above max 200", ""},
		{"status bounds", `{"spec": {"successStatus": {"min": 200, "max": 700}}}`, "spec.successStatus.max", "must be at most 599", ""},
		{"network none", `{"network": {"kind": "none"}}`, "network.kind", "could never run", ""},
		{"allowlist misses host", `{"network": {"kind": "allowlist", "hosts": ["*.api.acme.test"]}}`, "network.hosts", `add "api.acme.test"`, ""},
		{"allowlist without hosts", `{"network": {"kind": "allowlist"}}`, "network.hosts", "is required", ""},
		{"timeout above max", `{"spec": {"timeoutMs": 300001}}`, "spec.timeoutMs", "above this runtime's maximum of 300000", ""},
		{"timeout zero", `{"spec": {"timeoutMs": 0}}`, "spec.timeoutMs", "must be at least 1", ""},
		{"env default", `{"needsSpec": {"env": {"REGION": {"type": "string", "default": 3}}}}`, "needsSpec.env.REGION.default", "must be a string", ""},
		{"secret schema", `{"needsSpec": {"secrets": {"T": {"type": 3}}}}`, "needsSpec.secrets.T.type", "not a valid JSON Schema", synth.CodeInvalidSchema},
		{"not JSON", `"x"`, "", "must be an object", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := patch(t, tc.patch)
			if tc.patch == `"x"` {
				src = []byte(`"x"`)
			}
			_, err := synth.Load(src)
			var e *synth.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a *synth.Error", err)
			}
			want := tc.code
			if want == "" {
				want = synth.CodeInvalidToolDefinition
			}
			if e.Code != want {
				t.Errorf("code %s, want %s", e.Code, want)
			}
			for _, p := range e.Problems {
				if p.Severity == synth.SeverityError && p.Path == tc.path && strings.Contains(p.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no error at %q containing %q; got:\n%s", tc.path, tc.msg, list(e.Problems))
		})
	}
}

func list(ps []synth.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

func TestLoadWarnings(t *testing.T) {
	cases := []struct{ name, patch, path, msg string }{
		{"undeclared placeholder", `{"spec": {"urlTemplate": "https://api.acme.test/items/{id}{?page}"}}`, "spec.urlTemplate", "{page} is not declared in input.properties"},
		{"simple not required", `{"input": {"required": []}}`, "spec.urlTemplate", `input.required does not list "id"`},
		{"GET mutating absent", `{"mutating": null}`, "mutating", "counts as mutating"},
		{"GET with body", `{"spec": {"requestBody": {"kind": "json-input"}}}`, "spec.requestBody", "GET with a body"},
		{"no network effect", `{"effects": null}`, "effects", "no network effect for api.acme.test"},
		{"network effect for another host", `{"effects": [{"kind": "network", "resource": "external:other.test"}]}`, "effects", "no network effect"},
		{"sandbox", `{"sandbox": "context-isolated"}`, "sandbox", "not enforced on a declarative call"},
		{"header placeholder", `{"spec": {"headers": [{"name": "X-Trace", "value": "{trace}"}]}}`, "spec.headers[0].value", "{trace} is not declared"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := synth.Load(patch(t, tc.patch))
			if err != nil {
				t.Fatalf("warnings must not refuse the manifest: %v", err)
			}
			for _, p := range tool.Warnings() {
				if p.Severity == synth.SeverityWarning && p.Path == tc.path && strings.Contains(p.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no warning at %q containing %q; got:\n%s", tc.path, tc.msg, list(tool.Warnings()))
		})
	}
}

// TestLoadReportsEverythingAtOnce checks that independent mistakes in one
// manifest come back together, errors first, each once.
func TestLoadReportsEverythingAtOnce(t *testing.T) {
	_, err := synth.Load(patch(t, `{"version": "x", "colour": 1, "pauses": true, "effects": null,
		"spec": {"method": "FETCH", "headers": [{"name": "Host", "value": "x"}], "successStatus": {"min": 500, "max": 400}}}`))
	var e *synth.Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	want := []string{"colour", "pauses", "spec.headers[0].name", "spec.method", "spec.successStatus", "version"}
	var got []string
	for _, p := range e.Problems {
		if p.Severity == synth.SeverityError {
			got = append(got, p.Path)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("error paths %v, want %v\n%s", got, want, list(e.Problems))
	}
	if last := e.Problems[len(e.Problems)-1]; last.Severity != synth.SeverityWarning || last.Path != "effects" {
		t.Errorf("the warning about effects should come after the errors; got %v", last)
	}
	if !strings.Contains(e.Error(), `invalid tool definition "acme.get-item": colour: unknown field`) {
		t.Errorf("message %q", e.Error())
	}
}

func TestLoadMaxTimeoutConfigurable(t *testing.T) {
	l := synth.Loader{Options: synth.LoadOptions{MaxTimeoutMs: 1000}}
	if _, err := l.Load(patch(t, `{"spec": {"timeoutMs": 1001}}`)); err == nil {
		t.Error("1001 ms must be refused when the maximum is 1000")
	}
	if _, err := l.Load(patch(t, `{"spec": {"timeoutMs": 1000}}`)); err != nil {
		t.Error(err)
	}
}

func TestMCPDialects(t *testing.T) {
	for _, d := range []string{"http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema"} {
		src := patch(t, `{"transport": "mcp", "mcpEndpoint": "mcp+http://mcp.acme.test/mcp", "spec": null, "input": {"$schema": "`+d+`", "type": "object"}}`)
		if _, err := synth.Load(src); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// FuzzLoad feeds arbitrary documents to the loader: it must never panic, and
// it returns either a tool or a *synth.Error with problems.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"../fixtures/tools", "../fixtures/invalid", "../fixtures/warnings"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(base))
	f.Fuzz(func(t *testing.T, src []byte) {
		tool, err := synth.Load(src)
		if err == nil {
			if tool == nil {
				t.Fatal("nil tool without error")
			}
			return
		}
		var e *synth.Error
		if !errors.As(err, &e) || len(e.Problems) == 0 {
			t.Fatalf("error without problems: %v", err)
		}
	})
}

// TestDefinitionRules: the rules the Tool definition states and the loader
// enforces. Only a tool with a handler pauses (3 refusals: with a spec, an
// MCP server's tool, no handler; 1 load: a handler); a filesystem handler
// warns, and is refused where a production server asks; limits.cpuMs, which
// the schema requires, draws no warning.
func TestDefinitionRules(t *testing.T) {
	handlerTool := func(extra string) []byte {
		return []byte(`{"id": "acme.h", "description": "d", "version": "1.0.0", "input": {"type": "object"}, "output": {"type": "object"}` + extra + `}`)
	}
	for name, src := range map[string][]byte{
		"with a spec":       patch(t, `{"pauses": true}`),
		"an MCP tool":       handlerTool(`, "pauses": true, "transport": "mcp", "mcpEndpoint": "mcp+http://a.test/mcp"`),
		"without a handler": handlerTool(`, "pauses": true`),
	} {
		_, err := synth.Load(src)
		var e *synth.Error
		if !errors.As(err, &e) || len(e.Problems) == 0 || e.Problems[0].Path != "pauses" {
			t.Errorf("pauses %s: %v", name, err)
		}
	}
	if _, err := synth.Load(handlerTool(`, "pauses": true, "codeArtifactRef": {"kind": "oci", "imageRef": "r/i", "modulePath": "m", "artifactVersion": "1"}`)); err != nil {
		t.Errorf("pauses with a handler: %v", err)
	}

	fs := handlerTool(`, "codeArtifactRef": {"kind": "filesystem", "modulePath": "/home/a/h.ts"}`)
	tool, err := synth.Load(fs)
	if err != nil || len(tool.Warnings()) != 1 || tool.Warnings()[0].Path != "codeArtifactRef.kind" {
		t.Errorf("a filesystem handler by default: %v, %v", err, tool)
	}
	_, err = (&synth.Loader{Options: synth.LoadOptions{RefuseFilesystemHandlers: true}}).Load(fs)
	var e *synth.Error
	if !errors.As(err, &e) || e.Problems[0].Path != "codeArtifactRef.kind" || e.Problems[0].Severity != synth.SeverityError {
		t.Errorf("a filesystem handler where refused: %v", err)
	}

	tool, err = synth.Load(patch(t, `{"limits": {"memMB": 10, "cpuMs": 10}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tool.Warnings() {
		if strings.HasPrefix(p.Path, "limits") {
			t.Errorf("limits draw a warning: %s: %s", p.Path, p.Message)
		}
	}
}

// TestMCPEndpoint: the three forms parse to their transport, URL or
// command and remote tool; anything ambiguous is refused with what to
// write; transport "mcp" with a spec warns what runs.
func TestMCPEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"mcp+http://mcp.acme.test/mcp":                  "http https://mcp.acme.test/mcp search",
		"mcp+http://mcp.acme.test:8443/v1/mcp#find":     "http https://mcp.acme.test:8443/v1/mcp find",
		"mcp+sse://127.0.0.1:9000/sse":                  "sse https://127.0.0.1:9000/sse search",
		"mcp+stdio:///usr/local/bin/server --read-only": "stdio [/usr/local/bin/server --read-only] search",
	} {
		ep, err := synth.ParseMCPEndpoint(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		where := fmt.Sprint(ep.Command)
		if ep.URL != nil {
			where = ep.URL.String()
		}
		if got := ep.Transport + " " + where + " " + ep.RemoteTool("acme.search"); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	for in, why := range map[string]string{
		"not-a-uri":                          "is not a URI",
		"https://mcp.acme.test/mcp":          "is a https URL",
		"mcp+ws://x/mcp":                     `scheme "mcp+ws"`,
		"mcp+http:///mcp":                    "names no host",
		"mcp+http://user:pw@x/mcp":           "holds a user or password",
		"mcp+http://x/{tenant}/mcp":          "placeholder",
		"mcp+http://x/mcp#bad tool":          "placeholder or a space",
		"mcp+stdio://server --flag":          "absolute path",
		"mcp+stdio:///bin/sh -c 'rm -rf /'":  "shell character",
		"mcp+stdio:///usr/bin/server;reboot": "shell character",
		" mcp+http://x/mcp":                  "spaces around",
	} {
		if _, err := synth.ParseMCPEndpoint(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want %q", in, err, why)
		}
	}
	tool, err := synth.Load(patch(t, `{"transport": "mcp", "mcpEndpoint": "mcp+http://x.test/mcp"}`))
	if err != nil || len(tool.Warnings()) == 0 || tool.Warnings()[0].Path != "transport" || !strings.Contains(tool.Warnings()[0].Message, "mcpEndpoint is not called") {
		t.Errorf("transport mcp with a spec: %v %v", err, tool)
	}
	if _, err := synth.Load(patch(t, `{"transport": "mcp", "spec": null}`)); err == nil || !strings.Contains(err.Error(), "mcpEndpoint") {
		t.Errorf("transport mcp without an endpoint: %v", err)
	}
}

func FuzzMCPEndpoint(f *testing.F) {
	for _, s := range []string{"mcp+http://x/mcp#t", "mcp+sse://[::1]:80/s", "mcp+stdio:///a b c", "not"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := synth.ParseMCPEndpoint(s)
		if err == nil && ep.URL == nil && len(ep.Command) == 0 {
			t.Fatalf("%q parsed to nothing", s)
		}
	})
}
