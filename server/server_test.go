package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/synth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rig is a running service with a fake upstream API, a fake OAuth provider
// and two tenants' API keys.
type rig struct {
	srv        *Server
	http       *httptest.Server
	store      *testStore
	provider   *toolstest.OAuthProvider
	upCalls    atomic.Int64
	keyA, keyB string
}

func newRig(t testing.TB, opts ...func(*Config)) *rig {
	r := &rig{provider: toolstest.NewOAuthProvider()}
	t.Cleanup(r.provider.Close)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.upCalls.Add(1)
		b, _ := io.ReadAll(req.Body)
		auth := req.Header.Get("Authorization")
		if strings.HasPrefix(req.URL.Path, "/mail") && !r.provider.ValidAccess(strings.TrimPrefix(auth, "Bearer ")) {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// The credential itself comes back masked (an echo reaches no
		// one): authFP tells the tests which one was sent.
		fmt.Fprintf(w, `{"path":%q,"auth":%q,"authFP":%q,"body":%q,"id":9007199254740993}`, req.URL.Path, auth, fingerprint(auth), b)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	write := func(name, body string) {
		os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(body, "{UP}", up.URL)), 0o644)
	}
	write("echo.json", `{"id":"t.echo","description":"Echo.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/items/{id}"}}`)
	write("secret.json", `{"id":"t.secret","description":"Uses a secret.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/s","authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}}`)
	write("mail.json", `{"id":"t.mail","description":"Sends mail.","version":"1.0.0","mutating":true,
		"input":{"type":"object"},"output":{"type":"object"},
		"needsSpec":{"connections":{"gmail":{"app":"google","permissions":["gmail.send"],"as":"person"}}},
		"spec":{"kind":"http","method":"POST","urlTemplate":"{UP}/mail","authorization":{"kind":"connection","connection":"gmail"}}}`)
	write("mail.cases.json", `[]`)
	keys, _ := sqlstore.NewKeyring(bytes.Repeat([]byte{9}, 32))
	store := openTestStore(t, filepath.Join(dir, "db"), keys)
	t.Cleanup(func() { store.Close() })
	r.store = store
	apps, err := connections.ParseApps([]byte(fmt.Sprintf(`{"apps":{"google":{"authURL":%q,"tokenURL":%q,"clientID":"client-1","clientSecretEnv":"X","authStyle":"params","permissions":{"gmail.send":["mail.send"]}}}}`,
		r.provider.AuthURL(), r.provider.TokenURL())), func(string) string { return "secret-1" })
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{Logger: quiet})))
	mgr := &connections.Manager{Connections: store, States: store, Apps: apps}
	// The access log on, as serve has it by default: a request's identity
	// then lives in its access record (withIdentity).
	cfg := Config{Store: store, Keys: store, Manager: mgr, Apps: apps, ToolsDir: dir, Loader: &synth.Loader{Registry: reg}, Logger: quiet, AccessLogger: quiet}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.http = httptest.NewServer(srv.Handler())
	t.Cleanup(r.http.Close)
	mgr.RedirectURL = r.http.URL + "/v1/oauth/callback"
	r.keyA, _, _ = store.CreateAPIKey(context.Background(), "tenant-a", auth.RoleAdmin, "")
	r.keyB, _, _ = store.CreateAPIKey(context.Background(), "tenant-b", auth.RoleAdmin, "")
	return r
}

// fingerprint is what the test upstream says of the Authorization it got
// (the credential itself is masked in every answer): a digest's start.
func fingerprint(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "fp-" + hex.EncodeToString(sum[:6])
}

type reply struct {
	status int
	body   map[string]any
	raw    string
	header http.Header
}

func (r *rig) do(t *testing.T, key, method, path, body string) reply {
	t.Helper()
	return r.doFull(t, key, method, path, body)
}

func (r *rig) doFull(t *testing.T, key, method, path, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, r.http.URL+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := reply{status: resp.StatusCode, raw: string(b), header: resp.Header}
	json.Unmarshal(b, &out.body)
	return out
}

func (rp reply) code() string {
	e, _ := rp.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	if r, _ := e["reason"].(string); r != "" {
		c += "/" + r
	}
	return c
}

