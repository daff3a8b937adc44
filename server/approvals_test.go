package server

import (
	"context"
	"encoding/json"
	"github.com/httptools/httptools/internal/testkit"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
)

// TestApprovalsAreRecords: an unattended call of a tool that needs a
// person's yes runs once, with exactly the input, person, run and tenant
// its approval was made for, after a person allowed to decide approved it.
// The attacks — approved: true asserted, a one-byte different input,
// another person, another run, another tenant, a replay, a denied
// approval, a person key deciding someone else's call, a service key
// deciding at all — are refused with 0 upstream requests; 1 call reaches
// the upstream per approval. (Expired ones: TestExpiredApprovalsAreRefused.)
func TestApprovalsAreRecords(t *testing.T) {
	r := newGuardedRig(t, 0)
	ctx := context.Background()
	service, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	u1, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RolePerson, "u1")
	u2, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RolePerson, "u2")
	call := func(key, input, context string) reply { return r.callGuarded(t, key, input, context) }
	upstream := func() int64 { return r.upCalls.Load() }
	start := upstream()

	// Asking: 403 approval-required with a request; asserting approved: true
	// changes nothing.
	first := call(service, `{"a":1}`, `{"person":"u1","run":"r1","unattended":true}`)
	id := approvalOf(first)
	if first.status != 403 || first.code() != "precondition-failed/approval-required" || !strings.HasPrefix(id, "apr_") {
		t.Fatalf("an unattended call: %d %s", first.status, first.raw)
	}
	if rp := call(service, `{"a":1}`, `{"person":"u1","run":"r1","unattended":true,"approved":true}`); rp.status != 403 || approvalOf(rp) == "" {
		t.Errorf("approved: true was believed: %d %s", rp.status, rp.raw)
	}
	// Deciding: not another person, not a service key; then u1.
	if rp := r.do(t, u2, "POST", "/v1/approvals/"+id+"/approve", ""); rp.status != 404 {
		t.Errorf("another person's key approved: %d", rp.status)
	}
	if rp := r.do(t, service, "POST", "/v1/approvals/"+id+"/approve", ""); rp.status != 403 {
		t.Errorf("a service key approved: %d", rp.status)
	}
	if rp := r.do(t, r.keyB, "POST", "/v1/approvals/"+id+"/approve", ""); rp.status != 404 {
		t.Errorf("another tenant's admin approved: %d", rp.status)
	}
	if rp := r.do(t, u1, "GET", "/v1/approvals?state=pending", ""); !strings.Contains(rp.raw, id) {
		t.Errorf("u1's pending approvals: %s", rp.raw)
	}
	if rp := r.do(t, u1, "POST", "/v1/approvals/"+id+"/approve", ""); rp.status != 204 {
		t.Fatalf("u1 approving: %d %s", rp.status, rp.raw)
	}
	with := func(input, person, run string) string {
		c, _ := json.Marshal(map[string]any{"person": person, "run": run, "unattended": true, "approval": id})
		return call(service, input, string(c)).raw
	}
	for name, got := range map[string]string{
		"a one-byte different input": with(`{"a":2}`, "u1", "r1"),
		"another person":             with(`{"a":1}`, "u2", "r1"),
		"another run":                with(`{"a":1}`, "u1", "r2"),
		"another tenant":             r.do(t, r.keyB, "POST", "/v1/tools/t.guarded/invoke", `{"input":{"a":1},"context":{"person":"u1","run":"r1","unattended":true,"approval":"`+id+`"}}`).raw,
	} {
		if !strings.Contains(got, "does not approve this call") {
			t.Errorf("%s: %s", name, got)
		}
	}
	if upstream() != start {
		t.Fatalf("%d refused calls reached the upstream", upstream()-start)
	}
	// The call it was made for, with its members in another order: once.
	if got := with(`{ "a" : 1 }`, "u1", "r1"); !strings.Contains(got, `"output"`) {
		t.Fatalf("the approved call: %s", got)
	}
	if got := with(`{"a":1}`, "u1", "r1"); !strings.Contains(got, "it is used") {
		t.Errorf("a replay: %s", got)
	}
	if n := upstream() - start; n != 1 {
		t.Errorf("%d upstream requests for one approval", n)
	}

	// Denied.
	denied := approvalOf(call(service, `{"a":3}`, `{"person":"u1","unattended":true}`))
	r.do(t, r.keyA, "POST", "/v1/approvals/"+denied+"/deny", "")
	if got := call(service, `{"a":3}`, `{"person":"u1","unattended":true,"approval":"`+denied+`"}`).raw; !strings.Contains(got, "it is denied") {
		t.Errorf("a denied approval: %s", got)
	}
	if n := upstream() - start; n != 1 {
		t.Errorf("%d upstream requests after the attacks, want 1", n)
	}

	// A service key whose toolsAllowedUnattended names the tool needs none.
	_, sk, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	allowed, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	k, _ := r.store.KeyOf(ctx, allowed)
	r.store.SetUnattendedTools(ctx, "tenant-a", k.ID, []string{"t.guard*"})
	_ = sk
	if rp := call(allowed, `{"a":6}`, `{"unattended":true}`); rp.status != 200 {
		t.Errorf("a tool the key may run unattended: %d %s", rp.status, rp.raw)
	}
}

// guardedRig is a rig serving t.guarded, a tool that needs a person's yes
// when no person started the run, with approvals that last ttl (0: the
// default, an hour).
type guardedRig struct{ *rig }

