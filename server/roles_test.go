package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
)

// TestRolesOnEveryRoute walks every route with an admin, a service and a
// person key and asserts the status of each.
func TestRolesOnEveryRoute(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ids := map[string]string{}
	mk := func(role, person string) string {
		k, info, err := r.store.CreateAPIKey(ctx, "tenant-a", role, person)
		if err != nil {
			t.Fatal(err)
		}
		ids[role] = info.ID
		return k
	}
	keys := map[string]string{
		"admin":   mk(auth.RoleAdmin, ""),
		"service": mk(auth.RoleService, ""),
		"person":  mk(auth.RolePerson, "u1"),
	}
	u1, _ := r.store.SaveConnection(ctx, &connections.Record{Tenant: "tenant-a", App: "google", Owner: connections.OwnerPerson("u1"), AccessToken: "a1", Permissions: []string{"gmail.send"}})
	u2, _ := r.store.SaveConnection(ctx, &connections.Record{Tenant: "tenant-a", App: "google", Owner: connections.OwnerPerson("u2"), AccessToken: "a2", Permissions: []string{"gmail.send"}})
	co, _ := r.store.SaveConnection(ctx, &connections.Record{Tenant: "tenant-a", App: "google", Owner: connections.OwnerCompany, AccessToken: "a3"})
	type want struct{ admin, service, person int }
	for _, tc := range []struct {
		name, method, path, body string
		want
	}{
		{"list tools", "GET", "/v1/tools", "", want{200, 200, 200}},
		{"get tool", "GET", "/v1/tools/t.echo", "", want{200, 200, 200}},
		{"invoke", "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"}}`, want{200, 200, 200}},
		{"invoke as own person", "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"},"context":{"person":"u1"}}`, want{200, 200, 200}},
		{"invoke as another person", "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"},"context":{"person":"u2"}}`, want{200, 200, 403}},
		{"invoke unattended", "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"},"context":{"unattended":true}}`, want{200, 200, 403}},
		{"list secrets", "GET", "/v1/secrets", "", want{200, 403, 403}},
		{"put secret", "PUT", "/v1/secrets/production/K", `{"value":"v"}`, want{204, 403, 403}},
		{"delete secret", "DELETE", "/v1/secrets/production/NONE", "", want{404, 403, 403}},
		{"authorize company", "POST", "/v1/connections/google/authorize", `{"as":"company"}`, want{200, 403, 403}},
		{"authorize another person", "POST", "/v1/connections/google/authorize", `{"as":"person","person":"u2"}`, want{200, 200, 403}},
		{"authorize own person", "POST", "/v1/connections/google/authorize", `{"as":"person","person":"u1"}`, want{200, 200, 200}},
		{"authorize oneself", "POST", "/v1/connections/google/authorize", `{"as":"person"}`, want{400, 400, 200}},
		{"list connections", "GET", "/v1/connections", "", want{200, 200, 200}},
		{"revoke unknown connection", "DELETE", "/v1/connections/conn_nope", "", want{404, 404, 404}},
		{"revoke the company's", "DELETE", "/v1/connections/" + co.ID, "", want{204, 403, 404}}, // to a person, others' connections do not exist
		{"revoke another person's", "DELETE", "/v1/connections/" + u2.ID, "", want{204, 204, 404}},
		{"list keys", "GET", "/v1/keys", "", want{200, 403, 403}},
		{"create key", "POST", "/v1/keys", `{"role":"service"}`, want{201, 403, 403}},
		{"revoke unknown key", "DELETE", "/v1/keys/key_nope", "", want{404, 403, 403}},
		{"MCP", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, want{200, 200, 200}},
	} {
		for _, role := range []string{"admin", "service", "person"} {
			// Revocations change state: restore the connections each time.
			r.store.SaveConnection(ctx, u2)
			r.store.SaveConnection(ctx, co)
			w := map[string]int{"admin": tc.admin, "service": tc.service, "person": tc.person}[role]
			rp := r.doMCP(t, keys[role], tc.method, tc.path, tc.body, "")
			if rp.status != w {
				t.Errorf("%s with a %s key: %d %.200s; want %d", tc.name, role, rp.status, rp.raw, w)
			}
		}
	}
	// A person sees its own connections only.
	rp := r.do(t, keys["person"], "GET", "/v1/connections", "")
	var list struct{ Connections []ConnectionView }
	json.Unmarshal([]byte(rp.raw), &list)
	if len(list.Connections) != 1 || list.Connections[0].ID != u1.ID {
		t.Errorf("person u1 sees %+v", list.Connections)
	}
	// MCP with a person key naming another person: refused.
	if rp := r.doMCP(t, keys["person"], "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "u2"); rp.status != 403 {
		t.Errorf("MCP as another person: %d", rp.status)
	}
	// A revoked key stops working at once on this replica.
	if rp := r.do(t, keys["admin"], "DELETE", "/v1/keys/"+ids["service"], ""); rp.status != 204 {
		t.Fatalf("revoke the service key: %d %s", rp.status, rp.raw)
	}
	if rp := r.do(t, keys["service"], "GET", "/v1/tools", ""); rp.status != 401 || !strings.Contains(rp.raw, "revoked") {
		t.Errorf("a revoked key: %d %s", rp.status, rp.raw)
	}
}

// doMCP is do with MCP's headers and, when set, X-Person-Id.
func (r *rig) doMCP(t *testing.T, key, method, path, body, person string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, r.http.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if person != "" {
		req.Header.Set("X-Person-Id", person)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return reply{status: resp.StatusCode, raw: b.String(), header: resp.Header}
}
