package mcpauth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/mcpauth"
)

// Point 6 of issue 41: hostile authorization servers and resources, each
// attack refused, with counts of what got through (none).

// guardedConfig is a Config whose client resolves the test's names
// (internal.test → 10.0.0.5) and records every address it would dial that
// is not loopback instead of dialling it: what the SSRF guard let through.
func guardedConfig(plain ...string) (*mcpauth.Config, func() []string) {
	var mu sync.Mutex
	var internal []string
	cfg := fetch.Config{
		AllowCIDRs: testkit.Loopback,
		Resolver:   fakeResolver{"internal.test": netip.MustParseAddr("10.0.0.5")},
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			if host, _, _ := net.SplitHostPort(address); !strings.HasPrefix(host, "127.") {
				mu.Lock()
				internal = append(internal, address)
				mu.Unlock()
				return nil, errors.New("test: not dialled")
			}
			return (&net.Dialer{}).DialContext(ctx, network, address)
		},
	}
	c := &mcpauth.Config{Client: fetch.NewClient(cfg), PlainHTTP: append([]string{"127.0.0.1"}, plain...)}
	return c, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), internal...) }
}

type fakeResolver map[string]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{a}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// wantReason fails unless err is an *mcpauth.Error of reason.
func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var e *mcpauth.Error
	if !errors.As(err, &e) || e.Reason != reason {
		t.Fatalf("got %v, want an error of reason %s", err, reason)
	}
}

// TestAttackMetadataToInternalAddresses: metadata that names or redirects
// to internal addresses; requests made to them: 0.
func TestAttackMetadataToInternalAddresses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fakeAS) *mcpauth.Request
	}{
		{"authorization server at the metadata address", func(f *fakeAS) *mcpauth.Request {
			f.prm = map[string]any{"resource": f.endpoint(), "authorization_servers": []string{"http://169.254.169.254/latest"}}
			return f.challenge401("")
		}},
		{"authorization server by a name that resolves inside", func(f *fakeAS) *mcpauth.Request {
			f.prm = map[string]any{"resource": f.endpoint(), "authorization_servers": []string{"http://internal.test"}}
			return f.challenge401("")
		}},
		{"resource_metadata at a private address", func(f *fakeAS) *mcpauth.Request {
			return &mcpauth.Request{Endpoint: f.endpoint(), Status: 401, WWWAuthenticate: []string{`Bearer resource_metadata="http://10.0.0.5/.well-known/oauth-protected-resource"`}}
		}},
		{"metadata redirecting inside", func(f *fakeAS) *mcpauth.Request {
			f.metadataHook = func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://internal.test/.well-known/oauth-protected-resource/mcp", http.StatusFound)
			}
			return f.challenge401("")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			cfg, internal := guardedConfig("169.254.169.254", "internal.test", "10.0.0.5")
			flow, _ := testFlow(t, cfg)
			_, err := flow.Authorize(context.Background(), tc.setup(f))
			var denied *fetch.DeniedError
			if !errors.As(err, &denied) {
				t.Fatalf("got %v, want the guard's refusal", err)
			}
			if got := internal(); len(got) != 0 {
				t.Fatalf("requests made to internal addresses: %d (%v), want 0", len(got), got)
			}
			if n := f.count("/authorize") + f.count("/token") + f.count("/register"); n != 0 {
				t.Fatalf("%d requests to the authorization endpoints, want 0", n)
			}
		})
	}
}

