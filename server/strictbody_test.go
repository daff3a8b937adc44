package server

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// TestEveryBodyRefusesUnknownMembers: every REST route that changes
// something, sent a body with a member it does not take (an extra one, a
// misspelt one, one in another case, one nested in context or a policy's
// rule), answers 400 bad-request naming the member's path, and changes
// nothing: the key count, the secret, the policy, the approval's state and
// the upstream's request count are as before. A route of server.go that
// takes a body and is not in the table fails the test, so a new route
// cannot go unchecked.
func TestEveryBodyRefusesUnknownMembers(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.Approvals, c.Policies = c.Store.(*testStore), c.Store.(*testStore)
	})
	ctx := context.Background()
	ref := synth.SecretRef{EnvName: "production", Name: "TOKEN"}
	if err := r.store.PutSecret(ctx, "tenant-a", ref, "before"); err != nil {
		t.Fatal(err)
	}
	if err := r.store.PutPolicy(ctx, "tenant-a", []byte(`{"rules":[],"toolsets":{"reads":{"ids":["t.echo"]}}}`)); err != nil {
		t.Fatal(err)
	}
	_, victim, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	a, err := r.store.CreateApproval(ctx, &auth.Approval{Tenant: "tenant-a", Tool: "t.echo", Person: "u1", Run: "r", InputHash: "h", Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	keys := func() int {
		ks, _ := r.store.APIKeys(ctx, "tenant-a")
		return len(ks)
	}
	state := func() string {
		keysNow, upNow := keys(), r.upCalls.Load()
		secret, _ := r.store.Secret(ctx, "tenant-a", ref)
		pol, _ := r.store.Policy(ctx, "tenant-a")
		apr, _ := r.store.Approval(ctx, "tenant-a", a.ID)
		return strings.Join([]string{strconv.Itoa(keysNow), secret, string(pol), apr.State, strconv.FormatInt(upNow, 10)}, " | ")
	}
	before := state()

	cases := []struct {
		route, method, path, body, member, suggest string
	}{
		{"POST /v1/tools/{id}/invoke", "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"},"extra":1}`, "extra", ""},
		{"POST /v1/tools/{id}/invoke", "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"},"context":{"persn":"u1"}}`, "context.persn", "person"},
		{"POST /v1/tools/{id}/invoke", "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"},"Context":{"person":"u1"}}`, "Context", "context"},
		{"POST /v1/tools/{id}/invoke", "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"},"context":{"idempotency_key":"k"}}`, "context.idempotency_key", "idempotencyKey"},
		{"POST /v1/tools/{id}/dry-run", "POST", "/v1/tools/t.echo/dry-run", `{"input":{"id":"1"},"contxt":{}}`, "contxt", "context"},
		{"PUT /v1/secrets/{envName}/{name}", "PUT", "/v1/secrets/production/TOKEN", `{"value":"after","ttl":5}`, "ttl", ""},
		{"PUT /v1/secrets/{envName}/{name}", "PUT", "/v1/secrets/production/TOKEN", `{"Value":"after"}`, "Value", "value"},
		{"DELETE /v1/secrets/{envName}/{name}", "DELETE", "/v1/secrets/production/TOKEN", `{"force":true}`, "force", ""},
		{"POST /v1/connections/{app}/authorize", "POST", "/v1/connections/google/authorize", `{"as":"company","scopes":["x"]}`, "scopes", ""},
		{"DELETE /v1/connections/{id}", "DELETE", "/v1/connections/conn_nope", `{"all":true}`, "all", ""},
		{"POST /v1/approvals/{id}/approve", "POST", "/v1/approvals/" + a.ID + "/approve", `{"approve":false}`, "approve", ""},
		{"POST /v1/approvals/{id}/deny", "POST", "/v1/approvals/" + a.ID + "/deny", `{"reason":"no"}`, "reason", ""},
		{"PUT /v1/policy", "PUT", "/v1/policy", `{"default":"deny","rules":[],"extra":1}`, "extra", ""},
		{"PUT /v1/policy", "PUT", "/v1/policy", `{"default":"deny","Rules":[]}`, "Rules", "rules"},
		{"PUT /v1/policy", "PUT", "/v1/policy", `{"rules":[{"effect":"deny","tools":{"idz":["t.*"]}}]}`, "rules[0].tools.idz", "ids"},
		{"DELETE /v1/policy", "DELETE", "/v1/policy", `{"tenant":"*"}`, "tenant", ""},
		{"POST /v1/keys", "POST", "/v1/keys", `{"role":"service","tool_set":"reads"}`, "tool_set", "toolset"},
		{"POST /v1/keys", "POST", "/v1/keys", `{"role":"service","unattended_tools":["t.*"]}`, "unattended_tools", "unattendedTools"},
		{"DELETE /v1/keys/{id}", "DELETE", "/v1/keys/" + victim.ID, `{"cascade":true}`, "cascade", ""},
	}
	for _, c := range cases {
		rp := r.do(t, r.keyA, c.method, c.path, c.body)
		e, _ := rp.body["error"].(map[string]any)
		d, _ := e["details"].(map[string]any)
		msg, _ := e["message"].(string)
		if rp.status != 400 || rp.code() != "bad-request/input-invalid" && rp.code() != "bad-request/invalid-policy" || d["member"] != c.member ||
			!strings.Contains(msg, `"`+c.member+`"`) || c.suggest != "" && !strings.Contains(msg, `did you mean "`+c.suggest+`"`) {
			t.Errorf("%s %s %s: %d %s; want 400 naming %q", c.method, c.path, c.body, rp.status, rp.raw, c.member)
		}
		if now := state(); now != before {
			t.Fatalf("%s %s %s changed something: %s, was %s", c.method, c.path, c.body, now, before)
		}
	}

	// Every route of server.go that may take a body is in the table.
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`"((?:POST|PUT|PATCH|DELETE) /v1/[^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		if !slices.ContainsFunc(cases, func(c struct{ route, method, path, body, member, suggest string }) bool { return c.route == m[1] }) {
			t.Errorf("route %s is not checked for unknown members: add it to the table", m[1])
		}
	}

	// The same bodies as meant pass, and a key gets what it asked for.
	if rp := r.do(t, r.keyA, "POST", "/v1/approvals/"+a.ID+"/approve", `{}`); rp.status != 204 {
		t.Errorf("approve with {}: %d %s", rp.status, rp.raw)
	}
	rp := r.do(t, r.keyA, "POST", "/v1/keys", `{"role":"service","toolset":"reads","unattendedTools":["t.echo","acme.*"]}`)
	info, _ := rp.body["info"].(map[string]any)
	if rp.status != 201 || info["toolset"] != "reads" || len(info["unattendedTools"].([]any)) != 2 {
		t.Fatalf("a bound service key with unattended tools: %d %s", rp.status, rp.raw)
	}
	made := keys()
	k, err := r.store.KeyOf(ctx, rp.body["key"].(string))
	if err != nil || k.Toolset != "reads" || !slices.Equal(k.UnattendedTools, []string{"t.echo", "acme.*"}) {
		t.Errorf("the stored key: %+v %v", k, err)
	}
	for _, body := range []string{
		`{"role":"person","person":"u1","unattendedTools":["t.*"]}`, // a service key's only
		`{"role":"admin","unattendedTools":["t.*"]}`,
		`{"role":"service","unattendedTools":["t.["]}`, // not a glob
		`{"role":"service","unattendedTools":["a,b"]}`,
		`{"role":"service","unattendedTools":[""]}`,
	} {
		if rp := r.do(t, r.keyA, "POST", "/v1/keys", body); rp.status != 400 || keys() != made {
			t.Errorf("%s: %d %s, %d keys (want 400, %d)", body, rp.status, rp.raw, keys(), made)
		}
	}
}
