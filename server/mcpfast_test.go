package server

import (
	"bytes"
	"encoding/base64"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPFastPathAgreesWithTheSDK sends every request twice, once answered
// by the fast path (or handed to the SDK when it is not the fast path's) and
// once by the SDK alone, and wants the same status, media type and JSON.
func TestMCPFastPathAgreesWithTheSDK(t *testing.T) {
	r := newRig(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/fail":
			w.WriteHeader(500)
			io.WriteString(w, `{"error":"boom"}`)
		case "/text":
			io.WriteString(w, "plain <text> & \"quotes\"\n\u2028")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[{"a":1},{"b":"<x>"}]`)
		}
	}))
	defer up.Close()
	dir := r.srv.cfg.ToolsDir
	for name, body := range map[string]string{
		"fail.json": `{"id":"t.fail","description":"Fails.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/fail"}}`,
		"text.json": `{"id":"t.text","description":"Text.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"string"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/text","parseJson":false}}`,
		"list.json": `{"id":"t.list","description":"List.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"array"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/list"}}`,
		"free.json": `{"id":"t.free","description":"Any output.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/list"}}`,
		"guard.json": `{"id":"t.guard","description":"Needs a yes when unattended.","version":"1.0.0","mutating":false,"needsApprovalWhenUnattended":true,"input":{"type":"object"},"output":{},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/list"}}`,
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	call := func(id, name, args string) string {
		b := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `"`
		if args != "" {
			b += `,"arguments":` + args
		}
		return b + `}}`
	}
	std := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range std {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	// 2026-07-28: the request's own _meta, and its method and tool in
	// headers.
	call26 := func(id, name, args, meta string) string {
		b := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `"`
		if args != "" {
			b += `,"arguments":` + args
		}
		return b + `,"_meta":` + meta + `}}`
	}
	meta26 := func(extra string) string {
		return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}` + extra + `}`
	}
	m26 := meta26("")
	h26 := func(method, name string, more ...string) map[string]string {
		h := with("MCP-Protocol-Version", "2026-07-28")
		h["Mcp-Method"] = method
		if name != "" {
			h["Mcp-Name"] = name
		}
		for i := 0; i+1 < len(more); i += 2 {
			if more[i+1] == "" {
				delete(h, more[i])
			} else {
				h[more[i]] = more[i+1]
			}
		}
		return h
	}
	list26 := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{` + params + `"_meta":` + m26 + `}}`
	}
	cases := []struct {
		name    string
		body    string
		headers map[string]string
		fast    bool
	}{
		{"2026: object output", call26("40", "t.echo", `{"id":"7"}`, m26), h26("tools/call", "t.echo"), true},
		{"2026: string id", call26(`"a-é"`, "t.echo", `{"id":"7"}`, m26), h26("tools/call", "t.echo"), true},
		{"2026: input refused", call26("41", "t.echo", `{}`, m26), h26("tools/call", "t.echo"), true},
		{"2026: no arguments", call26("42", "t.secret", "", m26), h26("tools/call", "t.secret"), true},
		{"2026: upstream 500", call26("43", "t.fail", `{}`, m26), h26("tools/call", "t.fail"), true},
		{"2026: text output wrapped", call26("44", "t.text", `{}`, m26), h26("tools/call", "t.text"), true},
		{"2026: empty output schema", call26("45", "t.free", `{}`, m26), h26("tools/call", "t.free"), true},
		{"2026: person without connection", call26("46", "t.mail", `{}`, m26), h26("tools/call", "t.mail", "X-Person-Id", "ann"), true},
		{"2026: no client info", call26("47", "t.echo", `{"id":"7"}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`), h26("tools/call", "t.echo"), true},
		{"2026: roots and sampling", call26("48", "t.echo", `{"id":"7"}`, strings.Replace(m26, `"clientCapabilities":{}`, `"clientCapabilities":{"roots":{"listChanged":true},"sampling":{}}`, 1)), h26("tools/call", "t.echo"), true},
		{"2026: trace context", call26("49", "t.echo", `{"id":"7"}`, meta26(`,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`)), h26("tools/call", "t.echo"), true},
		{"2026: tools/list", list26("50", ""), h26("tools/list", ""), true},
		{"2026: tools/list, a cursor it did not give", list26("51", `"cursor":"`+gobCursor("t.echo")+`",`), h26("tools/list", ""), false},
		{"2026: server/discover", `{"jsonrpc":"2.0","id":52,"method":"server/discover","params":{"_meta":` + m26 + `}}`, h26("server/discover", ""), true},
		// A client that answers elicitations, calling a tool that asks nothing: the fast path's.
		{"2026: client answers elicitations", call26("59", "t.echo", `{"id":"7"}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`), h26("tools/call", "t.echo"), true},
		{"2026: a tool that may ask, a client that cannot answer", call26("58", "t.guard", `{}`, m26), h26("tools/call", "t.guard"), true},
		// The SDK's to answer:
		{"2026: a tool that may ask, a client that answers", call26("60", "t.guard", `{}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`), h26("tools/call", "t.guard"), false},
		{"2026: no _meta", call("61", "t.echo", `{"id":"7"}`), h26("tools/call", "t.echo"), false},
		{"2026: _meta of another version", call26("62", "t.echo", `{"id":"7"}`, strings.Replace(m26, "2026-07-28", "2025-11-25", 1)), h26("tools/call", "t.echo"), false},
		{"2026: no capabilities", call26("63", "t.echo", `{"id":"7"}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), h26("tools/call", "t.echo"), false},
		{"2026: client info not one", call26("64", "t.echo", `{"id":"7"}`, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":1},"io.modelcontextprotocol/clientCapabilities":{}}`), h26("tools/call", "t.echo"), false},
		{"2026: log level", call26("65", "t.echo", `{"id":"7"}`, meta26(`,"io.modelcontextprotocol/logLevel":"debug"`)), h26("tools/call", "t.echo"), false},
		{"2026: no Mcp-Method", call26("66", "t.echo", `{"id":"7"}`, m26), h26("tools/call", "t.echo", "Mcp-Method", ""), false},
		{"2026: Mcp-Method of another", call26("67", "t.echo", `{"id":"7"}`, m26), h26("tools/list", "t.echo"), false},
		{"2026: no Mcp-Name", call26("68", "t.echo", `{"id":"7"}`, m26), h26("tools/call", ""), false},
		{"2026: Mcp-Name of another", call26("69", "t.echo", `{"id":"7"}`, m26), h26("tools/call", "t.text"), false},
		{"2026: unknown tool", call26("70", "t.nope", `{}`, m26), h26("tools/call", "t.nope"), false},
		{"2026: tools/list without _meta", `{"jsonrpc":"2.0","id":71,"method":"tools/list"}`, h26("tools/list", ""), false},
		{"2026: server/discover, Mcp-Method of another", `{"jsonrpc":"2.0","id":72,"method":"server/discover","params":{"_meta":` + m26 + `}}`, h26("tools/list", ""), false},
		{"server/discover, older protocol", `{"jsonrpc":"2.0","id":73,"method":"server/discover","params":{"_meta":` + m26 + `}}`, std, false},
		{"object output", call("1", "t.echo", `{"id":"7"}`), std, true},
		{"string id", call(`"a\u0041-é"`, "t.echo", `{"id":"7"}`), std, true},
		{"largest exact id", call("9007199254740992", "t.echo", `{"id":"7"}`), std, true},
		{"negative id", call("-3", "t.echo", `{"id":"7"}`), std, true},
		{"input refused", call("2", "t.echo", `{}`), std, true},
		{"input wrong type", call("2", "t.echo", `{"id":7}`), std, true},
		{"no arguments", call("3", "t.secret", ""), std, true},
		{"upstream 500", call("4", "t.fail", `{}`), std, true},
		{"text output wrapped", call("5", "t.text", `{}`), std, true},
		{"array output wrapped", call("6", "t.list", `{}`), std, true},
		{"empty output schema", call("7", "t.free", `{}`), std, true},
		{"person without connection", call("8", "t.mail", `{}`), with("X-Person-Id", "ann"), true},
		{"no version header", call("9", "t.echo", `{"id":"7"}`), with("MCP-Protocol-Version", ""), true},
		{"version 2025-03-26", call("9", "t.echo", `{"id":"7"}`), with("MCP-Protocol-Version", "2025-03-26"), true},
		{"accept wildcard", call("10", "t.echo", `{"id":"7"}`), with("Accept", "*/*"), true},
		{"content type with charset", call("11", "t.echo", `{"id":"7"}`), with("Content-Type", "application/json; charset=utf-8"), true},
		{"whitespace around", " \n" + call("12", "t.echo", `{"id":"7"}`) + "\n", std, true},
		{"fractional id", call("1.5", "t.echo", `{"id":"7"}`), std, true},                 // echoed as sent on both paths
		{"id past 2^53", call("9007199254740993", "t.echo", `{"id":"7"}`), std, true},     // echoed as sent on both paths
		{"id past int64", call("9223372036854775808", "t.echo", `{"id":"7"}`), std, true}, // echoed as sent on both paths
		{"id with exponent", call("1e2", "t.echo", `{"id":"7"}`), std, true},              // echoed as sent on both paths
		// The SDK's to answer:
		{"unknown tool", call("20", "t.nope", `{}`), std, false},
		{"null id", call("null", "t.echo", `{"id":"7"}`), std, false},
		{"notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t.echo","arguments":{"id":"7"}}}`, std, false},
		{"arguments an array", call("21", "t.echo", `[1]`), std, false},
		{"arguments null", call("21", "t.echo", `null`), std, false},
		{"meta", `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"t.echo","arguments":{"id":"7"},"_meta":{"progressToken":1}}}`, std, false},
		{"extra member", `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"t.echo"},"x":1}`, std, false},
		{"no version member", `{"id":24,"method":"tools/call","params":{"name":"t.echo"}}`, std, false},
		{"wrong version tag", `{"jsonrpc":"1.0","id":24,"method":"tools/call","params":{"name":"t.echo"}}`, std, false},
		{"batch", "[" + call("25", "t.echo", `{"id":"7"}`) + "]", std, false},
		{"duplicate member", `{"jsonrpc":"2.0","id":26,"id":27,"method":"tools/call","params":{"name":"t.echo","arguments":{"id":"7"}}}`, std, false},
		{"newer protocol", call("28", "t.echo", `{"id":"7"}`), with("MCP-Protocol-Version", "2026-07-28"), false},
		{"unknown protocol", call("29", "t.echo", `{"id":"7"}`), with("MCP-Protocol-Version", "1999-01-01"), false},
		{"accept json only", call("30", "t.echo", `{"id":"7"}`), with("Accept", "application/json"), false},
		{"form content type", call("31", "t.echo", `{"id":"7"}`), with("Content-Type", "text/plain"), false},
		{"accept reordered", call("39", "t.echo", `{"id":"7"}`), with("Accept", "text/event-stream, application/json"), true},
		// Served by the SDK, but not of the fast path's shape (mcpfast_shape.go):
		{"accept with q", call("39", "t.echo", `{"id":"7"}`), with("Accept", "application/json;q=0.9, text/event-stream"), false},
		{"content type upper case", call("39", "t.echo", `{"id":"7"}`), with("Content-Type", "Application/JSON"), false},
		{"origin", call("39", "t.echo", `{"id":"7"}`), with("Origin", "http://localhost"), false},
		{"tools/list", `{"jsonrpc":"2.0","id":32,"method":"tools/list"}`, std, true},
		{"tools/list, empty params", `{"jsonrpc":"2.0","id":33,"method":"tools/list","params":{}}`, std, true},
		{"tools/list, a cursor it did not give, past one", `{"jsonrpc":"2.0","id":34,"method":"tools/list","params":{"cursor":"` + gobCursor("t.list") + `"}}`, std, false},
		{"tools/list, a cursor it did not give, past all", `{"jsonrpc":"2.0","id":35,"method":"tools/list","params":{"cursor":"` + gobCursor("zzz") + `"}}`, std, false},
		{"tools/list, a bad cursor", `{"jsonrpc":"2.0","id":36,"method":"tools/list","params":{"cursor":"!!"}}`, std, false},
		{"tools/list, meta", `{"jsonrpc":"2.0","id":37,"method":"tools/list","params":{"_meta":{}}}`, std, false},
		{"tools/list, newer protocol", `{"jsonrpc":"2.0","id":38,"method":"tools/list"}`, with("MCP-Protocol-Version", "2026-07-28"), false},
		{"not json", `{"jsonrpc":"2.0",`, std, false},
	}
	send := func(body string, headers map[string]string) (int, string, string, any) {
		req, _ := http.NewRequest("POST", r.http.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+r.keyA)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v any
		if json.Unmarshal(b, &v) != nil {
			v = strings.TrimSpace(string(b))
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), v
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.srv.noFastPath.Store(false)
			before := r.srv.fastCalls.Load()
			fs, fct, fcc, fv := send(c.body, c.headers)
			if served := r.srv.fastCalls.Load() > before; served != c.fast {
				t.Errorf("fast path served it: %v, want %v", served, c.fast)
			}
			r.srv.noFastPath.Store(true)
			ss, sct, scc, sv := send(c.body, c.headers)
			if fs != ss || fct != sct || fcc != scc {
				t.Errorf("fast: %d %q %q; SDK: %d %q %q", fs, fct, fcc, ss, sct, scc)
			}
			if !reflect.DeepEqual(unmark(fv), unmark(sv)) {
				fb, _ := json.Marshal(fv)
				sb, _ := json.Marshal(sv)
				t.Errorf("fast:\n%s\nSDK:\n%s", fb, sb)
			}
		})
	}
	r.srv.noFastPath.Store(false)
}

// FuzzMCPFastPath: for any body, the fast path either leaves the request to
// the SDK or answers exactly what the SDK answers.
func FuzzMCPFastPath(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t.echo","arguments":{"id":"7"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t.echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"t.secret"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t.echo","arguments":{"id":"\u0037"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"id":1,"method":"tools/call","params":{"name":"t.echo"}}`,
	} {
		f.Add(seed)
	}
	r := newRig(f)
	h := r.srv.Handler()
	send := func(body string) (int, string, any) {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+r.keyA)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var v any
		if json.Unmarshal(rec.Body.Bytes(), &v) != nil {
			v = strings.TrimSpace(rec.Body.String())
		}
		return rec.Code, rec.Header().Get("Content-Type"), v
	}
	f.Fuzz(func(t *testing.T, body string) {
		before := r.srv.fastCalls.Load()
		r.srv.noFastPath.Store(false)
		fs, fct, fv := send(body)
		if r.srv.fastCalls.Load() == before {
			return // the SDK answered both times
		}
		r.srv.noFastPath.Store(true)
		ss, sct, sv := send(body)
		r.srv.noFastPath.Store(false)
		if fs != ss || fct != sct || !reflect.DeepEqual(unmark(fv), unmark(sv)) {
			fb, _ := json.Marshal(fv)
			sb, _ := json.Marshal(sv)
			t.Errorf("body %q\nfast: %d %s %s\nSDK:  %d %s %s", body, fs, fct, fb, ss, sct, sb)
		}
	})
}