func TestRoutes(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name, key, method, path, body string
		status                        int
		code, contains                string
	}{
		{"no key", "", "GET", "/v1/tools", "", 401, "unauthorized", ""},
		{"bad key", "htk_nope", "GET", "/v1/tools", "", 401, "unauthorized", ""},
		{"list tools", r.keyA, "GET", "/v1/tools", "", 200, "", `"id":"t.echo"`},
		{"get tool", r.keyA, "GET", "/v1/tools/t.mail", "", 200, "", `"needsSpec"`},
		{"unknown tool", r.keyA, "GET", "/v1/tools/t.nope", "", 404, "tool-not-found", ""},
		{"invoke", r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"a b"}}`, 200, "", `"path":"/items/a b"`},
		{"invoke keeps big ints", r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"x"}}`, 200, "", `9007199254740993`},
		{"invoke bad input", r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input":{}}`, 400, "input-validation-failed", ""},
		{"invoke unknown tool", r.keyA, "POST", "/v1/tools/t.nope/invoke", `{}`, 404, "tool-not-found", ""},
		{"malformed JSON", r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input": {"id": }`, 400, "bad-request/malformed-json", "at byte 17"},
		{"duplicate key in input", r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input": {"id": "a", "x": {"k": 1, "k": 2}}}`, 400, "input-validation-failed/input-invalid", `"pointer":"/x/k"`},
		{"duplicate key in the envelope", r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input": {"id": "a"}, "input": {"id": "b"}}`, 400, "input-validation-failed/input-invalid", `twice`},
		{"deep input", r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input": {"id": "a", "x": ` + strings.Repeat("[", 600) + `}}`, 400, "input-validation-failed/input-invalid", "deeper than 512"},
		{"duplicate key in a secret", r.keyA, "PUT", "/v1/secrets/production/K", `{"value": "a", "value": "b"}`, 400, "bad-request/input-invalid", `twice`},
		{"body too large", r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"` + strings.Repeat("x", 1<<20) + `"}}`, 413, "request-too-large", ""},
		{"missing secret", r.keyA, "POST", "/v1/tools/t.secret/invoke", `{}`, 409, "precondition-failed/secret-unavailable", ""},
		{"no person", r.keyA, "POST", "/v1/tools/t.mail/invoke", `{}`, 409, "precondition-failed/connection-unavailable", "no person"},
		{"unattended person connection", r.keyA, "POST", "/v1/tools/t.mail/invoke", `{"context":{"person":"u1","unattended":true}}`, 403, "precondition-failed/approval-required", ""},
		{"no connection", r.keyA, "POST", "/v1/tools/t.mail/invoke", `{"context":{"person":"u1"}}`, 409, "precondition-failed/connection-unavailable", "authorize"},
		{"empty secret list", r.keyA, "GET", "/v1/secrets", "", 200, "", `{"secrets":[]}`},
		{"bad secret body", r.keyA, "PUT", "/v1/secrets/production/TOKEN", `{"val":"x"}`, 400, "bad-request/input-invalid", `did you mean \"value\"`},
		{"bad authorize body", r.keyA, "POST", "/v1/connections/google/authorize", `{"as":"team"}`, 400, "bad-request", ""},
		{"unknown app", r.keyA, "POST", "/v1/connections/github/authorize", `{"as":"company"}`, 404, "not-found", ""},
		{"revoke unknown", r.keyA, "DELETE", "/v1/connections/conn_nope", "", 404, "not-found", ""},
		{"unknown route", r.keyA, "GET", "/v2/everything", "", 404, "not-found", ""},
		{"healthz", "", "GET", "/healthz", "", 200, "", `"ok"`},
		{"readyz", "", "GET", "/readyz", "", 200, "", `"ready"`},
		{"callback without state", "", "GET", "/v1/oauth/callback?state=st_x&code=c", "", 400, "", "Not connected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := r.do(t, tc.key, tc.method, tc.path, tc.body)
			if rp.status != tc.status || rp.code() != tc.code || !strings.Contains(rp.raw, tc.contains) {
				t.Errorf("%d %s %.300s; want %d %q containing %q", rp.status, rp.code(), rp.raw, tc.status, tc.code, tc.contains)
			}
		})
	}
	// The meta of a call.
	rp := r.do(t, r.keyA, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"}}`)
	meta, _ := rp.body["meta"].(map[string]any)
	if meta["status"] != 200.0 || meta["attempts"] != 1.0 || meta["outsideData"] != true {
		t.Errorf("meta %v", meta)
	}
	if m := r.do(t, "", "GET", "/metrics", ""); m.status != 401 {
		t.Errorf("keyless /metrics on the service's address: %d; want 401 (its series name tenants)", m.status)
	}
	m := r.do(t, r.keyA, "GET", "/metrics", "")
	for _, series := range []string{`httptools_calls_total{outcome="ok",tool="t.echo"}`, `httptools_calls_total{outcome="input-validation-failed",tool="t.echo"}`, "httptools_inflight_calls 0", "httptools_call_duration_seconds_bucket"} {
		if !strings.Contains(m.raw, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}

// TestSecretsByTenant: a key of tenant B can never read, use or delete
// tenant A's secrets, whether the request's identity travels in its access
// record (the access log on, serve's default) or in a context of its own.
func TestSecretsByTenant(t *testing.T) {
	t.Run("access log on", func(t *testing.T) { secretsByTenant(t, newRig(t)) })
	t.Run("access log off", func(t *testing.T) {
		secretsByTenant(t, newRig(t, func(c *Config) { c.AccessLogger = nil }))
	})
}

func secretsByTenant(t *testing.T, r *rig) {
	if rp := r.do(t, r.keyA, "PUT", "/v1/secrets/production/TOKEN", `{"value":"tok-A-secret"}`); rp.status != 204 {
		t.Fatalf("put: %d %s", rp.status, rp.raw)
	}
	list := r.do(t, r.keyA, "GET", "/v1/secrets", "")
	if !strings.Contains(list.raw, `{"envName":"production","name":"TOKEN"}`) || strings.Contains(list.raw, "tok-A") {
		t.Errorf("A's list: %s", list.raw)
	}
	use := r.do(t, r.keyA, "POST", "/v1/tools/t.secret/invoke", `{}`)
	if use.status != 200 || !strings.Contains(use.raw, fingerprint("Bearer tok-A-secret")) || strings.Contains(use.raw, "tok-A-secret") {
		t.Errorf("A's call: %d %s", use.status, use.raw)
	}
	before := r.upCalls.Load()
	if rp := r.do(t, r.keyB, "GET", "/v1/secrets", ""); rp.raw != "{\"secrets\":[]}\n" {
		t.Errorf("B reads %s", rp.raw)
	}
	if rp := r.do(t, r.keyB, "POST", "/v1/tools/t.secret/invoke", `{}`); rp.status != 409 || strings.Contains(rp.raw, "tok-A") {
		t.Errorf("B uses: %d %s", rp.status, rp.raw)
	}
	if r.upCalls.Load() != before {
		t.Error("B's call reached the upstream")
	}
	if rp := r.do(t, r.keyB, "DELETE", "/v1/secrets/production/TOKEN", ""); rp.status != 404 {
		t.Errorf("B deletes: %d", rp.status)
	}
	if rp := r.do(t, r.keyA, "DELETE", "/v1/secrets/production/TOKEN", ""); rp.status != 204 {
		t.Errorf("A deletes: %d", rp.status)
	}
}

// TestConnectionsByTenant: the connect flow through the API, and tenant B
// can neither list nor revoke A's connection.
func TestConnectionsByTenant(t *testing.T) {
	r := newRig(t)
	r.provider.Scope = "mail.send"
	auth := r.do(t, r.keyA, "POST", "/v1/connections/google/authorize", `{"as":"person","person":"u1"}`)
	url, _ := auth.body["url"].(string)
	if auth.status != 200 || !strings.HasPrefix(url, r.provider.AuthURL()) {
		t.Fatalf("authorize: %d %s", auth.status, auth.raw)
	}
	// The browser follows the provider's redirect to our callback (no API key).
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Connected: the google account of person u1") {
		t.Fatalf("callback page: %d %s", resp.StatusCode, page)
	}
	list := r.do(t, r.keyA, "GET", "/v1/connections", "")
	conns, _ := list.body["connections"].([]any)
	if len(conns) != 1 || strings.Contains(list.raw, "at-") || strings.Contains(list.raw, "rt-") {
		t.Fatalf("A's list: %s", list.raw)
	}
	id := conns[0].(map[string]any)["id"].(string)
	if rp := r.do(t, r.keyA, "POST", "/v1/tools/t.mail/invoke", `{"context":{"person":"u1"}}`); rp.status != 200 {
		t.Errorf("A's call with the connection: %d %s", rp.status, rp.raw)
	}
	if rp := r.do(t, r.keyB, "GET", "/v1/connections", ""); !strings.Contains(rp.raw, `"connections":[]`) {
		t.Errorf("B lists %s", rp.raw)
	}
	if rp := r.do(t, r.keyB, "POST", "/v1/tools/t.mail/invoke", `{"context":{"person":"u1"}}`); rp.status != 409 {
		t.Errorf("B uses A's person's connection: %d %s", rp.status, rp.raw)
	}
	if rp := r.do(t, r.keyB, "DELETE", "/v1/connections/"+id, ""); rp.status != 404 {
		t.Errorf("B revokes: %d", rp.status)
	}
	if rp := r.do(t, r.keyA, "DELETE", "/v1/connections/"+id, ""); rp.status != 204 {
		t.Errorf("A revokes: %d", rp.status)
	}
	if rp := r.do(t, r.keyA, "POST", "/v1/tools/t.mail/invoke", `{"context":{"person":"u1"}}`); rp.code() != "precondition-failed/connection-needs-reauth" {
		t.Errorf("after revoke: %s", rp.raw)
	}
	// Replaying the callback is refused.
	resp, _ = http.Get(url)
	resp.Body.Close()
}

// keyTransport adds an API key and a person to every request.
type keyTransport struct{ key, person string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	if k.person != "" {
		r.Header.Set("X-Person-Id", k.person)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCP drives /mcp with the SDK's own client.
func TestMCP(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: keyTransport{key: r.keyA, person: "u1"}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "t.echo" && (tl.Description != "Echo." || tl.InputSchema == nil || tl.OutputSchema == nil) {
			t.Errorf("t.echo: %+v", tl)
		}
	}
	if strings.Join(names, ",") != "t.echo,t.mail,t.secret" {
		t.Errorf("tools %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "7"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %+v %v", res, err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `"path":"/items/7"`) {
		t.Errorf("text %s", text)
	}
	// A tool error is a result with isError, not a protocol error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.mail", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "connection-unavailable") {
		t.Errorf("error call: %+v %v", res, err)
	}
	// Without a key, no MCP.
	bad := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := bad.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.http.URL + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true}, nil); err == nil {
		t.Error("connected without an API key")
	}
}

// TestReloadKeepsOldSetOnError: a failed reload keeps the tools that were
// there.
func TestReloadKeepsOldSetOnError(t *testing.T) {
	r := newRig(t)
	dir := r.srv.cfg.ToolsDir
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"id":"t.broken"}`), 0o644)
	err := r.srv.Reload()
	if err == nil || !strings.Contains(err.Error(), "broken.json: description: is required") {
		t.Fatalf("reload: %v", err)
	}
	if len(r.srv.Tools().IDs()) != 3 {
		t.Errorf("tools after a failed reload: %v", r.srv.Tools().IDs())
	}
	os.Remove(filepath.Join(dir, "broken.json"))
	os.Remove(filepath.Join(dir, "mail.json"))
	if err := r.srv.Reload(); err != nil || len(r.srv.Tools().IDs()) != 2 {
		t.Errorf("good reload: %v %v", err, r.srv.Tools().IDs())
	}
}

// TestReloadReusesUnchangedTools: a reload compiles only the manifests whose
// files changed; the others are the same tools as before.
func TestReloadReusesUnchangedTools(t *testing.T) {
	r := newRig(t)
	dir := r.srv.cfg.ToolsDir
	before := r.srv.Tools()
	echo, _ := before.Tool("t.echo")
	secret, _ := before.Tool("t.secret")
	src, _ := os.ReadFile(filepath.Join(dir, "secret.json"))
	os.WriteFile(filepath.Join(dir, "secret.json"), bytes.Replace(src, []byte("Uses a secret."), []byte("Uses a token."), 1), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	after := r.srv.Tools()
	if after == before {
		t.Fatal("no new set")
	}
	if e2, _ := after.Tool("t.echo"); e2 != echo {
		t.Error("an unchanged manifest was loaded again")
	}
	s2, _ := after.Tool("t.secret")
	if s2 == secret || s2.Manifest().Description != "Uses a token." {
		t.Errorf("the changed manifest kept its old tool: %q", s2.Manifest().Description)
	}
	if rp := r.do(t, r.keyA, "GET", "/v1/tools/t.secret", ""); !strings.Contains(rp.raw, "Uses a token.") {
		t.Errorf("the API serves the old manifest: %s", rp.raw)
	}
}
