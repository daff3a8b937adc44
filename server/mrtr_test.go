package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// asker is an MCP client's person: it answers every question a call's
// answer asks (multi round-trip requests) with answer, and counts them.
type asker struct {
	mu     sync.Mutex
	asked  []*mcp.ElicitParams
	answer func(*mcp.ElicitParams) *mcp.ElicitResult
	// seen is what the test reads at each question (the upstream's count).
	seen []int64
	read func() int64
}

func (a *asker) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mrtr", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.asked = append(a.asked, req.Params)
			if a.read != nil {
				a.seen = append(a.seen, a.read())
			}
			return a.answer(req.Params), nil
		}})
}

func (a *asker) count() int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.asked) }

// yes and no answer an approval question.
func yes(*mcp.ElicitParams) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
}
func no(*mcp.ElicitParams) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}
}

// httpSession connects c to the rig's /mcp with key, for person.
func httpSession(t *testing.T, r *rig, c *mcp.Client, key, person, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: keyTransport{key: key, person: person}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// stdioSession connects c to a stdio server of tenant-a for person (the
// server httptools mcp --person runs, over an in-memory pipe).
func stdioSession(t *testing.T, r *rig, c *mcp.Client, person, version string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ms := r.srv.MCPToolsetServer("tenant-a", "", func(*mcp.CallToolRequest) string { return person })
	ct, st := mcp.NewInMemoryTransports()
	ss, err := ms.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// unattendedCall calls t.guarded in run r1, which no person started.
func unattendedCall(t *testing.T, cs *mcp.ClientSession, input map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.guarded", Arguments: input,
		Meta: mcp.Meta{CallContextMeta: map[string]any{"run": "r1", "unattended": true}}})
	if err != nil {
		t.Fatalf("the call: %v", err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// TestApprovalByMultiRoundTrip: on MCP 2026-07-28, over streamable HTTP
// and over stdio, an unattended call of a tool that needs a person's yes
// is answered input_required with the approval question (the run and input
// framed as outside data); the client's retry carrying the answer decides
// the approval as its key would on the console, and the call runs once on
// yes (0 upstream requests while asked, 1 after) and not at all on no. A
// service key, which may decide no approval, is not asked: its call is
// refused as before, and so is an older client's (asked by
// ElicitApprovals, not by the call).
func TestApprovalByMultiRoundTrip(t *testing.T) {
	r := newGuardedRig(t, 0)
	ctx := context.Background()
	service, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleService, "")
	adminA, _ := r.store.KeyOf(ctx, r.keyA)
	upstream := func() int64 { return r.upCalls.Load() }
	onlyApproval := func(t *testing.T, state, decidedBy string) *auth.Approval {
		t.Helper()
		as, err := r.store.Approvals(ctx, "tenant-a", "", "", nil)
		if err != nil || len(as) == 0 {
			t.Fatalf("approvals: %v %v", as, err)
		}
		a := as[0] // the newest
		if a.State != state || a.DecidedBy != decidedBy || a.Tool != "t.guarded" || a.Run != "r1" || a.Person != "u1" {
			t.Errorf("the approval: %s decided by %q for %s %s %s, want %s by %q", a.State, a.DecidedBy, a.Tool, a.Run, a.Person, state, decidedBy)
		}
		return a
	}
	for _, door := range []struct {
		name    string
		connect func(t *testing.T, c *mcp.Client) *mcp.ClientSession
		decider string
	}{
		{"http", func(t *testing.T, c *mcp.Client) *mcp.ClientSession {
			return httpSession(t, r.rig, c, r.keyA, "u1", "2026-07-28")
		}, adminA.ID},
		{"stdio", func(t *testing.T, c *mcp.Client) *mcp.ClientSession {
			return stdioSession(t, r.rig, c, "u1", "2026-07-28")
		}, "mcp-person:u1"},
	} {
		t.Run(door.name+"/approve", func(t *testing.T) {
			start := upstream()
			a := &asker{answer: yes, read: func() int64 { return upstream() - start }}
			res := unattendedCall(t, door.connect(t, a.client()), map[string]any{"a": door.name + "yes"})
			if res.IsError || !strings.Contains(resultText(res), `"path":"/g"`) {
				t.Fatalf("the approved call: %+v %q", res, resultText(res))
			}
			if a.count() != 1 || a.seen[0] != 0 || a.asked[0].Mode != "form" {
				t.Fatalf("asked %d times, upstream requests when asked %v", a.count(), a.seen)
			}
			if q := a.asked[0].Message; !strings.Contains(q, "t.guarded") || !strings.Contains(q, "[outside data ") || !strings.Contains(q, "yes") {
				t.Errorf("the question does not frame the run and input: %q", q)
			}
			if n := upstream() - start; n != 1 {
				t.Errorf("%d upstream requests after the yes, want 1", n)
			}
			onlyApproval(t, auth.ApprovalUsed, door.decider)
		})
		t.Run(door.name+"/deny", func(t *testing.T) {
			start := upstream()
			a := &asker{answer: no}
			res := unattendedCall(t, door.connect(t, a.client()), map[string]any{"a": door.name + "no"})
			if !res.IsError || !strings.Contains(resultText(res), "it is denied") {
				t.Errorf("the denied call: %q", resultText(res))
			}
			if a.count() != 1 || upstream() != start {
				t.Errorf("asked %d times, %d upstream requests, want 1 and 0", a.count(), upstream()-start)
			}
			onlyApproval(t, auth.ApprovalDenied, door.decider)
		})
		t.Run(door.name+"/dismiss", func(t *testing.T) {
			start := upstream()
			a := &asker{answer: func(*mcp.ElicitParams) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "cancel"} }}
			res := unattendedCall(t, door.connect(t, a.client()), map[string]any{"a": door.name + "cancel"})
			if !res.IsError || !strings.Contains(resultText(res), "stays pending") {
				t.Errorf("the dismissed call: %q", resultText(res))
			}
			if a.count() != 1 || upstream() != start {
				t.Errorf("asked %d times, %d upstream requests, want 1 and 0", a.count(), upstream()-start)
			}
			onlyApproval(t, auth.ApprovalPending, "")
		})
	}
	for _, c := range []struct {
		name    string
		connect func(t *testing.T, c *mcp.Client) *mcp.ClientSession
	}{
		{"a service key", func(t *testing.T, c *mcp.Client) *mcp.ClientSession {
			return httpSession(t, r.rig, c, service, "u1", "2026-07-28")
		}},
		{"an older client on stdio", func(t *testing.T, c *mcp.Client) *mcp.ClientSession {
			return stdioSession(t, r.rig, c, "u1", "2025-11-25")
		}},
		{"an older client on http", func(t *testing.T, c *mcp.Client) *mcp.ClientSession {
			return httpSession(t, r.rig, c, r.keyA, "u1", "2025-11-25")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := upstream()
			a := &asker{answer: yes}
			res := unattendedCall(t, c.connect(t, a.client()), map[string]any{"a": c.name})
			if !res.IsError || !strings.Contains(resultText(res), "a person must approve this call") {
				t.Errorf("the call: %q", resultText(res))
			}
			if a.count() != 0 || upstream() != start {
				t.Errorf("asked %d times, %d upstream requests, want 0 and 0", a.count(), upstream()-start)
			}
			onlyApproval(t, auth.ApprovalPending, "")
		})
	}
}

