package connections_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/synth"
)

// A company connection whose access token has expired is refreshed once,
// the new tokens stored, and the new access token handed out.
func ExampleManager_AccessToken() {
	provider := toolstest.NewOAuthProvider() // a fake OAuth server on 127.0.0.1
	defer provider.Close()
	apps, _ := connections.ParseApps([]byte(fmt.Sprintf(`{"apps":{"google":{"authURL":%q,"tokenURL":%q,
	  "clientID":"client-1","clientSecretEnv":"GOOGLE_SECRET","authStyle":"params",
	  "permissions":{"gmail.send":["https://mail/send"]}}}}`, provider.AuthURL(), provider.TokenURL())),
		func(string) string { return "secret-1" })

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	keys, _ := sqlstore.NewKeyring(make([]byte, 32))
	store, err := sqlstore.Open(context.Background(), "sqlite:"+filepath.Join(dir, "store.db"), keys, sqlstore.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	access, refresh := provider.Issue(time.Hour)
	store.SaveConnection(context.Background(), &connections.Record{Tenant: "acme", App: "google", Owner: connections.OwnerCompany,
		Permissions: []string{"gmail.send"}, AccessToken: access, RefreshToken: refresh,
		Expiry: time.Now().Add(-time.Minute)}) // expired as far as we know

	m := &connections.Manager{Connections: store, States: store, Apps: apps}
	tok, err := m.AccessToken(context.Background(), synth.ConnectionRequest{
		Name: "gmail", ToolID: "gmail.send", Tenant: "acme",
		Need: synth.ConnectionNeed{App: "google", Permissions: []string{"gmail.send"}, As: synth.AsCompany},
	})
	fmt.Println(err, tok != access, provider.ValidAccess(tok), provider.RefreshGrants.Load())

	// Asked again, the fresh token is served without another grant.
	again, _ := m.AccessToken(context.Background(), synth.ConnectionRequest{
		Name: "gmail", ToolID: "gmail.send", Tenant: "acme",
		Need: synth.ConnectionNeed{App: "google", Permissions: []string{"gmail.send"}, As: synth.AsCompany},
	})
	fmt.Println(again == tok, provider.RefreshGrants.Load())
	// Output:
	// <nil> true true 1
	// true 1
}
