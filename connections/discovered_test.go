package connections_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/synth"
	"golang.org/x/oauth2"
)

// discoveredProvider is the Provider of a discovered app whose
// authorization server is the test's OAuth provider; it counts the
// lookups (Manager.Discover) and the refreshes asked.
type discoveredProvider struct {
	cfg       oauth2.Config
	refreshes atomic.Int64
}

func (p *discoveredProvider) AuthCodeURL(state, verifier string, scopes []string) string {
	return p.cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))
}

func (p *discoveredProvider) Exchange(ctx context.Context, code, verifier, iss string) (*oauth2.Token, error) {
	return p.cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
}

func (p *discoveredProvider) Refresh(ctx context.Context, refreshToken string) (*oauth2.Token, error) {
	p.refreshes.Add(1)
	return p.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
}

func (p *discoveredProvider) Scopes() []string { return p.cfg.Scopes }

// TestDiscoveredAppRefreshedOnceAcrossReplicas: the connection of a remote
// MCP server's own authorization (a discovered app, mcp: and its URL, not
// in apps.json) is refreshed as an apps.json app's is: two replicas' managers
// on one database, 100 concurrent calls on its expired company connection,
// 1 refresh grant at the authorization server, 1 refresh asked of the
// provider, 0 failed calls, and every call sent the one new token.
func TestDiscoveredAppRefreshedOnceAcrossReplicas(t *testing.T) {
	const app = "mcp:https://mcp.example.test/mcp"
	eachSharedStore(t, func(t *testing.T, a, b *sqlstore.SQLStore) {
		e := newEnv(t)
		p := &discoveredProvider{cfg: oauth2.Config{ClientID: "client-1", ClientSecret: "secret-1", Scopes: []string{"tools.read"},
			Endpoint: oauth2.Endpoint{AuthURL: e.provider.AuthURL(), TokenURL: e.provider.TokenURL(), AuthStyle: oauth2.AuthStyleInParams}}}
		var lookups atomic.Int64
		discover := func(ctx context.Context, id string) (Provider, error) {
			lookups.Add(1)
			if id != app {
				t.Errorf("discovered %q, want %q", id, app)
			}
			return p, nil
		}
		access, refresh := e.provider.Issue(time.Hour)
		old, err := a.SaveConnection(context.Background(), &Record{Tenant: "t1", App: app, Owner: OwnerCompany,
			Permissions: []string{"tools.read"}, Scopes: []string{"tools.read"},
			AccessToken: access, RefreshToken: refresh, Expiry: e.clock.Now().Add(-time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		ms := []*Manager{e.manager(a), e.manager(b)}
		for _, m := range ms {
			m.Discover = discover
		}
		tool := e.discoveredTool(t, app)
		var wg sync.WaitGroup
		tokens, errs := make([]string, 100), make([]error, 100)
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tokens[i], errs[i] = call(tool, ms[i%2], "t1", "")
			}()
		}
		wg.Wait()
		stored, _ := a.Connection(context.Background(), "t1", app, OwnerCompany)
		failed := 0
		for i := range 100 {
			if errs[i] != nil || tokens[i] != stored.AccessToken || tokens[i] == old.AccessToken {
				failed++
				if failed < 3 {
					t.Errorf("call %d: token %q, err %v; want the new token %q", i, tokens[i], errs[i], stored.AccessToken)
				}
			}
		}
		if g, r := e.provider.RefreshGrants.Load(), p.refreshes.Load(); g != 1 || r != 1 || failed != 0 {
			t.Errorf("%d refresh grants, %d refreshes asked of the provider, %d failed calls; want 1, 1 and 0", g, r, failed)
		}
		t.Logf("1 refresh for 100 calls over 2 replicas; %d provider lookups", lookups.Load())
	})
}

// discoveredTool is a tool that calls the test's API with the company's
// connection of the discovered app.
func (e *env) discoveredTool(t *testing.T, app string) *synth.Tool {
	tool, err := e.loader.Load([]byte(`{"id":"vendor.read","description":"d","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},
		"needsSpec":{"connections":{"vendor":{"app":"` + app + `","permissions":["tools.read"],"as":"company"}}},
		"spec":{"kind":"http","method":"POST","urlTemplate":"` + e.api.URL + `/read","authorization":{"kind":"connection","connection":"vendor"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}