// TestConnectByMultiRoundTrip: on MCP 2026-07-28, over streamable HTTP and
// over stdio, a call that needs the person's missing connection is
// answered input_required with the connect flow's URL (URL mode); the
// person opens it, and the client's retry runs the call: asked once, 1
// upstream request, the result the call's. Declined, the retry is not
// asked again and gets the connection's error.
func TestConnectByMultiRoundTrip(t *testing.T) {
	r := newRig(t)
	r.provider.Scope = "mail.send"
	open := func(t *testing.T) func(*mcp.ElicitParams) *mcp.ElicitResult {
		return func(p *mcp.ElicitParams) *mcp.ElicitResult {
			if p.Mode != "url" || !strings.HasPrefix(p.URL, r.provider.AuthURL()) || p.ElicitationID == "" {
				t.Errorf("the question: %+v", p)
				return &mcp.ElicitResult{Action: "decline"}
			}
			// The person opens the URL: the provider approves and sends
			// the browser to the service's callback.
			resp, err := http.Get(p.URL)
			if err != nil {
				t.Error(err)
				return &mcp.ElicitResult{Action: "cancel"}
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(page), "Connected") {
				t.Errorf("callback: %s", page)
			}
			return &mcp.ElicitResult{Action: "accept"}
		}
	}
	for _, door := range []struct {
		name    string
		connect func(t *testing.T, c *mcp.Client, person string) *mcp.ClientSession
	}{
		{"http", func(t *testing.T, c *mcp.Client, person string) *mcp.ClientSession {
			return httpSession(t, r, c, r.keyA, person, "2026-07-28")
		}},
		{"stdio", func(t *testing.T, c *mcp.Client, person string) *mcp.ClientSession {
			return stdioSession(t, r, c, person, "2026-07-28")
		}},
	} {
		t.Run(door.name, func(t *testing.T) {
			start := r.upCalls.Load()
			a := &asker{answer: open(t)}
			res, err := door.connect(t, a.client(), door.name+"-u").CallTool(context.Background(), &mcp.CallToolParams{Name: "t.mail", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("the call: %+v %v", res, err)
			}
			if a.count() != 1 || r.upCalls.Load()-start != 1 {
				t.Errorf("asked %d times, %d upstream requests, want 1 and 1", a.count(), r.upCalls.Load()-start)
			}
		})
		t.Run(door.name+"/declined", func(t *testing.T) {
			a := &asker{answer: func(*mcp.ElicitParams) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }}
			res, err := door.connect(t, a.client(), door.name+"-v").CallTool(context.Background(), &mcp.CallToolParams{Name: "t.mail", Arguments: map[string]any{}})
			if err != nil || !res.IsError || !strings.Contains(resultText(res), "connection-unavailable") {
				t.Fatalf("the declined call: %+v %v", res, err)
			}
			if a.count() != 1 {
				t.Errorf("asked %d times, want 1", a.count())
			}
		})
	}
}

