package mcpauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/mcpauth"
)

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want         mcpauth.Challenge
	}{
		{"resource metadata and scope", `Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="mcp:basic mcp:read"`,
			mcpauth.Challenge{ResourceMetadata: "https://a.example/.well-known/oauth-protected-resource/mcp", Scopes: []string{"mcp:basic", "mcp:read"}}},
		{"step-up", `Bearer error="insufficient_scope", scope="mcp:admin", resource_metadata="https://a.example/m", error_description="more"`,
			mcpauth.Challenge{ResourceMetadata: "https://a.example/m", Scopes: []string{"mcp:admin"}, Error: "insufficient_scope"}},
		{"Bearer after Basic", `Basic realm="x", Bearer scope="a"`, mcpauth.Challenge{Scopes: []string{"a"}}},
		{"no Bearer", `Basic realm="x"`, mcpauth.Challenge{}},
		{"bare Bearer", `Bearer`, mcpauth.Challenge{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mcpauth.ParseChallenge([]string{tc.header})
			if err != nil {
				t.Fatal(err)
			}
			if got.ResourceMetadata != tc.want.ResourceMetadata || got.Error != tc.want.Error || !slices.Equal(got.Scopes, tc.want.Scopes) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := mcpauth.ParseChallenge([]string{"Bearer scope=" + strings.Repeat("a", 9000)}); err == nil {
		t.Fatal("a 9000-byte challenge was read")
	}
}

// FuzzParseChallenge: no input panics, and what is read is within the
// input.
func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{`Bearer resource_metadata="https://a/b", scope="x y"`, `Bearer error="insufficient_scope"`, `Basic realm="a", Bearer scope=x`, `Bearer scope="\"`, `"`, `,,,`, `Bearer a=`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := mcpauth.ParseChallenge([]string{s})
		if err != nil {
			return
		}
		if len(c.ResourceMetadata) > len(s) || len(c.Error) > len(s) || len(strings.Join(c.Scopes, " ")) > len(s) {
			t.Fatalf("read more than the input: %+v", c)
		}
	})
}

// TestDiscoverFollowsTheSpecsOrder: the conformance suite's four layouts;
// the URLs asked, in order, stop at the first that answers.
func TestDiscoverFollowsTheSpecsOrder(t *testing.T) {
	for _, tc := range []struct {
		name             string
		prmPath, asmPath string
		inHeader         bool
		issuerPath       string
		wantHits         map[string]int
	}{
		{"default: header, then RFC 8414 at the root", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", true, "",
			map[string]int{"/.well-known/oauth-protected-resource/mcp": 1, "/.well-known/oauth-protected-resource": 0, "/.well-known/oauth-authorization-server": 1}},
		{"path-based PRM, OpenID discovery", "/.well-known/oauth-protected-resource/mcp", "/.well-known/openid-configuration", false, "",
			map[string]int{"/.well-known/oauth-protected-resource/mcp": 1, "/.well-known/oauth-protected-resource": 0, "/.well-known/oauth-authorization-server": 1, "/.well-known/openid-configuration": 1}},
		{"root PRM, RFC 8414 path insertion", "/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server/tenant1", false, "/tenant1",
			map[string]int{"/.well-known/oauth-protected-resource/mcp": 1, "/.well-known/oauth-protected-resource": 1, "/.well-known/oauth-authorization-server/tenant1": 1, "/.well-known/oauth-authorization-server": 0}},
		{"custom PRM, OpenID path appending", "/custom/metadata.json", "/tenant1/.well-known/openid-configuration", true, "/tenant1",
			map[string]int{"/custom/metadata.json": 1, "/.well-known/oauth-protected-resource/mcp": 0, "/.well-known/oauth-authorization-server/tenant1": 1, "/.well-known/openid-configuration/tenant1": 1, "/tenant1/.well-known/openid-configuration": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			f.prmPath, f.asmPath = tc.prmPath, tc.asmPath
			resource := f.endpoint()
			if tc.prmPath == "/.well-known/oauth-protected-resource" {
				resource = f.srv.URL
			}
			f.prm = map[string]any{"resource": resource, "authorization_servers": []string{f.srv.URL + tc.issuerPath}}
			asm := f.defaultASM()
			asm["issuer"] = f.srv.URL + tc.issuerPath
			f.asm = asm
			var ch mcpauth.Challenge
			if tc.inHeader {
				ch.ResourceMetadata = f.srv.URL + tc.prmPath
			}
			d, err := testConfig().Discover(context.Background(), mcpauth.Egress{}, f.endpoint(), ch)
			if err != nil {
				t.Fatal(err)
			}
			if d.Issuer != f.srv.URL+tc.issuerPath || d.Resource != resource {
				t.Fatalf("issuer %q resource %q", d.Issuer, d.Resource)
			}
			for path, n := range tc.wantHits {
				if got := f.count(path); got != n {
					t.Errorf("%s asked %d times, want %d", path, got, n)
				}
			}
		})
	}
}

