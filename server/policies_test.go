package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPolicyMatrix: 7 rules (in the policy of all tenants and the
// tenant's own) × 3 roles × every door a tool is seen or run by: REST's
// list, get, invoke and dry run; MCP's tools/list (every page) and
// tools/call through the SDK and through the fast path; the console's
// catalogue, search and tool page. Each door shows each role exactly the
// tools the policy allows it: 0 denied tools in any listing, every denied
// lookup and call answered as an unknown id is, 0 denied calls reaching
// the upstream; the access log and /metrics name the deciding rule.
func TestPolicyMatrix(t *testing.T) {
	var accessLog testkit.Buffer
	r := newRig(t, func(c *Config) {
		c.UI = true
		c.Policies = c.Store.(PolicyStore)
		c.AccessLogger = slog.New(slog.NewTextHandler(&accessLog, nil))
	})
	dir := r.srv.cfg.ToolsDir
	upURL := strings.TrimSuffix(string(bytes.Split([]byte(r.srv.Tools().raw["t.echo"]), []byte(`"urlTemplate":"`))[1]), "")
	upURL = upURL[:strings.Index(upURL, "/items/")]
	for name, body := range map[string]string{
		"delete.json": `{"id":"t.delete","description":"Deletes.","version":"1.0.0","mutating":true,"input":{"type":"object"},"output":{"type":"object"},
			"effects":[{"kind":"deletes","resource":"external:127.0.0.1"}],"spec":{"kind":"http","method":"DELETE","urlTemplate":"` + upURL + `/d"}}`,
		"internal.json": `{"id":"t.internal","description":"Internal.","version":"1.0.0","mutating":false,"metadata":{"tags":["internal"]},"input":{"type":"object"},"output":{"type":"object"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + upURL + `/i"}}`,
		"egress.json": `{"id":"x.egress","description":"Sends data out.","version":"1.0.0","mutating":true,"input":{"type":"object"},"output":{"type":"object"},
			"effects":[{"kind":"sensitive-data-egress","resource":"external:partner.example"}],"spec":{"kind":"http","method":"POST","urlTemplate":"` + upURL + `/e"}}`,
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	service, svc, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	person, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RolePerson, "u1")
	// All tenants: no deletes for anyone; nothing tagged internal for
	// people. The tenant's own: a closed default, tools of the t. family
	// and the egress tool allowed; connections denied to service keys;
	// secrets denied to this service key by id; egress only for admins;
	// person u1 no mutations.
	r.store.PutPolicy(ctx, AllTenants, []byte(`{"rules":[
	  {"name":"no-deletes","effect":"deny","tools":{"effects":[{"kind":"deletes"}]}},
	  {"name":"internal-staff-only","effect":"deny","tools":{"tags":["internal"]},"subjects":{"roles":["person"]}}]}`))
	r.store.PutPolicy(ctx, "tenant-a", []byte(`{"default":"deny","rules":[
	  {"name":"t-family","effect":"allow","tools":{"ids":["t.*"]}},
	  {"name":"egress-allowed","effect":"allow","tools":{"ids":["x.egress"]}},
	  {"name":"no-connections-for-services","effect":"deny","tools":{"auth":["connection"]},"subjects":{"roles":["service"]}},
	  {"name":"no-secrets-for-this-key","effect":"deny","tools":{"auth":["bearer"]},"subjects":{"keys":["`+svc.ID+`"]}},
	  {"name":"egress-admins-only","effect":"deny","tools":{"effects":[{"kind":"sensitive-data-egress","resource":"external:*.example"}]},"subjects":{"roles":["service","person"]}},
	  {"name":"u1-reads-only","effect":"deny","tools":{"mutating":true},"subjects":{"persons":["u1"]}}]}`))
	all := []string{"t.delete", "t.echo", "t.internal", "t.mail", "t.secret", "x.egress"}
	want := map[string][]string{
		r.keyA:  {"t.echo", "t.internal", "t.mail", "t.secret", "x.egress"},
		service: {"t.echo", "t.internal"},
		person:  {"t.echo", "t.secret"},
	}
	role := map[string]string{r.keyA: "admin", service: "service", person: "person"}
	inputs := map[string]string{"t.echo": `{"id":"1"}`}
	input := func(id string) string {
		if in, ok := inputs[id]; ok {
			return in
		}
		return `{}`
	}

	for key, allowed := range want {
		t.Run(role[key], func(t *testing.T) {
			check := func(door string, got []string) {
				t.Helper()
				slices.Sort(got)
				if !slices.Equal(got, allowed) {
					t.Errorf("%s shows %v, want %v", door, got, allowed)
				}
			}
			// REST list.
			var list struct{ Tools []struct{ ID string } }
			json.Unmarshal([]byte(r.do(t, key, "GET", "/v1/tools", "").raw), &list)
			var ids []string
			for _, tl := range list.Tools {
				ids = append(ids, tl.ID)
			}
			check("GET /v1/tools", ids)
			// MCP tools/list, every page, through the SDK's client.
			cs := mcpSession(t, r.http.URL, key)
			ids = nil
			for tl, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, tl.Name)
			}
			check("MCP tools/list", ids)
			// The console's catalogue, and a search.
			cat := consolePage(t, r, key, "GET", "/ui/", nil)
			check("the console's catalogue", consoleRows(cat))
			check("a console search for t", consoleRows(consolePage(t, r, key, "GET", "/ui/?q=t", nil)))

			for _, id := range all {
				ok := slices.Contains(allowed, id)
				unknown := strings.ReplaceAll(r.do(t, key, "GET", "/v1/tools/no.such-tool", "").raw, "no.such-tool", id)
				before := r.upCalls.Load()
				get := r.do(t, key, "GET", "/v1/tools/"+id, "")
				inv := r.do(t, key, "POST", "/v1/tools/"+id+"/invoke", `{"input":`+input(id)+`}`)
				dry := r.do(t, key, "POST", "/v1/tools/"+id+"/dry-run", `{"input":`+input(id)+`}`)
				_, sdkErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: id, Arguments: json.RawMessage(input(id))})
				fast := fastCall(t, r, key, id, input(id))
				page := consolePage(t, r, key, "GET", "/ui/tools/"+id, nil)
				run := consolePage(t, r, key, "POST", "/ui/tools/"+id, url.Values{"action": {"run"}, "_json": {input(id)}})
				if ok {
					if get.status != 200 || inv.code() == "tool-not-found" || dry.code() == "tool-not-found" || sdkErr != nil || strings.Contains(fast, "unknown tool") ||
						strings.Contains(page, "There is no tool") || strings.Contains(run, "There is no tool") {
						t.Errorf("%s allowed but refused: get %d, invoke %s, dry run %s, SDK %v, fast %.80s", id, get.status, inv.code(), dry.code(), sdkErr, fast)
					}
					continue
				}
				if get.raw != unknown || inv.raw != unknown || dry.raw != unknown {
					t.Errorf("%s denied: get %d %s, invoke %s, dry run %s; an unknown id gets %s", id, get.status, get.raw, inv.raw, dry.raw, unknown)
				}
				if sdkErr == nil || !strings.Contains(sdkErr.Error(), `unknown tool "`+id+`"`) {
					t.Errorf("%s denied: the SDK's call got %v", id, sdkErr)
				}
				if !strings.Contains(fast, `"message":"unknown tool \"`+id+`\""`) {
					t.Errorf("%s denied: the fast path answered %s", id, fast)
				}
				r.srv.noFastPath.Store(true)
				viaSDK := fastCall(t, r, key, id, input(id))
				r.srv.noFastPath.Store(false)
				var fv, sv any
				json.Unmarshal([]byte(fast), &fv)
				json.Unmarshal([]byte(viaSDK), &sv)
				if !reflect.DeepEqual(fv, sv) {
					t.Errorf("%s denied: the fast path answered %s, the SDK %s", id, fast, viaSDK)
				}
				if !strings.Contains(page, "There is no tool") || !strings.Contains(run, "There is no tool") {
					t.Errorf("%s denied: the console shows its page or runs it", id)
				}
				if n := r.upCalls.Load() - before; n != 0 {
					t.Errorf("%s denied: %d requests reached the upstream", id, n)
				}
			}
		})
	}
	// The rule that decided, in the access log and in /metrics.
	if !regexp.MustCompile(`status=404 .*policy=no-deletes`).MatchString(accessLog.String()) {
		t.Errorf("the access log does not name the rule: %.600s", accessLog.String())
	}
	rec := httptest.NewRecorder()
	r.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !regexp.MustCompile(`httptools_policy_denials_total\{rule="egress-admins-only"\} [1-9]`).MatchString(rec.Body.String()) {
		t.Error("/metrics counts no denial by egress-admins-only")
	}
}

