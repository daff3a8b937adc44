package server

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/faults"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/synth"
	"github.com/tidwall/gjson"
)

// Issue 39, class 9: the store outlived a call's deadline. A replica cut
// off from PostgreSQL answered calls of a 10 s tool after 15 s (three 5 s
// store timeouts in a row), and under store latency p99 passed the
// deadline too. Every store call made for a call — the key check, the
// policy reads, secrets, approvals, the console's session — runs within
// the call's own deadline, and a cached key or policy whose re-read cannot
// finish in time is served as it is.

// deadlineTool is the tool of TestStoreCallsKeepTheCallsDeadline's calls:
// its timeoutMs.
const deadlineTool = 2 * time.Second

// deadlineGrace is how late after its deadline a call may answer and still
// count as on time. The service's own work after the deadline (writing the
// error, the access log) takes milliseconds; a loaded 2-core machine under
// the race detector can stretch that to several hundred. The defect makes
// calls late by whole store timeouts (5 s each, 15 s against 10 s in the
// issue): 1.5 s tells the one from the other on any machine this runs on.
const deadlineGrace = 1500 * time.Millisecond

// storeRig is a service on PostgreSQL reached through a link the test can
// cut or slow, with one tool that reads a secret for each call (d.secret),
// one that needs nothing of the store but the key and the policies
// (d.open), and one whose unattended call asks for an approval
// (d.approve), each with a 2 s timeoutMs, against a local upstream.
type storeRig struct {
	srv      *Server
	http     *httptest.Server
	link     *faults.Link
	key      string
	unseen   string // a key this replica has never checked
	session  string
	upstream atomic.Int64
}

