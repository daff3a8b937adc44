package server

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// visibilityPolicy is tenant-a's policy in TestHistoryFollowsPolicyOnEveryDoor:
// a toolset of t.echo, t.secret denied to service keys, t.mail denied in
// u1's calls.
const visibilityPolicy = `{"toolsets":{"reads":{"ids":["t.echo"]}},"rules":[
	{"name":"no-secret-for-services","effect":"deny","tools":{"ids":["t.secret"]},"subjects":{"roles":["service"]}},
	{"name":"no-mail-for-u1","effect":"deny","tools":{"ids":["t.mail"]},"subjects":{"persons":["u1"]}}]}`

// TestHistoryFollowsPolicyOnEveryDoor: the records about tools — calls and
// approvals — are shown to a key only for the tools its gate lets it see,
// for the record's person, on every door: GET /v1/calls, GET
// /v1/approvals, deciding an approval (REST and console), the console's
// Calls and Approvals pages, and the MCP client's elicitation. The
// history holds 3 t.echo, 3 t.secret, 203 t.mail (200 of them the newest)
// and 1 t.gone (a tool no longer loaded) calls; the visible counts are
// exact per key, the hidden ones filtered in the query (a bound key gets
// its 3 calls under the default limit of 100, though 200 newer ones are
// hidden), and no body names a hidden tool.
func TestHistoryFollowsPolicyOnEveryDoor(t *testing.T) {
	t.Run("store applies the scope", func(t *testing.T) {
		historyFollowsPolicy(t, false, func(st *testStore) (CallStore, ApprovalStore) { return st, st })
	})
	// A store written before history.Filter.Scope (or careless with it)
	// lets everything through: the service still shows nothing more.
	t.Run("store ignores the scope", func(t *testing.T) {
		historyFollowsPolicy(t, true, func(st *testStore) (CallStore, ApprovalStore) { return scopeBlind{st}, scopeBlind{st} })
	})
}

// scopeBlind is a store that ignores every scope it is given.
type scopeBlind struct{ *testStore }

func (s scopeBlind) Calls(ctx context.Context, tenant string, f history.Filter) ([]history.Record, error) {
	f.Scope = nil
	return s.testStore.Calls(ctx, tenant, f)
}

func (s scopeBlind) Approvals(ctx context.Context, tenant, state, person string, _ *history.Scope) ([]*auth.Approval, error) {
	return s.testStore.Approvals(ctx, tenant, state, "", nil)
}

