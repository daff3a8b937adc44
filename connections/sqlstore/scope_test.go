package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/history"
)

// TestScopeSelectsInTheQuery: a history.Scope is applied by the query,
// before its LIMIT, on SQLite and PostgreSQL alike: of 1,000 calls of a
// hidden tool (the newest) and 6 of visible ones, a limit of 5 returns 5
// visible calls; a person the scope names sees that person's tools, every
// other person the Others; approvals likewise.
func TestScopeSelectsInTheQuery(t *testing.T) {
	eachStore(t, func(t *testing.T, s *SQLStore) {
		ctx := context.Background()
		at := time.Now().Add(-time.Hour)
		var recs []history.Record
		add := func(tool, person string, n int) {
			for range n {
				at = at.Add(time.Millisecond)
				recs = append(recs, history.Record{Tenant: "t1", Tool: tool, Person: person, At: at})
			}
		}
		add("a", "p1", 3) // visible: a for everyone
		add("b", "p1", 2) // hidden: b only for p2
		add("b", "p2", 2) // visible
		add("c", "", 1)   // visible: c for others
		add("c", "p1", 1) // hidden
		add("h", "p2", 1000)
		if err := s.AppendCalls(ctx, recs); err != nil {
			t.Fatal(err)
		}
		sc := &history.Scope{Persons: map[string][]string{"p1": {"a"}, "p2": {"a", "b"}}, Others: []string{"a", "c"}}
		for _, c := range []struct {
			f    history.Filter
			want int
		}{
			{history.Filter{Scope: sc, Limit: 1000}, 6},
			{history.Filter{Scope: sc, Limit: 5}, 5},
			{history.Filter{Scope: sc, Person: "p1"}, 3},
			{history.Filter{Scope: sc, Tool: "h"}, 0},
			{history.Filter{Scope: &history.Scope{}}, 0},
			{history.Filter{Scope: nil, Limit: 1000}, 1000},
		} {
			got, err := s.Calls(ctx, "t1", c.f)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.want {
				t.Errorf("%+v: %d calls, want %d", c.f, len(got), c.want)
			}
			for _, r := range got {
				if !c.f.Scope.Allows(r.Tool, r.Person) {
					t.Errorf("%+v: a call of %s for %q", c.f, r.Tool, r.Person)
				}
			}
		}
		for i, tool := range []string{"a", "b", "c", "h"} {
			for _, p := range []string{"p1", "p2", ""} {
				if _, err := s.CreateApproval(ctx, &auth.Approval{Tenant: "t1", Tool: tool, Person: p, Run: fmt.Sprint(i), Expires: time.Now().Add(time.Hour)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// a: p1 p2 ""; b: p2; c: "" → 5 of 12.
		if got, err := s.Approvals(ctx, "t1", "", "", sc); err != nil || len(got) != 5 {
			t.Errorf("approvals in scope: %d, %v; want 5", len(got), err)
		}
		if got, _ := s.Approvals(ctx, "t1", "", "p2", sc); len(got) != 2 {
			t.Errorf("p2's approvals in scope: %d, want 2", len(got))
		}
		if got, _ := s.Approvals(ctx, "t1", "", "", nil); len(got) != 12 {
			t.Errorf("approvals without a scope: %d, want 12", len(got))
		}
	})
}
