package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/httptools/httptools/connections"
)

// TestKeptResults: an answer kept is read back as it was until it
// expires, then is not found, and the next write drops it; on SQLite and
// PostgreSQL.
func TestKeptResults(t *testing.T) {
	ctx := context.Background()
	eachStore(t, func(t *testing.T, s *SQLStore) {
		body := []byte(`{"issues":["ü",1]}`)
		if err := s.PutResult(ctx, "r1", `"t1" "k1"`, "", 4000, body, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		owner, media, size, got, _, err := s.Result(ctx, "r1")
		if err != nil || owner != `"t1" "k1"` || media != "" || size != 4000 || string(got) != string(body) {
			t.Fatalf("read back: %q %q %d %q %v", owner, media, size, got, err)
		}
		if err := s.PutResult(ctx, "r2", `"t1" "k1"`, "image/png", 4000, []byte(`"iVBO"`), time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, _, _, _, _, err := s.Result(ctx, "r2"); !errors.Is(err, connections.ErrNotFound) {
			t.Errorf("an expired answer: %v", err)
		}
		s.PutResult(ctx, "r3", `"t1" "k1"`, "", 4000, body, time.Now().Add(time.Hour))
		var n int
		s.DB().QueryRow(`SELECT COUNT(*) FROM kept_results WHERE id = 'r2'`).Scan(&n)
		if n != 0 {
			t.Errorf("the expired row stayed: %d", n)
		}
	})
}