func newStoreRig(t *testing.T) *storeRig {
	dsn := testkit.PostgresDSN(t) // skips without PostgreSQL
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	r := &storeRig{link: faults.New(t, u.Host)}
	u.Host = r.link.Addr()
	store := testkit.PostgresStore(t, u.String(), nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.upstream.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"secret.json": `{"id":"d.secret","description":"Reads a secret.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/s","timeoutMs":2000,"authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}}`,
		"approve.json": `{"id":"d.approve","description":"Needs a person's yes when unattended.","version":"1.0.0","mutating":true,"needsApprovalWhenUnattended":true,
			"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"POST","urlTemplate":"{UP}/a","timeoutMs":2000}}`,
		"open.json": `{"id":"d.open","description":"Needs no secret.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"{UP}/o","timeoutMs":2000}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(body, "{UP}", up.URL)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := store.PutSecret(ctx, "tenant-a", synth.SecretRef{EnvName: "production", Name: "TOKEN"}, "tok-1"); err != nil {
		t.Fatal(err)
	}
	if err := store.PutPolicy(ctx, "tenant-a", []byte(`{"default":"allow"}`)); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hist := &history.Recorder{Sink: store}
	hist.Start()
	t.Cleanup(hist.Close)
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{Logger: quiet})))
	srv, err := New(Config{Store: store, Keys: store, Policies: store, Approvals: store, History: hist, Calls: store,
		ToolsDir: dir, Loader: &synth.Loader{Registry: reg}, Logger: quiet, AccessLogger: quiet, UI: true})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.http = httptest.NewServer(srv.Handler())
	t.Cleanup(r.http.Close)
	if r.key, _, err = store.CreateAPIKey(ctx, "tenant-a", auth.RoleAdmin, ""); err != nil {
		t.Fatal(err)
	}
	if r.unseen, _, err = store.CreateAPIKey(ctx, "tenant-a", auth.RoleAdmin, ""); err != nil {
		t.Fatal(err)
	}
	if r.session, err = store.CreateSession(ctx, r.key, time.Hour); err != nil {
		t.Fatal(err)
	}
	return r
}

// door is a way in for a call: REST, MCP on the fast path or through the
// SDK, the console's run.
type door string

const (
	doorREST    door = "rest"
	doorMCPFast door = "mcp-fast"
	doorMCPSDK  door = "mcp-sdk"
	doorConsole door = "console"
)

// answer is what a call got, as the test reads it.
type answer struct {
	door    door
	tool    string
	took    time.Duration
	status  int    // HTTP status
	outcome string // "ok", the REST code/reason, or the MCP error's words
	retry   string // Retry-After
}

// call makes one call of tool through d with the rig's key and times it
// from before the request is sent to the end of its answer.
func (r *storeRig) call(t *testing.T, d door, tool string) answer {
	return r.callAs(t, r.key, d, tool)
}

// callAs is call with key (REST and MCP).
func (r *storeRig) callAs(t *testing.T, key string, d door, tool string) answer {
	var req *http.Request
	switch d {
	case doorREST:
		body := `{"input":{}}`
		if tool == "d.approve" {
			body = `{"input":{},"context":{"unattended":true,"run":"r1"}}` // asks for an approval: a store write
		}
		req, _ = http.NewRequest("POST", r.http.URL+"/v1/tools/"+tool+"/invoke", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
	case doorMCPFast, doorMCPSDK:
		params := `"name":"` + tool + `","arguments":{}`
		if d == doorMCPSDK {
			params += `,"_meta":{"example.com/other":1}` // a member the fast path leaves to the SDK
		}
		req, _ = http.NewRequest("POST", r.http.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+params+`}}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	case doorConsole:
		req, _ = http.NewRequest("POST", r.http.URL+"/ui/tools/"+tool, strings.NewReader(url.Values{"action": {"run"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: uiCookie, Value: r.session})
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", d, tool, err)
		return answer{door: d, tool: tool, took: time.Since(start)}
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := answer{door: d, tool: tool, took: time.Since(start), status: resp.StatusCode, retry: resp.Header.Get("Retry-After")}
	a.outcome = outcomeOf(d, resp.StatusCode, b)
	return a
}

// outcomeOf reads an answer: "ok", or the error's code/reason (REST, and
// any refusal before MCP), the MCP tool error's text, the console's
// message.
func outcomeOf(d door, status int, b []byte) string {
	doc := gjson.ParseBytes(b)
	switch {
	case status != http.StatusOK && doc.Get("error.code").Exists():
		return doc.Get("error.code").String() + "/" + doc.Get("error.reason").String()
	case d == doorREST && status == http.StatusOK:
		return "ok"
	case d == doorMCPFast || d == doorMCPSDK:
		if doc.Get("result.isError").Bool() {
			return doc.Get("result.content.0.text").String()
		}
		if doc.Get("result").Exists() {
			return "ok"
		}
		return doc.Get("error.message").String()
	case d == doorConsole:
		if strings.Contains(string(b), `id="output"`) {
			return "ok"
		}
		if m := consoleError.FindSubmatch(b); m != nil {
			return html.UnescapeString(string(m[1]))
		}
	}
	return fmt.Sprintf("%d %.200s", status, b)
}

// consoleError is the error a console page shows: the page's or the run's.
var consoleError = regexp.MustCompile(`id="error(?:-message)?">([^<]*)<`)

// storeTrouble says an answer is the store-unavailable refusal or the
// call's deadline, in the words of its door.
func storeTrouble(a answer) bool {
	switch a.door {
	case doorREST:
		return (a.status == http.StatusServiceUnavailable && a.outcome == "store-unavailable/store-unavailable" && a.retry != "") ||
			(a.status == http.StatusGatewayTimeout && a.outcome == "handler-error/timeout")
	case doorMCPFast, doorMCPSDK:
		return (a.status == http.StatusServiceUnavailable && a.outcome == "store-unavailable/store-unavailable" && a.retry != "") ||
			strings.Contains(a.outcome, "unavailable for now") || strings.Contains(a.outcome, "timed out after")
	case doorConsole:
		return strings.Contains(a.outcome, "does not answer") || strings.Contains(a.outcome, "unavailable for now") || strings.Contains(a.outcome, "timed out after")
	}
	return false
}

// round makes n calls of each tool through each door at once, with the
// key and the policies cached but due to be read again (as they are on a
// replica that has served this tenant before), and returns the answers.
func (r *storeRig) round(t *testing.T, n int) []answer {
	r.srv.expireCaches()
	var (
		mu  sync.Mutex
		out []answer
		wg  sync.WaitGroup
	)
	for _, d := range []door{doorREST, doorMCPFast, doorMCPSDK, doorConsole} {
		for _, tool := range []string{"d.secret", "d.open"} {
			for range n {
				wg.Go(func() {
					a := r.call(t, d, tool)
					mu.Lock()
					out = append(out, a)
					mu.Unlock()
				})
			}
		}
	}
	wg.Wait()
	return out
}

// late counts the answers past the deadline and its grace, and logs the
// worst.
func late(t *testing.T, phase string, answers []answer) int {
	n := 0
	var worst answer
	for _, a := range answers {
		if a.took > deadlineTool+deadlineGrace {
			n++
			t.Logf("%s: %s %s answered after %v (deadline %v): %d %.200s", phase, a.door, a.tool, a.took.Round(time.Millisecond), deadlineTool, a.status, a.outcome)
		}
		if a.took > worst.took {
			worst = a
		}
	}
	t.Logf("%s: %d calls, %d past their deadline; the slowest %s %s after %v: %d %.120s", phase, len(answers), n, worst.door, worst.tool, worst.took.Round(time.Millisecond), worst.status, worst.outcome)
	ran := map[string]int{}
	for _, a := range answers {
		k := string(a.door) + " " + a.tool + ": "
		switch {
		case a.outcome == "ok":
			k += "ran"
		case strings.Contains(a.outcome, "timed out"):
			k += "deadline"
		default:
			k += "store-unavailable"
		}
		ran[k]++
	}
	t.Logf("%s: %v", phase, ran)
	return n
}

// expireCaches makes every key and policy this replica read due to be read
// again, as it is once keyCacheTTL or PolicyTTL has passed since.
func (s *Server) expireCaches() {
	s.keys.Range(func(k, v any) bool {
		e := v.(keyEntry)
		e.expires = time.Time{}
		s.keys.Store(k, e)
		return true
	})
	s.policies.mu.Lock()
	for tenant, e := range s.policies.m {
		e.at = time.Time{}
		s.policies.m[tenant] = e
	}
	s.policies.mu.Unlock()
}

// TestStoreCallsKeepTheCallsDeadline: a replica whose link to PostgreSQL is
// (a) cut for longer than the deadline, (b) slowed by 500 ± 400 ms each
// way, answers every call of a 2 s tool within its deadline (and a grace),
// on every door; cut off, a call that needs the store (a secret, an
// approval, a key never checked, the console's session) is answered
// store-unavailable or timed out, and one that needs only the cached key
// and policies runs.
func TestStoreCallsKeepTheCallsDeadline(t *testing.T) {
	r := newStoreRig(t)
	const n = 3
	// Healthy: every call runs, and the key, the policies and the session
	// are read once.
	for _, a := range r.round(t, 1) {
		if a.outcome != "ok" {
			t.Fatalf("before any fault: %s %s: %d %s", a.door, a.tool, a.status, a.outcome)
		}
	}

	t.Run("cut", func(t *testing.T) {
		r.link.Cut()
		defer r.link.Heal()
		before := r.upstream.Load()
		fast := r.srv.fastCalls.Load()
		// Beside the round's calls: unattended ones that ask for an
		// approval (a write of the store's), and ones with a key this
		// replica never checked, which only the store can vouch for.
		more := make([]answer, 3*n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { more[i] = r.call(t, doorREST, "d.approve") })
			wg.Go(func() { more[n+i] = r.callAs(t, r.unseen, doorREST, "d.open") })
			wg.Go(func() { more[2*n+i] = r.callAs(t, r.unseen, doorMCPFast, "d.open") })
		}
		answers := r.round(t, n)
		wg.Wait()
		for _, a := range more {
			if !storeTrouble(a) {
				t.Errorf("cut: %s %s (an approval asked, or a key never checked): %d %.300s; want store-unavailable (503, Retry-After) or the deadline", a.door, a.tool, a.status, a.outcome)
			}
		}
		if l := late(t, "cut", append(answers, more...)); l != 0 {
			t.Errorf("cut off from the store: %d of %d calls answered past their deadline (%v + %v)", l, len(answers)+len(more), deadlineTool, deadlineGrace)
		}
		opened := 0
		for _, a := range answers {
			switch {
			case a.door == doorConsole:
				// The console reads its session from the store on every
				// request: cut off, it says the store does not answer.
				if !storeTrouble(a) {
					t.Errorf("cut: console %s: %d %s; want the store's refusal or the deadline", a.tool, a.status, a.outcome)
				}
			case a.tool == "d.secret":
				if !storeTrouble(a) {
					t.Errorf("cut: %s d.secret: %d %.300s; want store-unavailable (503, Retry-After) or the deadline", a.door, a.status, a.outcome)
				}
			case a.outcome == "ok":
				opened++
			default:
				t.Errorf("cut: %s d.open: %d %.300s; want it run on the cached key and policies", a.door, a.status, a.outcome)
			}
		}
		if want := 3 * n; opened != want || r.upstream.Load()-before != int64(want) {
			t.Errorf("cut: %d d.open calls ran and %d upstream requests; want %d of each (the cached key and policies serve)", opened, r.upstream.Load()-before, want)
		}
		if got := r.srv.fastCalls.Load() - fast; got != 2*n {
			t.Errorf("cut: %d calls answered on the MCP fast path; want %d (the others through the SDK)", got, 2*n)
		}
	})

	// Healed: every call runs again (and the store's pool has connections
	// again, as a replica's has when latency sets in).
	for _, a := range r.round(t, n) {
		if a.outcome != "ok" {
			t.Errorf("healed: %s %s: %d %.300s", a.door, a.tool, a.status, a.outcome)
		}
	}

	t.Run("latency", func(t *testing.T) {
		r.link.Latency(500, 400)
		defer r.link.Heal()
		answers := r.round(t, n)
		if l := late(t, "latency", answers); l != 0 {
			t.Errorf("store latency 500 ± 400 ms: %d of %d calls answered past their deadline (%v + %v)", l, len(answers), deadlineTool, deadlineGrace)
		}
		for _, a := range answers {
			if a.outcome != "ok" && !storeTrouble(a) {
				t.Errorf("latency: %s %s: %d %.300s; want a result, store-unavailable or the deadline", a.door, a.tool, a.status, a.outcome)
			}
		}
	})
}