// TestMCPListPagesAgreeWithTheSDK: 1,500 tools make two pages; each page,
// fetched by the fast path and by the SDK with the cursor the first gave,
// is the same, and a policy that hides some tools hides the same ones from
// both (after paging, as mcpPolicy filters the SDK's pages).
func TestMCPListPagesAgreeWithTheSDK(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Policies = c.Store.(PolicyStore); c.PolicyTTL = 100 * time.Millisecond })
	dir := r.srv.cfg.ToolsDir
	for i := range 1500 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("g%04d.json", i)), []byte(fmt.Sprintf(`{"id":"gen.tool-%04d","description":"Generated %d.","version":"1.0.0","mutating":%v,
			"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/%d"}}`, i, i, i%3 == 0, i)), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	version := "" // the protocol of the lists: none, or 2026-07-28
	list := func(cursor string, sdk bool) map[string]any {
		r.srv.noFastPath.Store(sdk)
		defer r.srv.noFastPath.Store(false)
		var params []string
		if cursor != "" {
			params = append(params, `"cursor":"`+cursor+`"`)
		}
		if version != "" {
			params = append(params, `"_meta":{"io.modelcontextprotocol/protocolVersion":"`+version+`","io.modelcontextprotocol/clientCapabilities":{}}`)
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		if params != nil {
			body = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + strings.Join(params, ",") + `}}`
		}
		req, _ := http.NewRequest("POST", r.http.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+r.keyA)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
			req.Header.Set("Mcp-Method", "tools/list")
		}
		before := r.srv.fastCalls.Load()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if fast := r.srv.fastCalls.Load() > before; fast == sdk {
			t.Fatalf("%q, cursor %q: the fast path answered: %v", version, cursor, fast)
		}
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return v
	}
	// The fast path's cursors are those the SDK gave for the same
	// boundaries (sdkCursors): equal byte for byte, and each path reads
	// the other's.
	strip := func(v map[string]any) (map[string]any, string) {
		res, _ := v["result"].(map[string]any)
		next, _ := res["nextCursor"].(string)
		delete(res, "nextCursor")
		return v, next
	}
	check := func(what string) {
		cursor := ""
		for page := 1; page <= 3; page++ {
			fast, fnext := strip(list(cursor, false))
			sdk, snext := strip(list(cursor, true))
			if !reflect.DeepEqual(unmark(fast), unmark(sdk)) || (fnext == "") != (snext == "") {
				t.Fatalf("%s, page %d differs (%v)", what, page, sdk["error"])
			}
			if fnext != snext {
				t.Fatalf("%s, page %d: cursors %q and %q differ: the fast path's are the SDK's own", what, page, fnext, snext)
			}
			res, _ := fast["result"].(map[string]any)
			tools, _ := res["tools"].([]any)
			t.Logf("%s, %q, page %d: %d tools", what, version, page, len(tools))
			if fnext == "" {
				return
			}
			cursor = fnext // the SDK reads the fast path's cursor
		}
	}
	check("no policy")
	version = "2026-07-28"
	check("no policy")
	version = ""
	// Hide the mutating ones from everyone in the tenant.
	if st := r.do(t, r.keyA, "PUT", "/v1/policy", `{"rules":[{"name":"reads","effect":"deny","tools":{"mutating":true}}]}`); st.status != 200 {
		t.Fatalf("policy: %d %s", st.status, st.raw)
	}
	testkit.WaitFor(t, "the policy", func() bool {
		res, _ := list("", false)["result"].(map[string]any)
		tools, _ := res["tools"].([]any)
		return len(tools) < 1000
	})
	check("mutating hidden")
	version = "2026-07-28"
	check("mutating hidden")
}

