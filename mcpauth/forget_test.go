package mcpauth_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/httptools/httptools/mcpauth"
)

// TestForgottenRegistrationIsMadeAgain: an authorization server drops the
// client httptools registered there dynamically (a reset, an expiry): its
// token endpoint answers invalid_client. The refresh fails, the kept
// registration is forgotten, and the next flow registers again: 2
// registrations, the store holding the second client, whose refresh then
// works. A registration made meanwhile by another replica (another client
// id) is not forgotten by the first one's failure.
func TestForgottenRegistrationIsMadeAgain(t *testing.T) {
	f := newFakeAS(t)
	var mu sync.Mutex
	known := map[string]bool{}
	n := 0
	f.register = func(body map[string]any) (int, any) {
		mu.Lock()
		defer mu.Unlock()
		n++
		id := fmt.Sprintf("dyn-%d", n)
		known[id] = true
		return 201, map[string]any{"client_id": id, "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "none"}
	}
	f.knownClient = func(id string) bool { mu.Lock(); defer mu.Unlock(); return known[id] }
	cfg := testConfig()
	store := &mcpauth.MemoryStore{}
	const redirect = "http://127.0.0.1:8080/v1/oauth/callback"
	c := &mcpauth.Connector{Config: cfg, Registrar: &mcpauth.Registrar{Config: cfg, Store: store}, RedirectURI: redirect}
	ctx := context.Background()
	app := "mcp:" + f.endpoint()

	p, err := c.Provider(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refresh(ctx, "refresh-1"); err != nil {
		t.Fatalf("refresh with the registered client: %v", err)
	}
	mu.Lock()
	delete(known, "dyn-1") // the server forgets it
	mu.Unlock()
	if _, err := p.Refresh(ctx, "refresh-1"); err == nil {
		t.Fatal("a refresh by a client the server forgot succeeded")
	}
	issuer := f.srv.URL
	if kept, _ := store.Registration(ctx, issuer, redirect); kept != nil {
		t.Fatalf("the forgotten client is still kept: %+v", kept)
	}
	p2, err := c.Provider(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Refresh(ctx, "refresh-1"); err != nil {
		t.Fatalf("refresh with the new registration: %v", err)
	}
	kept, _ := store.Registration(ctx, issuer, redirect)
	if f.count("/register") != 2 || kept == nil || kept.ID != "dyn-2" {
		t.Errorf("registrations %d (want 2), kept %+v (want dyn-2)", f.count("/register"), kept)
	}
	// The first provider, still held by a flow, fails again: the newer
	// registration stays.
	mu.Lock()
	delete(known, "dyn-1")
	mu.Unlock()
	p.Refresh(ctx, "refresh-1")
	if kept, _ := store.Registration(ctx, issuer, redirect); kept == nil || kept.ID != "dyn-2" {
		t.Errorf("an old client's failure dropped the newer registration: %+v", kept)
	}
}
