package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/internal/testkit"

	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// fairRig is a service with a slow tool (its upstream answers after slow)
// and a fast one, tenant A limited to limitA calls in flight, and the log.
type fairRig struct {
	url         string
	keyA, keyB  string
	log         *syncBuffer
	slowCalls   atomic.Int64
	dripStarted atomic.Int64
	release     chan struct{}
	releaseOnce sync.Once
	drip        chan struct{}
}

// releaseAll lets every slow call answer.
func (fr *fairRig) releaseAll() { fr.releaseOnce.Do(func() { close(fr.release) }) }

func newFairRig(t testing.TB, slow time.Duration, limitA int, budgetBytes int64) *fairRig {
	return newLimitRig(t, slow, map[string]int{"tenant-a": limitA}, 0, -1, budgetBytes)
}

// newLimitRig is newFairRig with every tenant's limit (def, and limits by
// tenant) and the connections per upstream host.
func newLimitRig(t testing.TB, slow time.Duration, limits map[string]int, def, perHost int, budgetBytes int64) *fairRig {
	fr := &fairRig{log: &syncBuffer{}, release: make(chan struct{}), drip: make(chan struct{})}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(bigAnswer)))
			w.Write(bigAnswer)
			return
		}
		if r.URL.Path == "/drip" {
			fr.dripStarted.Add(1)
			// 1.5 MiB announced, the first KiB sent, the rest once released.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(dripAnswer)))
			w.Write(dripAnswer[:1024])
			w.(http.Flusher).Flush()
			select {
			case <-fr.drip:
			case <-fr.release:
			}
			w.Write(dripAnswer[1024:])
			return
		}
		if r.URL.Path == "/slow" {
			fr.slowCalls.Add(1)
			select {
			case <-time.After(slow):
			case <-fr.release:
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(fr.releaseAll)
	dir := t.TempDir()
	for _, name := range []string{"slow", "fast", "big", "drip"} {
		os.WriteFile(filepath.Join(dir, name+".json"), []byte(`{"id":"t.`+name+`","description":"`+name+`.","version":"1.0.0","mutating":false,
			"input":{"type":"object"},"output":{"type":"object"},
			"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/`+name+`","timeoutMs":60000}}`), 0o644)
	}
	keys, _ := sqlstore.NewKeyring(bytes.Repeat([]byte{9}, 32))
	store := openTestStore(t, filepath.Join(t.TempDir(), "db"), keys)
	logger := slog.New(slog.NewTextHandler(fr.log, nil))
	mem := budget.New(budgetBytes)
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Budget: mem, MaxConnsPerHost: perHost,
	})))
	srv, err := New(Config{Store: store, Keys: store, ToolsDir: dir, Loader: &synth.Loader{Registry: reg}, Logger: logger,
		Budget: mem, TenantMaxInflight: def, TenantLimits: limits})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	fr.url = hs.URL
	fr.keyA, _, _ = store.CreateAPIKey(context.Background(), "tenant-a", auth.RoleAdmin, "")
	fr.keyB, _, _ = store.CreateAPIKey(context.Background(), "tenant-b", auth.RoleAdmin, "")
	return fr
}

// dripAnswer is 1.5 MiB of JSON, sent slowly by /drip.
var dripAnswer = []byte(`{"pad":"` + strings.Repeat("y", 3<<19) + `"}`)

// bigAnswer is 2 MiB of JSON: more than a 1 MiB budget can hold.
var bigAnswer = []byte(`{"pad":"` + strings.Repeat("x", 2<<20) + `"}`)

var fairClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}

