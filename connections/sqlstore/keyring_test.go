package sqlstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/connections"
)

func TestKeyringRotationAndBinding(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	oldRing, _ := NewKeyring(oldKey)
	sealed := oldRing.Seal([]byte("tok"), []byte("connection/c1/access"))
	rotated, err := NewKeyring(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.KeyID() == oldRing.KeyID() {
		t.Fatal("a new key must have a new id")
	}
	if got, err := rotated.Open(oldRing.KeyID(), sealed, []byte("connection/c1/access")); err != nil || string(got) != "tok" {
		t.Errorf("the old key must still open old rows: %q %v", got, err)
	}
	if _, err := rotated.Open(oldRing.KeyID(), sealed, []byte("connection/c2/access")); err == nil {
		t.Error("a value moved to another row must not open")
	}
	newOnly, _ := NewKeyring(newKey)
	if _, err := newOnly.Open(oldRing.KeyID(), sealed, []byte("connection/c1/access")); err == nil || !strings.Contains(err.Error(), MasterKeyOldEnv) {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := NewKeyring([]byte("short")); err == nil {
		t.Error("a 5-byte key must be refused")
	}
}

// TestStoreRotatesKeys: rows written under the old key read after rotation,
// and are re-sealed under the new key when written again.
func TestStoreRotatesKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rot.db")
	ctx := context.Background()
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	k1, _ := NewKeyring(oldKey)
	s1, err := Open(ctx, "sqlite:"+path, k1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s1.SaveConnection(ctx, &connections.Record{Tenant: "t", App: "a", Owner: connections.OwnerCompany, AccessToken: "at-1", RefreshToken: "rt-1", Expiry: time.Now().Add(time.Hour)})
	s1.Close()
	k2, _ := NewKeyring(newKey, oldKey)
	s2, err := Open(ctx, "sqlite:"+path, k2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	rec, err := s2.Connection(ctx, "t", "a", connections.OwnerCompany)
	if err != nil || rec.AccessToken != "at-1" {
		t.Fatalf("after rotation: %+v %v", rec, err)
	}
	s2.SaveConnection(ctx, rec)
	var keyID string
	s2.DB().QueryRow(`SELECT key_id FROM connections`).Scan(&keyID)
	if keyID != k2.KeyID() {
		t.Errorf("row key %s, want the new key %s", keyID, k2.KeyID())
	}
}

func TestLoadKeyring(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sub", "httptools.key")
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	k1, err := LoadKeyring(func(string) string { return "" }, file, log)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	if !strings.Contains(logs.String(), "generated a local master key") || !strings.Contains(logs.String(), MasterKeyEnv) {
		t.Errorf("no warning: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("making the key file is a warning: %s", logs.String())
	}
	logs.Reset()
	k2, _ := LoadKeyring(func(string) string { return "" }, file, log)
	if k1.KeyID() != k2.KeyID() {
		t.Error("the key file must be reused")
	}
	// Using it again is no news: an informational line, not a warning on
	// every keys command and desktop start.
	if !strings.Contains(logs.String(), "level=INFO msg=\"using the local master key file") || strings.Contains(logs.String(), "WARN") {
		t.Errorf("reusing the key file: %s", logs.String())
	}
	env := map[string]string{MasterKeyEnv: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
	k3, err := LoadKeyring(func(k string) string { return env[k] }, file, log)
	if err != nil || k3.KeyID() == k1.KeyID() {
		t.Errorf("the environment key must win: %v", err)
	}
	env[MasterKeyEnv] = "not base64!"
	if _, err := LoadKeyring(func(k string) string { return env[k] }, file, log); err == nil {
		t.Error("a bad key must be refused")
	}
}