// TestApprovalRequestStateProvesNothing: a retry whose request state names
// another call's approval (here one asked for another input) decides
// nothing: that approval stays pending, the call is asked about anew with
// a new approval; and a yes answering an approval denied on the console
// meanwhile runs nothing. 0 requests reach the upstream. The retries are
// driven by hand (the client's multi round-trip middleware off).
func TestApprovalRequestStateProvesNothing(t *testing.T) {
	r := newGuardedRig(t, 0)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "by-hand", Version: "1"}, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	cs := httpSession(t, r.rig, c, r.keyA, "u1", "2026-07-28")
	call := func(input map[string]any, state string, answer mcp.InputResponse) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: "t.guarded", Arguments: input, RequestState: state,
			Meta: mcp.Meta{CallContextMeta: map[string]any{"run": "r1", "unattended": true}}}
		if answer != nil {
			p.InputResponses = mcp.InputResponseMap{"approval": answer}
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	start := r.upCalls.Load()
	other := call(map[string]any{"a": "other"}, "", nil)
	if !other.NeedsInput() || !strings.HasPrefix(other.RequestState, stateApproval) || other.InputRequests["approval"] == nil {
		t.Fatalf("the first round: %+v", other)
	}
	res := call(map[string]any{"a": "mine"}, other.RequestState, yes(nil))
	if !res.NeedsInput() || res.RequestState == other.RequestState {
		t.Fatalf("a retry naming another call's approval: %+v", res)
	}
	a, err := r.store.Approval(ctx, "tenant-a", strings.TrimPrefix(other.RequestState, stateApproval))
	if err != nil || a.State != auth.ApprovalPending {
		t.Errorf("the other call's approval: %+v %v", a, err)
	}
	// Denied on the console while the client asked: the client's yes
	// decides nothing more (an approval is decided once).
	asked := call(map[string]any{"a": "console"}, "", nil)
	id := strings.TrimPrefix(asked.RequestState, stateApproval)
	if rp := r.do(t, r.keyA, "POST", "/v1/approvals/"+id+"/deny", ""); rp.status != 204 {
		t.Fatalf("denying on the console: %d %s", rp.status, rp.raw)
	}
	if res := call(map[string]any{"a": "console"}, asked.RequestState, yes(nil)); !res.IsError || !strings.Contains(resultText(res), "it is denied") {
		t.Errorf("a yes after the console's no: %+v %q", res, resultText(res))
	}
	if n := r.upCalls.Load() - start; n != 0 {
		t.Errorf("%d upstream requests, want 0", n)
	}
}
