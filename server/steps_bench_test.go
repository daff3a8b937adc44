package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/benchkit"
	"github.com/httptools/httptools/internal/jsonlog"
	"github.com/httptools/httptools/synth"
)

// callStep is one step of a governed REST call that BenchmarkRESTSteps
// can switch off.
type callStep int

const (
	stepKey       callStep = iota // the API key's check (authenticate)
	stepPolicy                    // the tool policies' gate (settle)
	stepApproval                  // the approvals' check (approve)
	stepAdmission                 // the tenant's limit and the memory budget
	stepInput                     // the input schema's check (off: {"type":"object"})
	stepRequest                   // the upstream request over loopback
	stepAudit                     // fetch's audit record
	stepHistory                   // the call's history record
	stepAccess                    // the access log's record
	stepCount
)

var stepNames = [stepCount]string{"key", "policy", "approval", "admission", "input", "request", "audit", "history", "access"}

// BenchmarkRESTSteps is one governed REST invoke handled in process as
// serve has it — a real upstream on 127.0.0.1 (benchkit.Upstream), the
// SQLite store in a temp dir, a tenant policy and one for all tenants,
// approvals, the tenant's limit and the memory budget, the input and
// output schemas, fetch's audit record, the call history and the access
// log, both as JSON — with every step on ("all"), then with each step
// off in turn ("no-STEP"): a step's cost is all minus no-STEP. The body
// is the load benchmark's, {"input":{"id":"1"}}. The answer's check
// (well-formed JSON, an object, as it streams) cannot be switched off:
// the CPU profile of "all" gives its share. BENCHMARKS.md's REST section
// has the table.
func BenchmarkRESTSteps(b *testing.B) {
	up := httptest.NewServer(benchkit.Upstream)
	defer up.Close()
	body := []byte(`{"input":{"id":"1"}}`)
	// loopback is the call as it is; memory the same with the upstream
	// answering from memory (benchkit.Memory), whose smaller spread shows
	// the steps other than the request.
	for _, upstream := range []string{"loopback", "memory"} {
		b.Run(upstream, func(b *testing.B) {
			for off := callStep(-1); off < stepCount; off++ {
				name := "all"
				if off >= 0 {
					name = "no-" + stepNames[off]
				}
				if upstream == "memory" && off == stepRequest {
					continue
				}
				b.Run(name, func(b *testing.B) {
					_, h, key := stepServer(b, up.URL, off, upstream == "memory")
					serveBench(b, h, "/v1/tools/bench.get-issue/invoke", body, key, nil)
				})
			}
		})
	}
}

// stepServer is BenchmarkRESTSteps' service with every step on but off
// (-1: none off), its handler and a service key; memory: the upstream
// answers from memory.
func stepServer(tb testing.TB, upstream string, off callStep, memory bool) (*Server, http.Handler, string) {
	logger := slog.New(jsonlog.New(io.Discard, nil))
	dir := tb.TempDir()
	// The load benchmark's tool (bench/lib.sh): its input schema, and the
	// least output schema, which lets the answer stream to the caller,
	// checked as it goes. Off, the input schema is the least too.
	input := `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`
	if off == stepInput {
		input = `{"type":"object"}`
	}
	os.WriteFile(filepath.Join(dir, "get.json"), []byte(`{"id":"bench.get-issue","description":"Get an issue.","version":"1.0.0","mutating":false,"input":`+input+`,"output":{"type":"object"},
		"effects":[{"kind":"network","resource":"external:127.0.0.1"}],"spec":{"kind":"http","method":"GET","urlTemplate":"`+upstream+`/items/{id}"}}`), 0o644)
	keys, _ := sqlstore.NewKeyring(bytes.Repeat([]byte{9}, 32))
	store := openTestStore(tb, filepath.Join(tb.TempDir(), "db"), keys)
	ctx := context.Background()
	store.PutPolicy(ctx, AllTenants, []byte(`{"rules":[{"name":"no-deletes","effect":"deny","tools":{"effects":[{"kind":"deletes"}]}}]}`))
	store.PutPolicy(ctx, "t", []byte(`{"rules":[{"effect":"deny","tools":{"ids":["x.*"]}},{"effect":"allow","tools":{"ids":["bench.*"]}},{"effect":"deny","tools":{"mutating":true},"subjects":{"roles":["person"]}}]}`))
	mem := budget.New(1 << 30)
	fc := fetch.Config{UserAgent: httpspec.UserAgent, Logger: logger, Budget: mem, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	cfg := Config{Store: store, Keys: store, ToolsDir: dir, Logger: logger, AccessLogger: logger, Budget: mem,
		Policies: store, Approvals: store, Calls: store}
	switch off {
	case stepPolicy:
		cfg.Policies = nil
	case stepApproval:
		cfg.Approvals = nil
	case stepAdmission:
		cfg.Budget, fc.Budget, cfg.TenantMaxInflight = nil, nil, -1
	}
	if off == stepRequest || memory {
		fc.WrapTransport = func(http.RoundTripper) http.RoundTripper { return benchkit.Memory{} }
	}
	switch off {
	case stepAudit:
		fc.Logger = nil
	case stepAccess:
		cfg.AccessLogger = nil
	}
	if off != stepHistory {
		rec := &history.Recorder{Sink: store}
		rec.Start()
		tb.Cleanup(rec.Close)
		cfg.History = rec
	}
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(fetch.NewClient(fc)))
	cfg.Loader = &synth.Loader{Registry: reg}
	srv, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	key, _, _ := store.CreateAPIKey(ctx, "t", auth.RoleService, "")
	h := srv.Handler()
	if off == stepKey {
		h = withoutKeyCheck(srv, key)
	}
	return srv, h, key
}

