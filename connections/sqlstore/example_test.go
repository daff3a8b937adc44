package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/synth"
)

// Open the embedded store (or "postgres://…" for several replicas): tokens
// and secrets are sealed with the keyring, each bound to its row.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	keyring, _ := sqlstore.NewKeyring(make([]byte, 32)) // HTTPTOOLS_MASTER_KEY in production
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(dir, "httptools.db"), keyring, sqlstore.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	store.SaveConnection(ctx, &connections.Record{Tenant: "acme", App: "github", Owner: connections.OwnerPerson("u_1"), AccessToken: "gho_example"})
	rec, _ := store.Connection(ctx, "acme", "github", connections.OwnerPerson("u_1"))
	fmt.Println(rec.Status, rec.AccessToken, rec.Version)
	store.PutSecret(ctx, "acme", synth.SecretRef{EnvName: "production", Name: "TOKEN"}, "v1")
	refs, _ := store.SecretRefs(ctx, "acme")
	fmt.Println(refs)
	_, err = store.Connection(ctx, "other-tenant", "github", connections.OwnerPerson("u_1"))
	fmt.Println(err)
	// Output:
	// active gho_example 1
	// [production/TOKEN]
	// not found
}