// TestFlowAuthorizesOnce: a 401 becomes one registration, one
// authorization request (PKCE S256, the resource, the challenge's scope,
// the state) and one token request; the token is then held.
func TestFlowAuthorizesOnce(t *testing.T) {
	f := newFakeAS(t)
	flow, store := testFlow(t, testConfig())
	ctx := context.Background()
	tok, err := flow.Authorize(ctx, f.challenge401("mcp:basic"))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "tok-authorization_code" {
		t.Fatalf("token %q", tok)
	}
	if r, a, k := f.count("/register"), f.count("/authorize"), f.count("/token"); r != 1 || a != 1 || k != 1 {
		t.Fatalf("registrations %d, authorization requests %d, token requests %d; want 1 each", r, a, k)
	}
	q := f.authz
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != f.endpoint() || q.Get("scope") != "mcp:basic" || q.Get("client_id") != "dyn-client" || q.Get("state") == "" {
		t.Fatalf("authorization request %v", q)
	}
	if f.token.Get("resource") != f.endpoint() || f.token.Get("client_id") != "dyn-client" || f.tokenHdr != "" || f.token.Get("client_secret") != "" {
		t.Fatalf("token request %v (Authorization %q)", f.token, f.tokenHdr)
	}
	if c, _ := store.Registration(ctx, f.srv.URL, flow.Opener.RedirectURI()); c == nil || c.How != mcpauth.HowDynamic {
		t.Fatalf("registration kept: %+v", c)
	}
	again, err := flow.Token(ctx, &mcpauth.Request{Endpoint: f.endpoint()})
	if err != nil || again != tok {
		t.Fatalf("held token %q, %v", again, err)
	}
	if n := f.count("/token") + f.count("/authorize"); n != 2 {
		t.Fatalf("Token made requests: %d in all", n)
	}
}

// TestFlowStepUpAsksTheUnion: a 403 insufficient_scope asks the new scopes
// with those asked before, on the registration already made.
func TestFlowStepUpAsksTheUnion(t *testing.T) {
	f := newFakeAS(t)
	flow, _ := testFlow(t, testConfig())
	ctx := context.Background()
	if _, err := flow.Authorize(ctx, f.challenge401("mcp:basic")); err != nil {
		t.Fatal(err)
	}
	up := f.challenge401("")
	up.Status = 403
	up.WWWAuthenticate = []string{`Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="` + f.srv.URL + `/.well-known/oauth-protected-resource/mcp"`}
	if _, err := flow.Authorize(ctx, up); err != nil {
		t.Fatal(err)
	}
	if got := f.authz.Get("scope"); got != "mcp:basic mcp:write" {
		t.Fatalf("step-up asked %q, want the union", got)
	}
	if r, a := f.count("/register"), f.count("/authorize"); r != 1 || a != 2 {
		t.Fatalf("registrations %d (want 1), authorization requests %d (want 2)", r, a)
	}
}

