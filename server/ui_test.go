package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/tidwall/gjson"
)

// TestConsoleRefuses: the console's attacks, counted. A cross-site form
// post with a signed-in cookie stores nothing; a person key cannot set a
// secret; an unknown key gets no cookie; a revoked key's cookie signs out;
// the console is off unless configured; no page echoes a secret value.
func TestConsoleRefuses(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true })
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path, key string, form url.Values, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, r.http.URL+path, strings.NewReader(form.Encode()))
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if key != "" {
			req.AddCookie(&http.Cookie{Name: uiCookie, Value: sessionOf(t, r, key)})
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	secrets := func() int {
		refs, _ := r.store.SecretRefs(context.Background(), "tenant-a")
		return len(refs)
	}
	set := url.Values{"envName": {"production"}, "name": {"TOKEN"}, "value": {"v-from-attacker"}}

	// Cross-site posts, signed in: refused, nothing stored.
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "https://evil.example"},
	} {
		resp, _ := send("POST", "/ui/secrets", r.keyA, set, h)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site post %v: %d, want 403", h, resp.StatusCode)
		}
	}
	if n := secrets(); n != 0 {
		t.Fatalf("%d secrets stored by cross-site posts", n)
	}

	// A person key: no secrets.
	person, _, _ := r.store.CreateAPIKey(context.Background(), "tenant-a", auth.RolePerson, "u1")
	send("POST", "/ui/secrets", person, set, nil)
	if _, page := send("GET", "/ui/secrets", person, nil, nil); !strings.Contains(page, "Secrets are managed with an admin key") || secrets() != 0 {
		t.Errorf("a person key: %d secrets stored", secrets())
	}

	// The admin's own post stores it; no page shows the value.
	if resp, _ := send("POST", "/ui/secrets", r.keyA, set, map[string]string{"Sec-Fetch-Site": "same-origin"}); resp.StatusCode != http.StatusSeeOther || secrets() != 1 {
		t.Fatalf("admin set: %d, %d secrets", resp.StatusCode, secrets())
	}
	// A run whose upstream echoes the credential back: shown redacted.
	if _, page := send("POST", "/ui/tools/t.secret", r.keyA, url.Values{"action": {"run"}}, nil); !strings.Contains(page, `id="output"`) ||
		strings.Contains(page, "v-from-attacker") || !strings.Contains(page, "[REDACTED]") {
		t.Errorf("a run echoing its secret shows:\n%s", page)
	}
	for _, p := range []string{"/ui/secrets", "/ui/", "/ui/tools/t.secret"} {
		if _, page := send("GET", p, r.keyA, nil, nil); strings.Contains(page, "v-from-attacker") || strings.Contains(page, r.keyA) {
			t.Errorf("%s shows the secret or the key", p)
		}
	}

	// A message written into the URL is never shown (a link cannot make
	// the console say "paste your key at …").
	for _, q := range []string{"?error=Paste+your+key+at+evil.example", "?done=Paste+your+key+at+evil.example", "?why=Paste+your+key+at+evil.example"} {
		for _, p := range []string{"/ui/secrets", "/ui/connections", "/ui/login"} {
			if _, page := send("GET", p+q, r.keyA, nil, nil); strings.Contains(page, "evil.example") {
				t.Errorf("%s%s shows the URL's message", p, q)
			}
		}
	}

	// Sign-in with an unknown key: 401, no cookie.
	resp, _ := send("POST", "/ui/login", "", url.Values{"key": {"htk_unknown"}}, nil)
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("unknown key: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	// A good one: an HttpOnly, SameSite=Strict cookie for /ui.
	resp, _ = send("POST", "/ui/login", "", url.Values{"key": {r.keyA}}, nil)
	if c := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/ui" {
		t.Errorf("sign in: %d, cookies %+v", resp.StatusCode, c)
	}
	// No cookie, or a revoked key's: to the sign-in page.
	if resp, _ := send("GET", "/ui/", "", nil, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Errorf("no cookie: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	k, _ := r.store.KeyOf(context.Background(), person)
	r.store.RevokeAPIKey(context.Background(), "tenant-a", k.ID)
	r.srv.keys.Clear()
	if resp, _ := send("GET", "/ui/", person, nil, nil); resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "revoked") {
		t.Errorf("revoked key: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Every page is framed by nobody and runs only its own script.
	if resp, _ := send("GET", "/ui/login", "", nil, nil); resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("headers %v", resp.Header)
	}

	// A form past the body cap is refused, not read whole.
	big := url.Values{"action": {"run"}, "in.id": {strings.Repeat("x", 3<<20)}}
	before := r.upCalls.Load()
	if resp, _ := send("POST", "/ui/tools/t.echo", r.keyA, big, nil); resp.StatusCode != http.StatusBadRequest || r.upCalls.Load() != before {
		t.Errorf("a 3 MiB form: %d, %d upstream calls", resp.StatusCode, r.upCalls.Load()-before)
	}

	// Off unless configured.
	off := newRig(t)
	if resp := off.do(t, "", "GET", "/ui/", ""); resp.status != http.StatusNotFound {
		t.Errorf("console off: %d", resp.status)
	}
}

// FuzzConsoleInput: whatever a form holds, the input built from it is
// valid JSON or a clear error, never a panic.
func FuzzConsoleInput(f *testing.F) {
	f.Add(`{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"},"b":{"type":"boolean"},"e":{"enum":[1,"a",true]},"o":{"type":"object"}},"required":["n"]}`, "n", "12", "o", `{"a":1}`, "")
	f.Add(`{"properties":{"x":{}}}`, "x", "[1,2", "", "", `{"x":1}`)
	f.Add(`{"properties":{"n":{"type":"number"}}}`, "n", "1e999", "n", "NaN", "")
	f.Add(`{"properties":{"tags":{"type":"array","items":{"type":"string"}},"ids":{"type":"array","items":{"type":"integer"}}}}`, "tags", "a\n b \n\n", "ids", "1\nx", "")
	f.Fuzz(func(t *testing.T, schema, k1, v1, k2, v2, raw string) {
		fields := fieldsOf(gjson.Parse(schema))
		form := url.Values{"in." + k1: {v1}, "in." + k2: {v2}, "_json": {raw}}
		in, err := inputOf(form, fields)
		if err == nil && !json.Valid(in) {
			t.Fatalf("input %q is not JSON", in)
		}
	})
}

// TestListInputsOneALine: an array of words or numbers is a list to type
// one item a line, not JSON to write; its default shows as lines.
func TestListInputsOneALine(t *testing.T) {
	fields := fieldsOf(gjson.Parse(`{"type":"object","properties":{"labels":{"type":"array","items":{"type":"string"},"default":["bug","ui"]},
		"ids":{"type":"array","items":{"type":"integer"}},"objs":{"type":"array","items":{"type":"object"}}}}`))
	types := map[string]string{}
	for _, f := range fields {
		types[f.Name] = f.Type + "/" + f.Item
		if f.Name == "labels" && f.Value != "bug\nui" {
			t.Errorf("default shown as %q", f.Value)
		}
	}
	if types["labels"] != "list/string" || types["ids"] != "list/integer" || types["objs"] != "json/" {
		t.Errorf("types %v", types)
	}
	in, err := inputOf(url.Values{"in.labels": {"bug\r\n  good first issue \n\n"}, "in.ids": {"7\n9007199254740993"}}, fields)
	if err != nil || string(in) != `{"ids":[7,9007199254740993],"labels":["bug","good first issue"]}` {
		t.Errorf("%s %v", in, err)
	}
	if _, err := inputOf(url.Values{"in.ids": {"7\nseven"}}, fields); err == nil || !strings.Contains(err.Error(), `ids: "seven" is not a number`) {
		t.Errorf("a word in a list of integers: %v", err)
	}
}

// sessionOf signs key in to the console as the login form does, and returns
// the session its cookie holds; an unknown or revoked key gets one no
// session maps to.
func sessionOf(t *testing.T, r *rig, key string) string {
	t.Helper()
	tok, err := r.store.CreateSession(context.Background(), key, time.Hour)
	if err != nil {
		return auth.SessionPrefix + "none"
	}
	return tok
}
