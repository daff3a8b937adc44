package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// discoveryRig is a rig whose callers see discovery mode past threshold
// tools, with policies.
func discoveryRig(t *testing.T, threshold int) *rig {
	return newRig(t, func(c *Config) { c.MCPDiscoveryThreshold = threshold; c.Policies = c.Store.(PolicyStore) })
}

// listNames are the names a session's tools/list gives, sorted.
func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// found is what search_tools answers: the names it found, best first.
func found(t *testing.T, cs *mcp.ClientSession, query string) []string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": query}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools %q: %v %+v", query, err, res)
	}
	var out struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
		t.Fatalf("search_tools' answer: %v: %s", err, resultText(res))
	}
	names := []string{}
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// call calls name with args on cs.
func call(cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
}

var discoveryNames = []string{callToolName, describeToolName, searchToolName}

// TestMCPDiscoveryMode: with the Go SDK's client, through the fast path
// and through the SDK alone: a key that sees more tools than the
// threshold lists the 3 discovery tools, ?catalogue=full lists all 3 of
// its tools; search_tools finds t.echo (1 hit for "echo"), describe_tool
// gives its tools/list entry, and call_tool's answers are a direct call's
// (outside data framed, the input refused alike, 1 upstream request per
// call that runs, 0 for one refused, an unknown tool's error).
func TestMCPDiscoveryMode(t *testing.T) {
	r := discoveryRig(t, 2)
	for _, sdkOnly := range []bool{false, true} {
		r.srv.noFastPath.Store(sdkOnly)
		cs := mcpSessionAt(t, r.http.URL+"/mcp", r.keyA)
		full := mcpSessionAt(t, r.http.URL+"/mcp?catalogue=full", r.keyA)
		if got := listNames(t, cs); !slices.Equal(got, discoveryNames) {
			t.Fatalf("sdk only %v: /mcp lists %v", sdkOnly, got)
		}
		if got := listNames(t, full); !slices.Equal(got, []string{"t.echo", "t.mail", "t.secret"}) {
			t.Fatalf("sdk only %v: ?catalogue=full lists %v", sdkOnly, got)
		}
		if got := found(t, cs, "echo"); !slices.Equal(got, []string{"t.echo"}) {
			t.Errorf("sdk only %v: search for echo: %v", sdkOnly, got)
		}

		// describe_tool: the entry tools/list gives.
		res, err := call(cs, describeToolName, map[string]any{"name": "t.echo"})
		if err != nil || res.IsError {
			t.Fatalf("describe_tool: %v %+v", err, res)
		}
		var described mcp.Tool
		json.Unmarshal([]byte(resultText(res)), &described)
		var listed *mcp.Tool
		for tl := range full.Tools(context.Background(), nil) {
			if tl.Name == "t.echo" {
				listed = tl
			}
		}
		a, _ := json.Marshal(described)
		b, _ := json.Marshal(listed)
		if string(a) != string(b) {
			t.Errorf("describe_tool gives\n%s\ntools/list\n%s", a, b)
		}

		// call_tool: a direct call's answer.
		for _, args := range []map[string]any{{"id": "7"}, {}} {
			before := r.upCalls.Load()
			via, err1 := call(cs, callToolName, map[string]any{"name": "t.echo", "arguments": args})
			direct, err2 := call(full, "t.echo", args)
			if err1 != nil || err2 != nil {
				t.Fatalf("call_tool: %v; direct: %v", err1, err2)
			}
			want := int64(2) // each call's one request
			if len(args) == 0 {
				want = 0 // refused by its input check
			}
			if n := r.upCalls.Load() - before; n != want {
				t.Errorf("sdk only %v, %v: %d upstream requests for both calls, want %d", sdkOnly, args, n, want)
			}
			if g, w := unmark(via), unmark(direct); !jsonEqual(g, w) {
				t.Errorf("sdk only %v, %v: call_tool answers\n%v\na direct call\n%v", sdkOnly, args, g, w)
			}
			if len(args) > 0 && (via.Meta[OutsideDataMeta] != true || !strings.Contains(unframe(t, resultText(via)), `"path":"/items/7"`)) {
				t.Errorf("call_tool's answer is not framed outside data: %+v", via)
			}
		}
		_, viaErr := call(cs, callToolName, map[string]any{"name": "t.nope"})
		_, directErr := call(full, "t.nope", map[string]any{})
		if viaErr == nil || directErr == nil || viaErr.Error() != directErr.Error() || !strings.Contains(viaErr.Error(), `unknown tool \"t.nope\"`) && !strings.Contains(viaErr.Error(), `unknown tool "t.nope"`) {
			t.Errorf("call_tool of an unknown tool: %v; direct: %v", viaErr, directErr)
		}
	}
	r.srv.noFastPath.Store(false)
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestMCPDiscoveryDeniedIsUnknown: a tool a policy denies, or that the
// toolset of the endpoint leaves out, is never found (0 hits, where
// another tenant's key finds it: 1), and describing or calling it is
// answered as an unknown tool is, byte for byte, with 0 upstream requests.
func TestMCPDiscoveryDeniedIsUnknown(t *testing.T) {
	r := discoveryRig(t, 1)
	ctx := context.Background()
	if err := r.store.PutPolicy(ctx, "tenant-a", []byte(`{"rules":[{"name":"no-mail","effect":"deny","tools":{"ids":["t.mail"]}}],"toolsets":{"echo":{"ids":["t.echo"]}}}`)); err != nil {
		t.Fatal(err)
	}
	a := mcpSessionAt(t, r.http.URL+"/mcp", r.keyA)
	b := mcpSessionAt(t, r.http.URL+"/mcp", r.keyB)
	if got := found(t, a, "sends mail"); len(got) != 0 {
		t.Errorf("a denied tool found: %v", got)
	}
	if got := found(t, b, "sends mail"); !slices.Equal(got, []string{"t.mail"}) {
		t.Errorf("another tenant's search: %v", got)
	}
	before := r.upCalls.Load()
	same := func(what string, denied, unknown error) {
		t.Helper()
		if denied == nil || unknown == nil || strings.ReplaceAll(denied.Error(), "t.mail", "t.nope") != unknown.Error() {
			t.Errorf("%s of a denied tool: %v; of an unknown one: %v", what, denied, unknown)
		}
	}
	_, d := call(a, describeToolName, map[string]any{"name": "t.mail"})
	_, u := call(a, describeToolName, map[string]any{"name": "t.nope"})
	same("describe_tool", d, u)
	_, d = call(a, callToolName, map[string]any{"name": "t.mail", "arguments": map[string]any{}})
	_, u = call(a, callToolName, map[string]any{"name": "t.nope", "arguments": map[string]any{}})
	same("call_tool", d, u)

	// The toolset's endpoint: only t.echo.
	echo := mcpSessionAt(t, r.http.URL+"/mcp/echo?catalogue=search", r.keyA)
	if got := found(t, echo, "uses a secret"); len(got) != 0 {
		t.Errorf("a tool outside the toolset found: %v", got)
	}
	if got := found(t, a, "uses a secret"); !slices.Equal(got, []string{"t.secret"}) {
		t.Errorf("/mcp's search: %v", got)
	}
	_, d = call(echo, callToolName, map[string]any{"name": "t.secret", "arguments": map[string]any{}})
	_, u = call(echo, callToolName, map[string]any{"name": "t.nope", "arguments": map[string]any{}})
	if d == nil || u == nil || strings.ReplaceAll(d.Error(), "t.secret", "t.nope") != u.Error() {
		t.Errorf("call_tool of a tool outside the toolset: %v; of an unknown one: %v", d, u)
	}
	if n := r.upCalls.Load() - before; n != 0 {
		t.Errorf("%d upstream requests for denied tools", n)
	}
}

// TestMCPDiscoveryThresholdPerKey: the count is the key's own: with a
// threshold of 2, tenant-a, whose policy denies one of the 3 tools, lists
// its 2 tools; tenant-b lists the 3 discovery tools. ?catalogue=search
// asks for them under the threshold, and an unknown ?catalogue= is a 400
// saying what to use.
func TestMCPDiscoveryThresholdPerKey(t *testing.T) {
	r := discoveryRig(t, 2)
	ctx := context.Background()
	r.store.PutPolicy(ctx, "tenant-a", []byte(`{"rules":[{"name":"no-mail","effect":"deny","tools":{"ids":["t.mail"]}}]}`))
	if got := listNames(t, mcpSessionAt(t, r.http.URL+"/mcp", r.keyA)); !slices.Equal(got, []string{"t.echo", "t.secret"}) {
		t.Errorf("tenant-a, 2 tools: %v", got)
	}
	if got := listNames(t, mcpSessionAt(t, r.http.URL+"/mcp", r.keyB)); !slices.Equal(got, discoveryNames) {
		t.Errorf("tenant-b, 3 tools: %v", got)
	}
	if got := listNames(t, mcpSessionAt(t, r.http.URL+"/mcp?catalogue=search", r.keyA)); !slices.Equal(got, discoveryNames) {
		t.Errorf("tenant-a asking for discovery: %v", got)
	}
	off := newRig(t)
	if got := listNames(t, mcpSessionAt(t, off.http.URL+"/mcp", off.keyA)); len(got) != 3 {
		t.Errorf("no threshold: %v", got)
	}
	req, _ := http.NewRequest("POST", r.http.URL+"/mcp?catalogue=some", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+r.keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("?catalogue=some: %d", resp.StatusCode)
	}
}

// TestMCPDiscoveryFastPathAgrees: the answers to discovery mode's
// tools/list and to calls of its tools are the same bytes with the fast
// path as through the SDK alone, and the fast path answers none of the
// lists (its count does not move for them).
func TestMCPDiscoveryFastPathAgrees(t *testing.T) {
	r := discoveryRig(t, 2)
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"echo items"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"describe_tool","arguments":{"name":"t.secret"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"t.echo","arguments":{"id":"3"}}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"t.echo","arguments":{"id":3}}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"t.nope"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search_tools","arguments":{}}}`,
	}
	marker := regexp.MustCompile(`[0-9a-f]{32}`)
	for _, body := range bodies {
		r.srv.noFastPath.Store(false)
		fast0 := r.srv.fastCalls.Load()
		fast := marker.ReplaceAllString(mcpPostAt(t, r, r.keyA, "/mcp", body), "M")
		if strings.Contains(body, "tools/list") && r.srv.fastCalls.Load() != fast0 {
			t.Errorf("the fast path answered %s", body)
		}
		r.srv.noFastPath.Store(true)
		sdk := marker.ReplaceAllString(mcpPostAt(t, r, r.keyA, "/mcp", body), "M")
		if fast != sdk || !strings.Contains(sdk, `"result"`) && !strings.Contains(sdk, `"error"`) {
			t.Errorf("%s:\nfast %s\nsdk  %s", body, fast, sdk)
		}
	}
	// 2026-07-28: the discovery tools' results are marked complete, as
	// the SDK marks its tools' (that version's clients refuse one that
	// is not).
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for name, args := range map[string]string{searchToolName: `{"query":"echo"}`, describeToolName: `{"name":"t.echo"}`, callToolName: `{"name":"t.echo","arguments":{"id":"1"}}`} {
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,` + meta + `}}`
		var answers []string
		for _, sdkOnly := range []bool{false, true} {
			r.srv.noFastPath.Store(sdkOnly)
			req, _ := http.NewRequest("POST", r.http.URL+"/mcp", strings.NewReader(body))
			for k, v := range map[string]string{"Authorization": "Bearer " + r.keyA, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
				"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name} {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers = append(answers, marker.ReplaceAllString(string(b), "M"))
		}
		if !strings.Contains(answers[0], `"resultType":"complete"`) || answers[0] != answers[1] {
			t.Errorf("2026-07-28 %s:\nfast %s\nsdk  %s", name, answers[0], answers[1])
		}
	}
	r.srv.noFastPath.Store(false)
}

// TestMCPDiscoveryApprovals: an unattended call through call_tool of a
// tool that needs a person's yes asks exactly as a direct call does: over
// 2025-11-25 the same refusal naming an approval request (1 pending
// approval per call, 0 upstream requests); over 2026-07-28 the client is
// asked once per call, while 0 upstream requests were made, and on its
// yes the call runs: 1 upstream request each.
func TestMCPDiscoveryApprovals(t *testing.T) {
	r := newGuardedRig(t, 0)
	r.srv.cfg.MCPDiscoveryThreshold = 1
	ctx := context.Background()
	apr := regexp.MustCompile(`apr_[A-Za-z0-9_-]+`)
	meta := mcp.Meta{CallContextMeta: map[string]any{"run": "r1", "unattended": true}}
	pending := func() int {
		return strings.Count(r.do(t, r.keyA, "GET", "/v1/approvals?state=pending", "").raw, `"id":"apr_`)
	}
	direct := func(cs *mcp.ClientSession, input any) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.guarded", Arguments: input, Meta: meta})
	}
	via := func(cs *mcp.ClientSession, input any) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "t.guarded", "arguments": input}, Meta: meta})
	}

	start := r.upCalls.Load()
	old := httpSession(t, r.rig, mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil), r.keyA, "u1", "2025-11-25")
	if got := listNames(t, old); !slices.Equal(got, discoveryNames) {
		t.Fatalf("lists %v", got)
	}
	d, err1 := direct(old, map[string]any{"a": 1})
	v, err2 := via(old, map[string]any{"a": 1})
	if err1 != nil || err2 != nil {
		t.Fatalf("direct %v, call_tool %v", err1, err2)
	}
	db, _ := json.Marshal(unmark(d))
	vb, _ := json.Marshal(unmark(v))
	if apr.ReplaceAllString(string(db), "APR") != apr.ReplaceAllString(string(vb), "APR") || !apr.Match(db) || !v.IsError {
		t.Errorf("2025-11-25: direct\n%s\ncall_tool\n%s", db, vb)
	}
	if n := pending(); n != 2 {
		t.Errorf("%d pending approvals, want 2 (one per call)", n)
	}
	if n := r.upCalls.Load() - start; n != 0 {
		t.Errorf("%d upstream requests while asking", n)
	}

	for name, run := range map[string]func(*mcp.ClientSession, any) (*mcp.CallToolResult, error){"direct": direct, "call_tool": via} {
		start := r.upCalls.Load()
		a := &asker{answer: yes, read: func() int64 { return r.upCalls.Load() - start }}
		cs := httpSession(t, r.rig, a.client(), r.keyA, "u1", "2026-07-28")
		res, err := run(cs, map[string]any{"a": name})
		if err != nil || res.IsError || !strings.Contains(unframe(t, resultText(res)), `"path":"/g"`) {
			t.Fatalf("2026-07-28, %s: the approved call: %v %+v", name, err, res)
		}
		if a.count() != 1 || a.seen[0] != 0 || a.asked[0].Mode != "form" {
			t.Errorf("2026-07-28, %s: asked %d times, %v upstream requests when asked", name, a.count(), a.seen)
		}
		if n := r.upCalls.Load() - start; n != 1 {
			t.Errorf("2026-07-28, %s: %d upstream requests, want 1", name, n)
		}
	}
}