// blind says the store ignores the scope: a limit then counts records the
// key may not see, so only what a key sees is checked, not how many.
func historyFollowsPolicy(t *testing.T, blind bool, stores func(*testStore) (CallStore, ApprovalStore)) {
	r := newRig(t, func(c *Config) {
		c.UI = true
		c.Calls, c.Approvals = stores(c.Store.(*testStore))
		c.Policies = c.Store.(*testStore)
	})
	ctx := context.Background()
	if err := r.store.PutPolicy(ctx, "tenant-a", []byte(visibilityPolicy)); err != nil {
		t.Fatal(err)
	}
	bound, bk, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	if err := r.store.BindToolset(ctx, "tenant-a", bk.ID, "reads"); err != nil {
		t.Fatal(err)
	}
	service, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	u1, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RolePerson, "u1")

	// The history, oldest first.
	at := time.Now().Add(-time.Hour)
	var recs []history.Record
	add := func(tenant, tool, person string, n int) {
		for range n {
			at = at.Add(time.Millisecond)
			recs = append(recs, history.Record{Tenant: tenant, Tool: tool, Person: person, At: at, Request: `{"of":"` + tool + `"}`, Answer: "{}"})
		}
	}
	add("tenant-a", "t.echo", "u1", 2)
	add("tenant-a", "t.echo", "u2", 1)
	add("tenant-a", "t.secret", "u1", 2)
	add("tenant-a", "t.secret", "u2", 1)
	add("tenant-a", "t.mail", "u1", 2)
	add("tenant-a", "t.mail", "u2", 1)
	add("tenant-a", "t.gone", "u1", 1)
	add("tenant-a", "t.mail", "u2", 200) // the newest: a filter after the LIMIT would leave a bound key nothing
	add("tenant-b", "t.gone", "u1", 1)   // a tenant under no policy: every record, a removed tool's too
	add("tenant-b", "t.echo", "u1", 1)
	if err := r.store.AppendCalls(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// The approvals: one per tool and person.
	apr := map[string]string{} // "tool person" → id
	for _, tool := range []string{"t.gone", "t.mail", "t.secret", "t.echo"} {
		for _, p := range []string{"u1", "u2"} {
			a, err := r.store.CreateApproval(ctx, &auth.Approval{Tenant: "tenant-a", Tool: tool, Person: p, Run: "nightly", InputHash: "h",
				Input: `{"of":"` + tool + `"}`, RequestedBy: "key_kernel", Expires: time.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			apr[tool+" "+p] = a.ID
		}
	}

	// The MCP client's elicitation, first (its answers decide nothing):
	// u1 is asked about t.echo and t.secret, never t.mail (denied in u1's
	// calls) or t.gone.
	var mu sync.Mutex
	var shown []string
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			shown = append(shown, req.Params.Message)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}})
	ms := r.srv.MCPToolsetServer("tenant-a", "", func(*mcp.CallToolRequest) string { return "u1" })
	ct, st := mcp.NewInMemoryTransports()
	ss, err := ms.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	go r.srv.ElicitApprovals(ectx, ms, "tenant-a", "", "u1", 5*time.Millisecond)
	asked := func() int { mu.Lock(); defer mu.Unlock(); return len(shown) }
	testkit.WaitFor(t, "u1's 2 visible approvals asked", func() bool { return asked() >= 2 })
	// Every poll lists every pending approval: once one made after the
	// rest is asked, a hidden one would have been asked before it.
	late, _ := r.store.CreateApproval(ctx, &auth.Approval{Tenant: "tenant-a", Tool: "t.echo", Person: "u1", Run: "late", InputHash: "h",
		Input: "{}", RequestedBy: "key_kernel", Expires: time.Now().Add(time.Hour)})
	testkit.WaitFor(t, "the later approval asked", func() bool { return asked() >= 3 })
	stop()
	mu.Lock()
	if len(shown) != 3 || slices.ContainsFunc(shown, func(m string) bool { return strings.Contains(m, "t.mail") || strings.Contains(m, "t.gone") }) {
		t.Errorf("u1's client was asked %d times: %q", len(shown), shown)
	}
	mu.Unlock()
	r.store.DecideApproval(ctx, "tenant-a", late.ID, auth.ApprovalDenied, "test", time.Now()) // a ninth approval, of t.echo for u1

	calls := func(key, query string) []history.Record {
		t.Helper()
		rp := r.do(t, key, "GET", "/v1/calls"+query, "")
		var out struct{ Calls []history.Record }
		if rp.status != 200 || json.Unmarshal([]byte(rp.raw), &out) != nil {
			t.Fatalf("GET /v1/calls%s: %d %s", query, rp.status, rp.raw)
		}
		return out.Calls
	}
	approvals := func(key string) []auth.Approval {
		t.Helper()
		rp := r.do(t, key, "GET", "/v1/approvals", "")
		var out struct{ Approvals []auth.Approval }
		if rp.status != 200 || json.Unmarshal([]byte(rp.raw), &out) != nil {
			t.Fatalf("GET /v1/approvals: %d %s", rp.status, rp.raw)
		}
		return out.Approvals
	}
	rows := regexp.MustCompile(`<tr id="(call|apr)_`)
	for _, c := range []struct {
		name, key       string
		calls, defCalls int // ?limit=1000, and the default limit (the console's too)
		approvals       int // of the 9 (each tool and person, and the late one)
		hidden          []string
	}{
		{"toolset-bound service key", bound, 3, 3, 3, []string{"t.secret", "t.mail", "t.gone"}},
		{"service key denied t.secret", service, 204, 100, 4, []string{"t.secret", "t.gone"}},
		{"person key of u1", u1, 4, 4, 3, []string{"t.mail", "t.gone"}},
		{"admin key", r.keyA, 207, 100, 6, []string{"t.gone"}},
		{"admin key of a tenant under no policy", r.keyB, 2, 2, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			all, def := calls(c.key, "?limit=1000"), calls(c.key, "")
			as := approvals(c.key)
			callsPage := consolePage(t, r, c.key, "GET", "/ui/calls", nil)
			aprPage := consolePage(t, r, c.key, "GET", "/ui/approvals", nil)
			if blind {
				c.defCalls = min(c.defCalls, len(def)) // the newest 100 may all be hidden
			}
			if len(all) != c.calls || len(def) != c.defCalls || len(as) != c.approvals {
				t.Errorf("GET /v1/calls: %d (want %d), default limit: %d (want %d); GET /v1/approvals: %d (want %d)", len(all), c.calls, len(def), c.defCalls, len(as), c.approvals)
			}
			if n, m := len(rows.FindAllString(callsPage, -1)), len(rows.FindAllString(aprPage, -1)); n != c.defCalls || m != c.approvals {
				t.Errorf("the console shows %d calls (want %d), %d approvals (want %d)", n, c.defCalls, m, c.approvals)
			}
			for _, tool := range c.hidden {
				for door, body := range map[string]string{"GET /v1/calls": r.do(t, c.key, "GET", "/v1/calls?limit=1000", "").raw,
					"GET /v1/calls?tool=": r.do(t, c.key, "GET", "/v1/calls?tool="+tool, "").raw,
					"GET /v1/approvals":   r.do(t, c.key, "GET", "/v1/approvals", "").raw,
					"/ui/calls":           callsPage, "/ui/approvals": aprPage} {
					if strings.Contains(body, tool) {
						t.Errorf("%s names %s", door, tool)
					}
				}
			}
		})
	}

	// Deciding: an approval of a tool the key cannot see is no approval
	// (404, and it stays pending), on REST and on the console.
	for _, c := range []struct {
		name, key, approval string
		status              int
	}{
		{"bound key, t.secret", bound, apr["t.secret u1"], 404},
		{"service key, t.secret", service, apr["t.secret u2"], 404},
		{"service key, t.echo: visible, not its to decide", service, apr["t.echo u2"], 403},
		{"u1, t.mail of u1", u1, apr["t.mail u1"], 404},
		{"admin, t.gone", r.keyA, apr["t.gone u1"], 404},
		{"admin, t.mail of u1", r.keyA, apr["t.mail u1"], 404},
		{"u1, t.secret of u1", u1, apr["t.secret u1"], 204},
		{"admin, t.mail of u2", r.keyA, apr["t.mail u2"], 204},
	} {
		if rp := r.do(t, c.key, "POST", "/v1/approvals/"+c.approval+"/approve", ""); rp.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, rp.status, rp.raw, c.status)
		}
	}
	consolePage(t, r, u1, "POST", "/ui/approvals/"+apr["t.mail u1"]+"/approve", nil)
	consolePage(t, r, bound, "POST", "/ui/approvals/"+apr["t.secret u2"]+"/deny", nil)
	pending := 0
	for _, id := range apr {
		a, _ := r.store.Approval(ctx, "tenant-a", id)
		if a.State == auth.ApprovalPending {
			pending++
		}
	}
	if pending != 6 {
		t.Errorf("%d of the 8 approvals pending, want 6 (2 decided by keys that see them)", pending)
	}
}