// TestScopesFromMetadataOrNone: no scope in the challenge asks the
// resource's scopes_supported; none anywhere omits the parameter.
func TestScopesFromMetadataOrNone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		supported []string
		want      string
		present   bool
	}{
		{"scopes_supported", []string{"a", "b"}, "a b", true},
		{"omitted", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			prm := map[string]any{"resource": f.endpoint(), "authorization_servers": []string{f.srv.URL}}
			if tc.supported != nil {
				prm["scopes_supported"] = tc.supported
			}
			f.prm = prm
			flow, _ := testFlow(t, testConfig())
			if _, err := flow.Authorize(context.Background(), f.challenge401("")); err != nil {
				t.Fatal(err)
			}
			if _, ok := f.authz["scope"]; ok != tc.present || f.authz.Get("scope") != tc.want {
				t.Fatalf("scope %v (present %v), want %q", f.authz["scope"], ok, tc.want)
			}
		})
	}
}

// TestRegistrarOrder: pre-registered, then the metadata document, then
// dynamic registration, then an error naming what to register.
func TestRegistrarOrder(t *testing.T) {
	const doc = "https://httptools.example/oauth/client.json"
	apps, err := connections.ParseApps([]byte(`{"apps":{"vendor":{"authURL":"https://as.example/authorize","tokenURL":"https://as.example/token","clientID":"app-1","clientSecretEnv":"S","authStyle":"header","permissions":{"all":["x"]}}}}`),
		func(string) string { return "app-secret" })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		pre               mcpauth.PreRegistered
		cimd, dcr         bool
		wantHow, wantID   string
		wantRegistrations int
		wantReason        string
	}{
		{"apps.json wins", mcpauth.Apps(apps), true, true, mcpauth.HowPreRegistered, "app-1", 0, ""},
		{"static client", mcpauth.StaticClient{ID: "cli-1", Secret: "s"}, true, true, mcpauth.HowPreRegistered, "cli-1", 0, ""},
		{"metadata document", nil, true, true, mcpauth.HowMetadataDocument, doc, 0, ""},
		{"dynamic", nil, false, true, mcpauth.HowDynamic, "dyn-client", 1, ""},
		{"nothing", nil, false, false, "", "", 0, mcpauth.ReasonUnregistered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			asm := f.defaultASM()
			asm["token_endpoint"] = "https://as.example/token" // the app's
			asm["client_id_metadata_document_supported"] = tc.cimd
			if !tc.dcr {
				delete(asm, "registration_endpoint")
			}
			f.asm = asm
			cfg := testConfig()
			cfg.PlainHTTP = append(cfg.PlainHTTP, "as.example")
			d, err := cfg.Discover(context.Background(), mcpauth.Egress{}, f.endpoint(), mcpauth.Challenge{})
			if err != nil {
				t.Fatal(err)
			}
			r := &mcpauth.Registrar{Config: cfg, PreRegistered: tc.pre, MetadataDocumentURL: doc, Store: &mcpauth.MemoryStore{}}
			c, err := r.Register(context.Background(), mcpauth.Egress{}, d, "http://127.0.0.1:1/callback")
			if tc.wantReason != "" {
				var e *mcpauth.Error
				if !errors.As(err, &e) || e.Reason != tc.wantReason || !strings.Contains(err.Error(), "apps.json") {
					t.Fatalf("got %v, want reason %s naming apps.json", err, tc.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.How != tc.wantHow || c.ID != tc.wantID || f.count("/register") != tc.wantRegistrations {
				t.Fatalf("client %+v, %d registrations", c, f.count("/register"))
			}
		})
	}
}

// TestTokenEndpointAuthMethods: the method the server takes, and the
// secret sent accordingly.
func TestTokenEndpointAuthMethods(t *testing.T) {
	for _, tc := range []struct{ method, wantHeader, wantFormSecret string }{
		{mcpauth.AuthBasic, "Basic ", ""},
		{mcpauth.AuthPost, "", "sec"},
		{mcpauth.AuthNone, "", ""},
	} {
		t.Run(tc.method, func(t *testing.T) {
			f := newFakeAS(t)
			asm := f.defaultASM()
			asm["token_endpoint_auth_methods_supported"] = []string{tc.method}
			f.asm = asm
			f.register = func(body map[string]any) (int, any) {
				if body["token_endpoint_auth_method"] != tc.method {
					return 400, map[string]any{"error": "invalid_client_metadata"}
				}
				reply := map[string]any{"client_id": "c1", "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": tc.method}
				if tc.method != mcpauth.AuthNone {
					reply["client_secret"] = "sec"
				}
				return 201, reply
			}
			f.tokenReply = map[string]any{"expires_in": 1} // expired at once: Token refreshes
			flow, _ := testFlow(t, testConfig())
			if _, err := flow.Authorize(context.Background(), f.challenge401("")); err != nil {
				t.Fatal(err)
			}
			// The code's exchange, then the refresh, authenticate alike.
			for _, step := range []string{"authorization_code", "refresh_token"} {
				if step == "refresh_token" {
					if tok, err := flow.Token(context.Background(), &mcpauth.Request{Endpoint: f.endpoint()}); err != nil || tok != "tok-refresh_token" {
						t.Fatalf("refresh: %q, %v", tok, err)
					}
				}
				if f.token.Get("grant_type") != step || !strings.HasPrefix(f.tokenHdr, tc.wantHeader) || (tc.wantHeader == "" && f.tokenHdr != "") || f.token.Get("client_secret") != tc.wantFormSecret {
					t.Fatalf("%s: Authorization %q, client_secret %q", step, f.tokenHdr, f.token.Get("client_secret"))
				}
			}
		})
	}
}

// TestIssuerInTheAnswer (RFC 9207): an advertised iss must come and be the
// issuer; a wrong one is refused unadvertised too. No token is asked.
func TestIssuerInTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		advertised bool
		iss        func(f *fakeAS) string
		ok         bool
	}{
		{"advertised and right", true, func(f *fakeAS) string { return f.srv.URL }, true},
		{"advertised and missing", true, func(*fakeAS) string { return "" }, false},
		{"wrong", false, func(*fakeAS) string { return "https://mix-up.example" }, false},
		{"unadvertised and absent", false, func(*fakeAS) string { return "" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			asm := f.defaultASM()
			asm["authorization_response_iss_parameter_supported"] = tc.advertised
			f.asm = asm
			f.authzReply = func(q url.Values) url.Values {
				back := url.Values{"code": {"c"}, "state": q["state"]}
				if iss := tc.iss(f); iss != "" {
					back["iss"] = []string{iss}
				}
				return back
			}
			flow, _ := testFlow(t, testConfig())
			_, err := flow.Authorize(context.Background(), f.challenge401(""))
			if tc.ok != (err == nil) {
				t.Fatalf("err %v", err)
			}
			var e *mcpauth.Error
			if !tc.ok && (!errors.As(err, &e) || e.Reason != mcpauth.ReasonAuthorizationDenied || f.count("/token") != 0) {
				t.Fatalf("err %v, %d token requests", err, f.count("/token"))
			}
		})
	}
}