// TestFastPathKnowsTheSDKsVersions: every protocol version the SDK serves
// is one the fast path reads, so a new version is a decision (teach
// modernRequest its wire format, or say why it stays on the SDK's path),
// not a silent fall to the slow path.
func TestFastPathKnowsTheSDKsVersions(t *testing.T) {
	sdk := mcp.SupportedProtocolVersions()
	for _, v := range sdk {
		if !fastVersions[v] {
			t.Errorf("the SDK serves protocol %s, which the fast path does not read: teach modernRequest its request or leave it to the SDK on purpose", v)
		}
	}
	if len(fastVersions) != len(sdk)+1 {
		t.Errorf("fast path reads %d versions, the SDK serves %d (+ the headerless request)", len(fastVersions), len(sdk))
	}
	if readableVersions([]string{"2099-01-01"})["2099-01-01"] {
		t.Error("a version after 2026-07-28 must go to the SDK")
	}
	t.Logf("fast path reads %d protocol versions of the SDK's %d", len(fastVersions)-1, len(sdk))
}

// gobCursor is a cursor as the SDK v1.8 encodes one (gob of its private
// page token), for cursors the fast path never gave: a client's own, or
// one of an earlier tool set.
func gobCursor(last string) string {
	var buf bytes.Buffer
	gob.NewEncoder(&buf).Encode(struct{ LastUID string }{last})
	return base64.URLEncoding.EncodeToString(buf.Bytes())
}