// TestRESTToolSearch: GET /v1/tools?q= gives the manifests of the tools
// the caller sees that best match, best first: 1 for "echo"; a denied
// tool 0 times where another tenant finds it once; ?limit= out of 1..50
// is a 400.
func TestRESTToolSearch(t *testing.T) {
	r := discoveryRig(t, 0)
	r.store.PutPolicy(context.Background(), "tenant-a", []byte(`{"rules":[{"name":"no-mail","effect":"deny","tools":{"ids":["t.mail"]}}]}`))
	ids := func(key, q string) []string {
		rp := r.do(t, key, "GET", "/v1/tools?"+q, "")
		var list struct{ Tools []struct{ ID string } }
		json.Unmarshal([]byte(rp.raw), &list)
		out := []string{}
		for _, tl := range list.Tools {
			out = append(out, tl.ID)
		}
		return out
	}
	if got := ids(r.keyA, "q=echo"); !slices.Equal(got, []string{"t.echo"}) {
		t.Errorf("q=echo: %v", got)
	}
	if got := ids(r.keyA, "q=sends+mail"); len(got) != 0 {
		t.Errorf("a denied tool found: %v", got)
	}
	if got := ids(r.keyB, "q=sends+mail"); !slices.Equal(got, []string{"t.mail"}) {
		t.Errorf("tenant-b: %v", got)
	}
	if got := ids(r.keyB, "q=echo+secret+mail&limit=2"); len(got) != 2 {
		t.Errorf("limit=2: %v", got)
	}
	for _, bad := range []string{"0", "51", "x", "1.5"} {
		if rp := r.do(t, r.keyA, "GET", "/v1/tools?q=echo&limit="+bad, ""); rp.status != 400 || !strings.Contains(rp.raw, "give a number from 1 to 50") {
			t.Errorf("limit=%s: %d %s", bad, rp.status, rp.raw)
		}
	}
}