// TestClientMetadataDocument: the handler serves the document whose
// client_id is its URL.
func TestClientMetadataDocument(t *testing.T) {
	doc := mcpauth.ClientMetadataDocument("https://h.example/oauth/client.json", "", []string{"https://h.example/v1/connections/callback"})
	srv := httptest.NewServer(mcpauth.MetadataHandler(doc))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil || got["client_id"] != "https://h.example/oauth/client.json" || got["token_endpoint_auth_method"] != "none" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %v", b, err)
	}
	if r, _ := http.Post(srv.URL, "application/json", nil); r.StatusCode != 405 {
		t.Fatalf("POST answered %d", r.StatusCode)
	}
}

// TestFlowReadsPastAMalformedChallenge: a 401 whose WWW-Authenticate cannot
// be read is still authorized, through the well-known URLs (1 request
// there, 1 token request).
func TestFlowReadsPastAMalformedChallenge(t *testing.T) {
	f := newFakeAS(t)
	flow, _ := testFlow(t, testConfig())
	r := &mcpauth.Request{Endpoint: f.endpoint(), Status: 401, WWWAuthenticate: []string{`"Bearer`}}
	if _, err := flow.Authorize(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if p, k := f.count("/.well-known/oauth-protected-resource/mcp"), f.count("/token"); p != 1 || k != 1 {
		t.Fatalf("%d requests of the well-known metadata, %d token requests; want 1 and 1", p, k)
	}
}