func (fr *fairRig) invoke(key, tool string) (int, string, http.Header, error) {
	req, _ := http.NewRequest("POST", fr.url+"/v1/tools/"+tool+"/invoke", strings.NewReader(`{"input":{}}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := fairClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, nil
}

// TestTenantFloodingASlowUpstream: tenant A starts 500 concurrent calls of a
// tool whose upstream answers when the test says (after B's calls and the
// MCP call: an upstream that answered in 2 s let A's 50 end first on a busy
// machine), over its limit of 50; B meanwhile calls a fast tool. A's excess
// (450) gets 429 rate-limited with Retry-After at once and never reaches
// the upstream; A's 50 and all of B's succeed; the refusals are counted by
// tenant and reason and logged in one line, not 450; an MCP call of A at
// its limit is a tool error the model can read.
func TestTenantFloodingASlowUpstream(t *testing.T) {
	fr := newFairRig(t, testkit.WaitLimit, 50, 64<<20)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statusA := map[int]int{}
	var badRefusal string
	for range 500 {
		wg.Go(func() {
			st, body, h, err := fr.invoke(fr.keyA, "t.slow")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statusA[-1]++
				return
			}
			statusA[st]++
			if st == 429 && (h.Get("Retry-After") == "" || !strings.Contains(body, `"code":"rate-limited"`) || !strings.Contains(body, `"reason":"tenant-limit"`)) {
				badRefusal = body
			}
		})
	}
	// B, while A's 50 wait on the slow upstream.
	testkit.WaitFor(t, "50 slow calls in flight", func() bool { return fr.slowCalls.Load() >= 50 })
	okB := 0
	for range 100 {
		if st, body, _, err := fr.invoke(fr.keyB, "t.fast"); err != nil || st != 200 {
			t.Fatalf("tenant B: %d %v %s", st, err, body)
		}
		okB++
	}
	// MCP: A is at its limit.
	st, mb := fr.callTool(t, fr.keyA, "t.fast")
	if st != 200 || !strings.Contains(mb, `"isError":true`) || !strings.Contains(mb, "rate-limited") {
		t.Errorf("MCP call over the limit: %d %s", st, mb)
	}
	fr.releaseAll() // A's 50 answered
	wg.Wait()
	if statusA[200] != 50 || statusA[429] != 450 || len(statusA) != 2 {
		t.Errorf("tenant A: %v; want 50 × 200 and 450 × 429", statusA)
	}
	if badRefusal != "" {
		t.Errorf("a 429 without Retry-After or its code: %s", badRefusal)
	}
	if n := fr.slowCalls.Load(); n != 50 {
		t.Errorf("the slow upstream got %d calls; want 50 (refused calls send nothing)", n)
	}
	metrics := metricsText(t, fr.url, fr.keyA)
	if !strings.Contains(metrics, `httptools_refusals_total{reason="tenant-limit",tenant="tenant-a"} 451`) {
		t.Errorf("refusals not counted by tenant and reason:\n%s", grep(metrics, "refusals"))
	}
	if !strings.Contains(metrics, `httptools_tenant_inflight_calls{tenant="tenant-a"} 0`) || !strings.Contains(metrics, "httptools_inflight_bytes 0") {
		t.Errorf("in-flight gauges not back to 0:\n%s", grep(metrics, "inflight"))
	}
	if lines := strings.Count(fr.log.String(), `msg="refusing calls"`); lines != 1 {
		t.Errorf("%d log lines for one burst of 451 refusals; want 1", lines)
	}
	t.Logf("A: %v; B: %d/100 ok", statusA, okB)
}

// TestDefaultSharesLetAnotherTenantReachTheSameSlowAPI: serve's limits
// are shares of the call capacity, a tenant a quarter and an upstream host
// half (server.CallCapacity). Scaled down to a capacity of 40: tenant A
// floods a slow API with 30 calls; 10 wait on it, 20 get 429 at once.
// Tenant B's 10 calls of the same API all reach it while A's still wait:
// B is not queued behind A. With the old shape (the host's connections no
// more than one tenant's calls), B's calls wait for A's to end.
func TestDefaultSharesLetAnotherTenantReachTheSameSlowAPI(t *testing.T) {
	const capacity = 40
	for _, c := range []struct {
		name    string
		perHost int
		bReach  int64 // B's calls at the upstream while A's wait
	}{
		{"shares", capacity / 2, 10},
		{"host no wider than a tenant", capacity / 4, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fr := newLimitRig(t, 30*time.Second, nil, capacity/4, c.perHost, 64<<20)
			var wg sync.WaitGroup
			var mu sync.Mutex
			statusA, statusB := map[int]int{}, map[int]int{}
			call := func(key string, into map[int]int) {
				st, _, _, err := fr.invoke(key, "t.slow")
				if err != nil {
					st = -1
				}
				mu.Lock()
				into[st]++
				mu.Unlock()
			}
			for range 30 {
				wg.Go(func() { call(fr.keyA, statusA) })
			}
			testkit.WaitFor(t, "the calls to settle", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return fr.slowCalls.Load() == 10 && statusA[429] == 20
			})
			for range 10 {
				wg.Go(func() { call(fr.keyB, statusB) })
			}
			if c.bReach > 0 {
				// An event to wait for, however loaded the machine.
				testkit.WaitFor(t, "tenant B's calls in flight", func() bool { return fr.slowCalls.Load()-10 >= c.bReach })
			} else {
				// None may arrive: give them time to (a loaded machine
				// can only make this pass wrongly, never fail).
				time.Sleep(300 * time.Millisecond)
			}
			if got := fr.slowCalls.Load() - 10; got != c.bReach {
				t.Errorf("B's calls at the upstream while A's wait: %d, want %d", got, c.bReach)
			}
			fr.releaseAll()
			wg.Wait()
			if statusA[200] != 10 || statusA[429] != 20 || statusB[200] != 10 {
				t.Errorf("A %v (want 10 × 200, 20 × 429), B %v (want 10 × 200)", statusA, statusB)
			}
		})
	}
}

// callTool sends one MCP tools/call of tool with no arguments and returns
// the HTTP status and body.
func (fr *fairRig) callTool(t testing.TB, key, tool string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", fr.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := fairClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func grep(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// BenchmarkFairness: the p99 of tenant B's calls of a fast tool, alone and
// while tenant A keeps 500 concurrent calls against an upstream that
// answers in 5 s (its limit 50, the rest refused with 429 and retried after
// the second Retry-After asks for).
//
//	go test ./server -run XXX -bench Fairness -benchtime 1x
func BenchmarkFairness(b *testing.B) {
	p99 := func(fr *fairRig) time.Duration {
		var d []time.Duration
		for range 400 {
			start := time.Now()
			if st, body, _, err := fr.invoke(fr.keyB, "t.fast"); err != nil || st != 200 {
				b.Fatalf("B: %d %v %s", st, err, body)
			}
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d[len(d)*99/100]
	}
	for b.Loop() {
		fr := newFairRig(b, 5*time.Second, 50, 64<<20)
		alone := p99(fr)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 500 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if st, _, _, _ := fr.invoke(fr.keyA, "t.slow"); st == 429 {
						time.Sleep(time.Second) // as Retry-After asks
					}
				}
			})
		}
		testkit.WaitFor(b, "50 slow calls in flight", func() bool { return fr.slowCalls.Load() >= 50 })
		flooded := p99(fr)
		close(stop)
		b.ReportMetric(float64(alone.Microseconds())/1000, "ms-p99-B-alone")
		b.ReportMetric(float64(flooded.Microseconds())/1000, "ms-p99-B-flooded")
		b.ReportMetric(float64(flooded)/float64(alone), "ratio")
		fmt.Fprintf(os.Stderr, "B p99 alone %v, with A flooding %v (%.2fx)\n", alone, flooded, float64(flooded)/float64(alone))
		wg.Wait() // A's last calls end with their 5 s answers
	}
}

// TestOverBudgetIsATypedRefusal: an answer the memory budget cannot hold is
// 503 overloaded with Retry-After over REST and a tool error the model can
// read over MCP, counted by tenant and reason; the budget is whole after.
func TestOverBudgetIsATypedRefusal(t *testing.T) {
	fr := newFairRig(t, time.Millisecond, 50, 1<<20)
	st, body, h, err := fr.invoke(fr.keyB, "t.big")
	if err != nil || st != 503 || h.Get("Retry-After") == "" || !strings.Contains(body, `"reason":"overloaded"`) {
		t.Fatalf("REST over the budget: %d %v %.300s", st, err, body)
	}
	st, mb := fr.callTool(t, fr.keyB, "t.big")
	if st != 200 || !strings.Contains(mb, `"isError":true`) || !strings.Contains(mb, "memory budget") {
		t.Errorf("MCP over the budget: %d %s", st, mb)
	}
	m := metricsText(t, fr.url, fr.keyA)
	if !strings.Contains(m, `httptools_refusals_total{reason="memory-budget",tenant="tenant-b"} 2`) || !strings.Contains(m, "httptools_inflight_bytes 0") {
		t.Errorf("metrics:\n%s", grep(m, "refusals")+"\n"+grep(m, "inflight_bytes"))
	}
	if st, _, _, _ := fr.invoke(fr.keyB, "t.fast"); st != 200 {
		t.Errorf("a small call after: %d", st)
	}
}

// TestTenantShareOfTheBudget: tenant A's ten calls, each holding 3 MiB of
// a 16 MiB budget while their upstream drips, wait within A's share (half:
// two at a time), so tenant B's call needing 4 MiB still gets its bytes and
// answers while every one of A's calls is still in flight. (Without shares,
// five of A's calls take 15 MiB and B waits behind the rest.)
func TestTenantShareOfTheBudget(t *testing.T) {
	fr := newFairRig(t, time.Millisecond, 50, 16<<20)
	var wg sync.WaitGroup
	statusA := make(chan int, 10)
	for range 10 {
		wg.Go(func() {
			st, _, _, _ := fr.invoke(fr.keyA, "t.drip")
			statusA <- st
		})
	}
	testkit.WaitFor(t, "the drip to start", func() bool { return fr.dripStarted.Load() >= 1 })
	done := make(chan int, 1)
	go func() {
		st, _, _, _ := fr.invoke(fr.keyB, "t.big")
		done <- st
	}()
	select {
	case st := <-done:
		if st != 200 {
			t.Errorf("tenant B: %d", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("tenant B waited behind tenant A's calls")
	}
	if len(statusA) != 0 {
		t.Errorf("%d of A's calls ended before B's", len(statusA))
	}
	close(fr.drip)
	wg.Wait()
	close(statusA)
	for st := range statusA {
		if st != 200 {
			t.Errorf("tenant A: %d", st)
		}
	}
}
