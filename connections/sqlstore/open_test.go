package sqlstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/httptools/httptools/connections"
)

// TestOpenNamesTheFileAndCause: a store that cannot be opened says which
// file and why, not "unable to open database file (14)".
func TestOpenNamesTheFileAndCause(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, cause string }{
		{filepath.Join(dir, "missing", "x.db"), "does not exist"},
		{dir, "is a folder"},
	} {
		_, err := Open(context.Background(), "sqlite:"+tc.path, testKeys(t), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.cause) {
			t.Errorf("Open(%s) = %v; want the path and %q", tc.path, err, tc.cause)
		}
	}
}

// makeReadOnly makes a file unwritable even for root (chattr +i), or skips.
func makeReadOnly(t *testing.T, files ...string) {
	for _, f := range files {
		if os.Getuid() != 0 {
			if err := os.Chmod(f, 0o444); err != nil {
				t.Skip(err)
			}
			continue
		}
		if out, err := exec.Command("chattr", "+i", f).CombinedOutput(); err != nil {
			t.Skipf("chattr +i %s: %v %s", f, err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", f).Run() })
	}
}

// TestReadOnlyStoreIsNotReady: a SQLite file that turns read-only under a
// running store fails its readiness check (which writes), and opening a
// read-only file names it.
func TestReadOnlyStoreIsNotReady(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro.db")
	s := openSQLite(t, path)
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	makeReadOnly(t, path)
	s2, err := Open(context.Background(), "sqlite:"+path, testKeys(t), Options{})
	if err == nil {
		s2.Close()
		t.Fatal("opened a read-only database for writing")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %v does not name %s", err, path)
	}
	// A running store whose files turn read-only is not ready.
	path2 := filepath.Join(t.TempDir(), "live.db")
	live := openSQLite(t, path2)
	makeReadOnly(t, path2, path2+"-wal")
	err = live.Ping(context.Background())
	if !errors.Is(err, connections.ErrUnavailable) {
		t.Errorf("Ping on a read-only database = %v, want ErrUnavailable", err)
	}
}