// TestAttackForeignServerOrResource: an authorization server whose
// metadata is for another issuer than the resource names, and a resource
// metadata for another origin; authorization, registration and token
// requests: 0.
func TestAttackForeignServerOrResource(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fakeAS)
	}{
		{"issuer differs from the one the resource names", func(f *fakeAS) {
			asm := f.defaultASM()
			asm["issuer"] = "https://evil.example"
			f.asm = asm
		}},
		{"resource on another origin", func(f *fakeAS) {
			f.prm = map[string]any{"resource": "https://evil.example.com/mcp", "authorization_servers": []string{f.srv.URL}}
		}},
		{"resource on another path", func(f *fakeAS) {
			f.prm = map[string]any{"resource": f.srv.URL + "/other", "authorization_servers": []string{f.srv.URL}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			tc.setup(f)
			flow, store := testFlow(t, testConfig())
			_, err := flow.Authorize(context.Background(), f.challenge401(""))
			wantReason(t, err, mcpauth.ReasonForeignMetadata)
			if n := f.count("/authorize") + f.count("/token") + f.count("/register"); n != 0 {
				t.Fatalf("%d requests to the authorization endpoints, want 0", n)
			}
			if c, _ := store.Registration(context.Background(), f.srv.URL, flow.Opener.RedirectURI()); c != nil {
				t.Fatal("a registration was kept")
			}
		})
	}
}

// TestAttackPlainHTTPIssuer: an http issuer (its host not one the operator
// lets use http) is refused before anything is asked of it.
func TestAttackPlainHTTPIssuer(t *testing.T) {
	f := newFakeAS(t)
	// The same server under a name PlainHTTP does not list.
	other := strings.Replace(f.srv.URL, "127.0.0.1", "localhost", 1)
	f.prm = map[string]any{"resource": f.endpoint(), "authorization_servers": []string{other}}
	flow, _ := testFlow(t, testConfig())
	_, err := flow.Authorize(context.Background(), f.challenge401(""))
	wantReason(t, err, mcpauth.ReasonInsecureURL)
	if n := f.count("/.well-known/oauth-authorization-server") + f.count("/.well-known/openid-configuration") + f.count("/authorize"); n != 0 {
		t.Fatalf("%d requests to the http issuer, want 0", n)
	}
}

// TestAttackHugeMetadata: a metadata document past the cap is refused
// while being read; the server could not write the whole of it.
func TestAttackHugeMetadata(t *testing.T) {
	for _, declared := range []bool{true, false} {
		name := "chunked"
		if declared {
			name = "with Content-Length"
		}
		t.Run(name, func(t *testing.T) {
			const total = 256 << 20
			f := newFakeAS(t)
			var mu sync.Mutex
			written := 0
			f.metadataHook = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if declared {
					w.Header().Set("Content-Length", "268435456")
				}
				chunk := []byte(`{"resource":"` + strings.Repeat("a", 64<<10-14))
				for n := 0; n < total; n += len(chunk) {
					k, err := w.Write(chunk)
					mu.Lock()
					written += k
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}
			cfg := testConfig()
			cfg.MaxDocumentBytes = 32 << 10
			flow, _ := testFlow(t, cfg)
			_, err := flow.Authorize(context.Background(), f.challenge401(""))
			wantReason(t, err, mcpauth.ReasonBadMetadata)
			if !errors.Is(err, fetch.ErrTooLarge) {
				t.Fatalf("got %v, want fetch.ErrTooLarge under it", err)
			}
			f.srv.CloseClientConnections()
			mu.Lock()
			defer mu.Unlock()
			if written >= total {
				t.Fatalf("the server wrote all %d bytes: the client read past its cap", written)
			}
			t.Logf("the server got %d of %d bytes out before the client hung up (socket buffers included)", written, total)
		})
	}
}

// TestAttackSlowMetadata: a metadata server that never answers is given
// up at the one deadline; nothing further is asked.
func TestAttackSlowMetadata(t *testing.T) {
	f := newFakeAS(t)
	f.metadataHook = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.Write([]byte(`{"resource":`))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // trickles nothing more until the client leaves
	}
	cfg := testConfig()
	cfg.Timeout = 300 * time.Millisecond
	flow, _ := testFlow(t, cfg)
	_, err := flow.Authorize(context.Background(), f.challenge401(""))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if n := f.count("/.well-known/oauth-protected-resource/mcp"); n != 1 {
		t.Fatalf("the slow document was asked %d times, want 1 (no retry past the deadline)", n)
	}
	if n := f.count("/authorize") + f.count("/register") + f.count("/token"); n != 0 {
		t.Fatalf("%d requests past the slow metadata, want 0", n)
	}
}