// TestMCPDiscoveryListChanged: a 2026-07-28 listener in discovery mode is
// told of a reload that adds a tool once (its caller's view changed, and
// with it what search finds), after which the list is still the 3
// discovery tools and search finds the new tool (1 hit); a reload that
// changes nothing tells it nothing.
func TestMCPDiscoveryListChanged(t *testing.T) {
	r := discoveryRig(t, 2)
	var l listChangedCounter
	l.listenHTTP(t, r.http.URL+"/mcp", r.keyA)
	if err := os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "stars.json"), []byte(`{"id":"t.stars","description":"Counts the stars of a repository.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"http://127.0.0.1:1/stars"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the listener to be told of the new tool", func() bool { return l.n.Load() >= 1 })
	cs := mcpSessionAt(t, r.http.URL+"/mcp", r.keyA)
	if got := listNames(t, cs); !slices.Equal(got, discoveryNames) {
		t.Errorf("after the reload: %v", got)
	}
	if got := found(t, cs, "repository stars"); !slices.Equal(got, []string{"t.stars"}) {
		t.Errorf("search for the new tool: %v", got)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	r.srv.recheckViews()
	if n := l.n.Load(); n != 1 {
		t.Errorf("%d notifications, want 1", n)
	}
}

// TestMCPDiscoveryOnStdio: a stdio server (httptools mcp) past the
// threshold lists the 3 discovery tools too; call_tool runs a tool (1
// upstream request, its answer framed as outside data). A stdio server of
// a toolset of 2 tools lists them whole under a threshold of 2; over a
// threshold of 1 its search finds its own tool (1 hit) and not another
// (0 hits), and calling the other is an unknown tool, with 0 upstream
// requests.
func TestMCPDiscoveryOnStdio(t *testing.T) {
	r := discoveryRig(t, 2)
	ctx := context.Background()
	r.store.PutPolicy(ctx, AllTenants, []byte(`{"rules":[],"toolsets":{"two":{"ids":["t.echo","t.mail"]}}}`))
	connect := func(toolset string) *mcp.ClientSession {
		ms := r.srv.MCPToolsetServer("tenant-a", toolset, func(*mcp.CallToolRequest) string { return "" })
		ct, st := mcp.NewInMemoryTransports()
		ss, err := ms.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect("")
	if got := listNames(t, cs); !slices.Equal(got, discoveryNames) {
		t.Fatalf("stdio lists %v", got)
	}
	before := r.upCalls.Load()
	res, err := call(cs, callToolName, map[string]any{"name": "t.echo", "arguments": map[string]any{"id": "5"}})
	if err != nil || res.IsError || res.Meta[OutsideDataMeta] != true || !strings.Contains(unframe(t, resultText(res)), `"path":"/items/5"`) {
		t.Errorf("call_tool on stdio: %v %+v", err, res)
	}
	if n := r.upCalls.Load() - before; n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
	if got := listNames(t, connect("two")); !slices.Equal(got, []string{"t.echo", "t.mail"}) {
		t.Errorf("the toolset's stdio server under the threshold lists %v", got)
	}
	r.srv.cfg.MCPDiscoveryThreshold = 1
	two := connect("two")
	if got := found(t, two, "sends mail"); !slices.Equal(got, []string{"t.mail"}) {
		t.Errorf("the toolset's search for its own tool: %v", got)
	}
	if got := found(t, two, "uses a secret"); len(got) != 0 {
		t.Errorf("the toolset's search found %v", got)
	}
	before = r.upCalls.Load()
	_, d := call(two, callToolName, map[string]any{"name": "t.secret"})
	_, u := call(two, callToolName, map[string]any{"name": "t.nope"})
	if d == nil || u == nil || strings.ReplaceAll(d.Error(), "t.secret", "t.nope") != u.Error() {
		t.Errorf("call_tool of a tool outside the toolset: %v; of an unknown one: %v", d, u)
	}
	if n := r.upCalls.Load() - before; n != 0 {
		t.Errorf("%d upstream requests for a tool outside the toolset", n)
	}
}