// withoutKeyCheck is the invoke route as Handler serves it (the trace
// context, the access log, the call's door) with the key check replaced
// by the key itself.
func withoutKeyCheck(s *Server, key string) http.Handler {
	k, err := s.keyOf(context.Background(), key)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/tools/{id}/invoke", s.callDoor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.invokeRoute(w, withIdentity(r, k))
	})))
	return traceContext(s.accessLog(mux))
}

// BenchmarkRESTStepAlone is each step of BenchmarkRESTSteps' call run
// alone on the same service, many times, for a figure steadier than the
// difference of two whole calls: the key check (a key checked lately),
// the policy gate, the approval check (an unattended call of a tool that
// needs none), the admission (the tenant's limit, a hold of the memory
// budget with the body's draw), the input check, the history record
// handed to the recorder (its writer runs beside), and the access record
// (around a handler that answers 200 with nothing).
func BenchmarkRESTStepAlone(b *testing.B) {
	up := httptest.NewServer(benchkit.Upstream)
	defer up.Close()
	s, _, key := stepServer(b, up.URL, -1, true)
	ctx := context.Background()
	k, _ := s.keyOf(ctx, key)
	tool, _ := s.Tools().Tool("bench.get-issue")
	input := []byte(`{"id":"1"}`)
	call := func() *toolCall {
		return &toolCall{caller: k, tool: tool, input: input, context: CallContext{Unattended: true}}
	}
	b.Run("key", func(b *testing.B) {
		r := httptest.NewRequest("POST", "/v1/tools/bench.get-issue/invoke", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		for b.Loop() {
			if s.authenticate(w, r, false, nil) == nil {
				b.Fatal(w.Body)
			}
		}
	})
	b.Run("policy", func(b *testing.B) {
		for b.Loop() {
			if err := s.settle(ctx, call()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("approval", func(b *testing.B) {
		c := call()
		for b.Loop() {
			c.context.Unattended = true
			if err := s.approve(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("admission", func(b *testing.B) {
		r := httptest.NewRequest("POST", "/v1/tools/bench.get-issue/invoke", bytes.NewReader([]byte(`{"input":{"id":"1"}}`)))
		for b.Loop() {
			adm, err := s.admit("t")
			if err != nil {
				b.Fatal(err)
			}
			hold := s.cfg.Budget.HoldFor(s.shareOf("t"))
			if err := s.draw(r, hold, s.bodyDraw(r), s.cfg.BudgetWait); err != nil {
				b.Fatal(err)
			}
			hold.Release()
			adm.release()
		}
	})
	b.Run("input", func(b *testing.B) {
		for b.Loop() {
			if _, err := tool.ValidateInput(input); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("history", func(b *testing.B) {
		// Handed to a recorder whose writer keeps up (a sink that keeps
		// nothing, never resting): each record is queued and copied, as
		// when the store keeps up, not dropped.
		rec := &history.Recorder{Sink: discardCalls{}, MaxBusy: 1}
		rec.Start()
		defer rec.Close()
		s.cfg.History = rec
		defer func() { s.cfg.History = nil }()
		res := &synth.Result{Status: 200, Attempts: 1, Output: []byte(benchkit.Answer)}
		c := call()
		c.tenant = "t"
		start := time.Now()
		for b.Loop() {
			s.recordCall(c, start, res, nil)
		}
		b.ReportMetric(float64(rec.Dropped())/float64(b.N), "dropped/op")
	})
	// The history's writer, off the request path: a record queued,
	// redacted, cut and written to the SQLite store in batches of 200,
	// the writer never resting (Close waits for the last batch).
	b.Run("history-write", func(b *testing.B) {
		store := s.cfg.Calls.(*testStore)
		e := history.Entry{Record: history.Record{Tenant: "t", Tool: "bench.get-issue", Key: k.ID, At: time.Now(), Status: 200, Attempts: 1},
			Input: input, Output: []byte(benchkit.Answer)}
		rec := &history.Recorder{Sink: store, MaxBusy: 1, Queue: b.N + 1, QueueBytes: 1 << 40}
		rec.Start()
		for range b.N {
			rec.Add(e)
		}
		rec.Close()
		if rec.Written() != int64(b.N) {
			b.Fatalf("%d records written of %d", rec.Written(), b.N)
		}
	})
	b.Run("access", func(b *testing.B) {
		noop := s.accessLog(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
		r := httptest.NewRequest("POST", "/v1/tools/bench.get-issue/invoke", nil)
		w := httptest.NewRecorder()
		for b.Loop() {
			noop.ServeHTTP(w, r)
		}
	})
}

// discardCalls is a history sink that keeps nothing.
type discardCalls struct{}

func (discardCalls) AppendCalls(context.Context, []history.Record) error { return nil }