// TestAttackRegistrationForAnotherClient: a registration endpoint that
// answers with another client's identity or secret; registrations
// accepted: 0, and no code or secret is sent anywhere.
func TestAttackRegistrationForAnotherClient(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(body map[string]any) any
	}{
		{"another client's redirect URIs and secret", func(map[string]any) any {
			return map[string]any{"client_id": "victim", "client_secret": "victim-secret", "redirect_uris": []string{"https://victim.example/cb"}, "token_endpoint_auth_method": "client_secret_basic"}
		}},
		{"no client_id", func(b map[string]any) any {
			return map[string]any{"client_secret": "s", "redirect_uris": b["redirect_uris"]}
		}},
		{"a secret method without a secret", func(b map[string]any) any {
			return map[string]any{"client_id": "c", "redirect_uris": b["redirect_uris"], "token_endpoint_auth_method": "client_secret_post"}
		}},
		{"a method httptools does not speak", func(b map[string]any) any {
			return map[string]any{"client_id": "c", "redirect_uris": b["redirect_uris"], "token_endpoint_auth_method": "private_key_jwt"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			f.register = func(b map[string]any) (int, any) { return 201, tc.reply(b) }
			flow, store := testFlow(t, testConfig())
			_, err := flow.Authorize(context.Background(), f.challenge401(""))
			wantReason(t, err, mcpauth.ReasonRegistrationRefused)
			if c, _ := store.Registration(context.Background(), f.srv.URL, flow.Opener.RedirectURI()); c != nil {
				t.Fatalf("registrations accepted: 1 (%s), want 0", c.ID)
			}
			if n := f.count("/authorize") + f.count("/token"); n != 0 {
				t.Fatalf("%d authorization or token requests, want 0", n)
			}
		})
	}
}

// TestAttackTokenForAnotherResource: a token whose response or JWT says it
// is for another resource is refused and never held.
func TestAttackTokenForAnotherResource(t *testing.T) {
	jwt := func(aud any) string {
		p := `{"aud":"` + aud.(string) + `"}`
		return "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString([]byte(p)) + ".sig"
	}
	for _, tc := range []struct {
		name  string
		reply map[string]any
		ok    bool
	}{
		{"resource member", map[string]any{"resource": "https://other.example/mcp"}, false},
		{"aud member", map[string]any{"aud": []any{"https://other.example/mcp"}}, false},
		{"JWT aud", map[string]any{"access_token": jwt("https://other.example/mcp")}, false},
		{"JWT aud of the resource", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAS(t)
			f.tokenReply = tc.reply
			if tc.ok {
				f.tokenReply = map[string]any{"access_token": jwt(f.endpoint())}
			}
			flow, _ := testFlow(t, testConfig())
			tok, err := flow.Authorize(context.Background(), f.challenge401(""))
			if tc.ok {
				if err != nil || tok == "" {
					t.Fatalf("token %q, %v", tok, err)
				}
				return
			}
			wantReason(t, err, mcpauth.ReasonTokenRefused)
			held, _ := flow.Token(context.Background(), &mcpauth.Request{Endpoint: f.endpoint()})
			if tok != "" || held != "" {
				t.Fatalf("tokens handed out for another resource: %q %q, want none", tok, held)
			}
		})
	}
}

// TestAttackRedirectToPlainHTTP: metadata that redirects to a plain-http
// host the operator did not name is refused at the hop; requests that
// reach it: 0.
func TestAttackRedirectToPlainHTTP(t *testing.T) {
	target := newFakeAS(t)
	f := newFakeAS(t)
	f.metadataHook = func(w http.ResponseWriter, r *http.Request) {
		to := strings.Replace(target.srv.URL, "127.0.0.1", "localhost", 1) + r.URL.Path
		http.Redirect(w, r, to, http.StatusFound)
	}
	flow, _ := testFlow(t, testConfig())
	_, err := flow.Authorize(context.Background(), f.challenge401(""))
	wantReason(t, err, mcpauth.ReasonInsecureURL)
	if n := target.count("/.well-known/oauth-protected-resource/mcp"); n != 0 {
		t.Fatalf("%d requests reached the plain-http host, want 0", n)
	}
}