// TestPolicyChangeReachesEveryReplica: two services on one store; a
// policy put through one is applied by the other within its TTL.
func TestPolicyChangeReachesEveryReplica(t *testing.T) {
	a := newRig(t, func(c *Config) { c.Policies = c.Store.(PolicyStore); c.PolicyTTL = 300 * time.Millisecond })
	b, err := New(Config{Store: a.store, Keys: a.store, Policies: a.store, PolicyTTL: 300 * time.Millisecond, ToolsDir: a.srv.cfg.ToolsDir,
		Loader: a.srv.cfg.Loader, Logger: a.srv.cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	bs := httptest.NewServer(b.Handler())
	t.Cleanup(bs.Close)
	bh := bs.URL
	seen := func(base string) bool {
		req, _ := http.NewRequest("GET", base+"/v1/tools/t.echo", nil)
		req.Header.Set("Authorization", "Bearer "+a.keyA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	if !seen(bh) {
		t.Fatal("t.echo hidden before any policy")
	}
	put := a.do(t, a.keyA, "PUT", "/v1/policy", `{"rules":[{"name":"no-echo","effect":"deny","tools":{"ids":["t.echo"]}}]}`)
	if put.status != 200 || seen(a.http.URL) {
		t.Fatalf("the replica that took it: %d %s", put.status, put.raw)
	}
	start := time.Now()
	testkit.WaitFor(t, "the other replica to apply the policy", func() bool { return !seen(bh) })
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v, past the 300 ms TTL and slack", d)
	}
	bad := a.do(t, a.keyA, "PUT", "/v1/policy", `{"rules":[{"effect":"permit","tools":{"auth":["oauth"]}}]}`)
	if bad.status != 400 || !strings.Contains(bad.raw, "rules[0].effect") || !strings.Contains(bad.raw, "rules[0].tools.auth[0]") {
		t.Errorf("a bad policy: %d %s", bad.status, bad.raw)
	}
	if got := a.do(t, a.keyA, "GET", "/v1/policy", ""); !strings.Contains(got.raw, "no-echo") {
		t.Errorf("GET /v1/policy: %s", got.raw)
	}
}

// fastCall posts a stateless tools/call to /mcp as an MCP client does,
// the kind the fast path answers, and returns the answer's body.
func fastCall(t *testing.T, r *rig, key, name, args string) string {
	return fastCallAt(t, r, key, "/mcp", name, args)
}

// consolePage is a console page as the signed-in key sees it.
func consolePage(t *testing.T, r *rig, key, method, path string, form url.Values) string {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, r.http.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.AddCookie(&http.Cookie{Name: uiCookie, Value: sessionOf(t, r, key)})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// consoleRows are the tool ids a catalogue page lists.
func consoleRows(page string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`href="/ui/tools/([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// TestPolicyInTheConsole: an admin sets the tenant's policy on the console
// page (a bad one is refused with its problems, nothing stored), and the
// API then applies it; a person key cannot.
func TestPolicyInTheConsole(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true; c.Policies = c.Store.(PolicyStore) })
	person, _, _ := r.store.CreateAPIKey(context.Background(), "tenant-a", auth.RolePerson, "u1")
	if page := consolePage(t, r, person, "GET", "/ui/policy", nil); !strings.Contains(page, "managed with an admin key") {
		t.Errorf("a person key sees the policy form")
	}
	consolePage(t, r, person, "POST", "/ui/policy", url.Values{"policy": {`{"default":"deny","rules":[]}`}})
	if _, err := r.store.Policy(context.Background(), "tenant-a"); err == nil {
		t.Fatal("a person key stored a policy")
	}
	// A browser keeps the flash cookie the refusal redirects with.
	jar, _ := cookiejar.New(nil)
	base, _ := url.Parse(r.http.URL)
	jar.SetCookies(base, []*http.Cookie{{Name: uiCookie, Value: sessionOf(t, r, r.keyA), Path: "/ui"}})
	browser := &http.Client{Jar: jar}
	resp, err := browser.PostForm(r.http.URL+"/ui/policy", url.Values{"policy": {`{"rules":[{"effect":"permit"}]}`}})
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(bad), "rules[0].effect") {
		t.Errorf("a bad policy's page does not name rules[0].effect")
	}
	if _, err := r.store.Policy(context.Background(), "tenant-a"); err == nil {
		t.Fatal("a bad policy was stored")
	}
	consolePage(t, r, r.keyA, "POST", "/ui/policy", url.Values{"policy": {`{"rules":[{"name":"no-echo","effect":"deny","tools":{"ids":["t.echo"]}}]}`}})
	if page := consolePage(t, r, r.keyA, "GET", "/ui/policy", nil); !strings.Contains(page, "no-echo") {
		t.Errorf("the policy page does not show the saved policy")
	}
	if got := r.do(t, r.keyA, "GET", "/v1/tools/t.echo", ""); got.status != 404 {
		t.Errorf("after the console saved it, t.echo: %d", got.status)
	}
}

// TestToolsets: a toolset is served at /mcp/NAME and by GET
// /v1/tools?toolset=NAME, and a key bound to one sees and runs it only,
// on every door; a tool outside it is refused by name exactly as a denied
// tool (0 upstream requests); an unknown toolset is 404.
func TestToolsets(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true; c.Policies = c.Store.(PolicyStore) })
	ctx := context.Background()
	r.store.PutPolicy(ctx, AllTenants, []byte(`{"rules":[],"toolsets":{"reads":{"mutating":false},"mail":{"ids":["t.mail"]}}}`))
	reads := []string{"t.echo", "t.secret"}
	ids := func(raw string) []string {
		var list struct{ Tools []struct{ ID string } }
		json.Unmarshal([]byte(raw), &list)
		var out []string
		for _, tl := range list.Tools {
			out = append(out, tl.ID)
		}
		slices.Sort(out)
		return out
	}
	if got := ids(r.do(t, r.keyA, "GET", "/v1/tools?toolset=reads", "").raw); !slices.Equal(got, reads) {
		t.Errorf("GET /v1/tools?toolset=reads: %v", got)
	}
	if rp := r.do(t, r.keyA, "GET", "/v1/tools?toolset=nope", ""); rp.status != 404 || !strings.Contains(rp.raw, `no toolset \"nope\"`) {
		t.Errorf("an unknown toolset: %d %s", rp.status, rp.raw)
	}
	if rp := r.do(t, r.keyA, "POST", "/mcp/nope", `{}`); rp.status != 404 {
		t.Errorf("/mcp/nope: %d", rp.status)
	}
	listMCP := func(key, path string) []string {
		cs := mcpSessionAt(t, r.http.URL+path, key)
		var out []string
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tl.Name)
		}
		slices.Sort(out)
		before := r.upCalls.Load()
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.mail", Arguments: map[string]any{}})
		if !slices.Contains(out, "t.mail") && (err == nil || !strings.Contains(err.Error(), `unknown tool "t.mail"`) || r.upCalls.Load() != before) {
			t.Errorf("%s: t.mail called by name: %v, %d upstream requests", path, err, r.upCalls.Load()-before)
		}
		return out
	}
	if got := listMCP(r.keyA, "/mcp/reads"); !slices.Equal(got, reads) {
		t.Errorf("/mcp/reads lists %v", got)
	}
	if got := listMCP(r.keyA, "/mcp/mail"); !slices.Equal(got, []string{"t.mail"}) {
		t.Errorf("/mcp/mail lists %v", got)
	}
	if !strings.Contains(fastCallAt(t, r, r.keyA, "/mcp/reads", "t.mail", `{}`), `unknown tool \"t.mail\"`) {
		t.Error("the fast path ran a tool outside its toolset")
	}

	// A key bound to a toolset: that toolset on every door, no other.
	made := r.do(t, r.keyA, "POST", "/v1/keys", `{"role":"service","toolset":"reads"}`)
	var created struct {
		Key  string
		Info struct{ Toolset string }
	}
	json.Unmarshal([]byte(made.raw), &created)
	if made.status != 201 || created.Info.Toolset != "reads" {
		t.Fatalf("a bound key: %d %s", made.status, made.raw)
	}
	bound := created.Key
	if got := ids(r.do(t, bound, "GET", "/v1/tools", "").raw); !slices.Equal(got, reads) {
		t.Errorf("the bound key lists %v", got)
	}
	before := r.upCalls.Load()
	if rp := r.do(t, bound, "POST", "/v1/tools/t.mail/invoke", `{"input":{}}`); rp.code() != "tool-not-found" || r.upCalls.Load() != before {
		t.Errorf("the bound key invoked t.mail: %s", rp.raw)
	}
	if got := listMCP(bound, "/mcp"); !slices.Equal(got, reads) {
		t.Errorf("the bound key's /mcp lists %v", got)
	}
	if rp := r.do(t, bound, "POST", "/mcp/mail", `{}`); rp.status != 404 {
		t.Errorf("the bound key reached another toolset: %d", rp.status)
	}
	if got := consoleRows(consolePage(t, r, bound, "GET", "/ui/", nil)); len(got) != 2 {
		t.Errorf("the bound key's console lists %v", got)
	}
}

// fastCallAt is fastCall at another MCP path (a toolset's).
func fastCallAt(t *testing.T, r *rig, key, path, name, args string) string {
	return mcpPostAt(t, r, key, path, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`)
}

// mcpPostAt posts one stateless JSON-RPC body to an MCP path as an MCP
// client does, and returns the answer's body.
func mcpPostAt(t *testing.T, r *rig, key, path, body string) string {
	req, _ := http.NewRequest("POST", r.http.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