func newGuardedRig(t *testing.T, ttl time.Duration, opts ...func(*Config)) guardedRig {
	r := newRig(t, append([]func(*Config){func(c *Config) { c.Approvals = c.Store.(ApprovalStore); c.ApprovalTTL = ttl }}, opts...)...)
	upURL := r.srv.Tools().raw["t.echo"]
	up := string(upURL)[strings.Index(string(upURL), `"urlTemplate":"`)+len(`"urlTemplate":"`):]
	up = up[:strings.Index(up, "/items/")]
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "guarded.json"), []byte(`{"id":"t.guarded","description":"Needs a yes.","version":"1.0.0","mutating":true,
		"needsApprovalWhenUnattended":true,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"POST","urlTemplate":"`+up+`/g"}}`), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	return guardedRig{r}
}

func (r guardedRig) callGuarded(t *testing.T, key, input, context string) reply {
	t.Helper()
	return r.do(t, key, "POST", "/v1/tools/t.guarded/invoke", `{"input":`+input+`,"context":`+context+`}`)
}

// approvalOf is the approval a refusal requested.
func approvalOf(rp reply) string {
	e, _ := rp.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	id, _ := d["approval"].(string)
	return id
}

// TestExpiredApprovalsAreRefused: an approval approved in its time and
// used past it is refused ("it expired"), and a request approved past its
// time is refused 409: 0 upstream requests. The server's clock is moved
// past the expiry, not waited for.
func TestExpiredApprovalsAreRefused(t *testing.T) {
	clock := testkit.NewClock()
	r := newGuardedRig(t, time.Minute, func(c *Config) { c.Now = clock.Now })
	service, _, _ := r.store.CreateAPIKey(context.Background(), "tenant-a", auth.RoleService, "")
	start := r.upCalls.Load()
	asked := r.callGuarded(t, service, `{"a":4}`, `{"person":"u1","unattended":true}`)
	late := approvalOf(asked)
	if rp := r.do(t, r.keyA, "POST", "/v1/approvals/"+late+"/approve", ""); rp.status != 204 {
		t.Fatalf("approving in time: %d %s", rp.status, rp.raw)
	}
	stale := approvalOf(r.callGuarded(t, service, `{"a":5}`, `{"person":"u1","unattended":true}`))
	clock.Advance(time.Minute)
	if got := r.callGuarded(t, service, `{"a":4}`, `{"person":"u1","unattended":true,"approval":"`+late+`"}`).raw; !strings.Contains(got, "it expired") {
		t.Errorf("an expired approval: %s", got)
	}
	if rp := r.do(t, r.keyA, "POST", "/v1/approvals/"+stale+"/approve", ""); rp.status != 409 {
		t.Errorf("approving an expired request: %d", rp.status)
	}
	if n := r.upCalls.Load() - start; n != 0 {
		t.Errorf("%d upstream requests for expired approvals, want 0", n)
	}
	// A minute less a millisecond: still in time.
	fresh := approvalOf(r.callGuarded(t, service, `{"a":6}`, `{"person":"u1","unattended":true}`))
	clock.Advance(time.Minute - time.Millisecond)
	if rp := r.do(t, r.keyA, "POST", "/v1/approvals/"+fresh+"/approve", ""); rp.status != 204 {
		t.Errorf("approving a millisecond before the expiry: %d %s", rp.status, rp.raw)
	}
}

// TestApprovalsInTheConsole: the person of a call sees its pending
// approval on the console and approves it there; another person sees
// none of it.
func TestApprovalsInTheConsole(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true; c.Approvals = c.Store.(ApprovalStore) })
	ctx := context.Background()
	service, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	u1, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RolePerson, "u1")
	u2, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RolePerson, "u2")
	// t.mail uses the person's connection: it needs a yes when unattended.
	rp := r.do(t, service, "POST", "/v1/tools/t.mail/invoke", `{"input":{},"context":{"person":"u1","unattended":true}}`)
	e, _ := rp.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	id, _ := d["approval"].(string)
	if id == "" {
		t.Fatalf("no approval requested: %s", rp.raw)
	}
	if page := consolePage(t, r, u2, "GET", "/ui/approvals", nil); strings.Contains(page, id) {
		t.Error("another person sees the approval")
	}
	if page := consolePage(t, r, u1, "GET", "/ui/approvals", nil); !strings.Contains(page, id) || !strings.Contains(page, "/ui/approvals/"+id+"/approve") {
		t.Fatalf("the person's console does not offer the approval")
	}
	consolePage(t, r, u1, "POST", "/ui/approvals/"+id+"/approve", url.Values{})
	a, err := r.store.Approval(ctx, "tenant-a", id)
	if err != nil || a.State != auth.ApprovalApproved || a.DecidedBy == "" {
		t.Errorf("after the console's approve: %+v %v", a, err)
	}
}

// TestApprovalsListSaysExpired: an approval past its time is listed as
// expired, on REST and the console, and can be decided no more.
func TestApprovalsListSaysExpired(t *testing.T) {
	clock := testkit.NewClock()
	r := newRig(t, func(c *Config) {
		c.UI = true
		c.Approvals = c.Store.(ApprovalStore)
		c.Now = clock.Now
	})
	service, _, _ := r.store.CreateAPIKey(context.Background(), "tenant-a", auth.RoleService, "")
	r.do(t, service, "POST", "/v1/tools/t.mail/invoke", `{"input":{},"context":{"person":"u1","unattended":true}}`)
	clock.Advance(DefaultApprovalTTL)
	if got := r.do(t, r.keyA, "GET", "/v1/approvals", "").raw; !strings.Contains(got, `"state":"expired"`) {
		t.Errorf("GET /v1/approvals: %s", got)
	}
	if page := consolePage(t, r, r.keyA, "GET", "/ui/approvals", nil); !strings.Contains(page, "expired") || strings.Contains(page, "/approve\"") {
		t.Error("the console offers an expired approval")
	}
}
