package openapi_test

import (
	"errors"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/httptools/httptools/openapi"
)

// TestLoadedHandsEachReturnedManifestOnce: Options.Loaded is handed every
// manifest Import returns, once each, byte for byte, and no other; an
// error it returns is Import's.
func TestLoadedHandsEachReturnedManifestOnce(t *testing.T) {
	src, err := os.ReadFile("testdata/stripe-customers.json")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	handed := map[string][]byte{}
	res, err := openapi.Import(src, openapi.Options{Loaded: func(m openapi.Manifest) error {
		mu.Lock()
		defer mu.Unlock()
		if _, twice := handed[m.ID]; twice {
			t.Errorf("%s handed twice", m.ID)
		}
		handed[m.ID] = m.JSON
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifests) < 3 || len(handed) != len(res.Manifests) {
		t.Fatalf("handed %d manifests, Import returned %d", len(handed), len(res.Manifests))
	}
	for _, m := range res.Manifests {
		if !slices.Equal(handed[m.ID], m.JSON) {
			t.Errorf("%s: handed other bytes than returned", m.ID)
		}
	}

	full := errors.New("disk full")
	calls := 0
	_, err = openapi.Import(src, openapi.Options{Loaded: func(openapi.Manifest) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return full
	}})
	if !errors.Is(err, full) || calls == 0 {
		t.Errorf("Import with a failing Loaded: %v after %d calls, want %v", err, calls, full)
	}
}
