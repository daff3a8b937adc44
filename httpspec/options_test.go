package httpspec_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/internal/testkit"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// slowUpstream answers after the request's context ends or after d.
func slowUpstream(t *testing.T, d time.Duration) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(d):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		}
	})
}

func invokeErr(t *testing.T, ctx context.Context, tool *synth.Tool, opts synth.InvokeOptions) *synth.Error {
	t.Helper()
	_, err := tool.Invoke(ctx, synth.CallContext{}, json.RawMessage(`{}`), opts)
	var e *synth.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a *synth.Error", err)
	}
	return e
}

// TestTimeoutNamesTheDeadlineThatFired: the caller's deadline, the call's
// timeout option and the manifest's timeoutMs are each named when they
// are the one that ended the call, with the figure that applied.
func TestTimeoutNamesTheDeadlineThatFired(t *testing.T) {
	up := slowUpstream(t, 10*time.Second)
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/slow","timeoutMs":30000}`)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	e := invokeErr(t, ctx, tool, synth.InvokeOptions{})
	if e.Reason != synth.ReasonTimeout || !strings.Contains(e.Message, "the caller's deadline passed, before the tool's timeoutMs of 30000ms") || !regexp.MustCompile(`timed out after (9\d|1\d\d)ms`).MatchString(e.Message) {
		t.Errorf("caller's deadline: %s: %q", e.Reason, e.Message)
	}
	if strings.Contains(e.Message, "timed out after 30000ms") {
		t.Errorf("names the manifest's figure for the caller's deadline: %q", e.Message)
	}

	e = invokeErr(t, context.Background(), tool, synth.InvokeOptions{Timeout: 80 * time.Millisecond})
	if e.Reason != synth.ReasonTimeout || !strings.Contains(e.Message, "timed out after 80ms (the call's timeout option)") {
		t.Errorf("option: %s: %q", e.Reason, e.Message)
	}

	short := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/slow","timeoutMs":120}`)
	e = invokeErr(t, context.Background(), short, synth.InvokeOptions{})
	if e.Reason != synth.ReasonTimeout || !strings.Contains(e.Message, "timed out after 120ms (the tool's timeoutMs)") {
		t.Errorf("manifest: %s: %q", e.Reason, e.Message)
	}

	// A caller's deadline later than the option: the option fires.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e = invokeErr(t, ctx, tool, synth.InvokeOptions{Timeout: 60 * time.Millisecond})
	if !strings.Contains(e.Message, "(the call's timeout option)") {
		t.Errorf("option under a later deadline: %q", e.Message)
	}

	// Cancelled, not timed out.
	ctx, cancelNow := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancelNow)
	e = invokeErr(t, ctx, tool, synth.InvokeOptions{})
	if e.Reason != synth.ReasonCanceled || !strings.Contains(e.Message, "canceled by its caller") {
		t.Errorf("cancel: %s: %q", e.Reason, e.Message)
	}
}

// TestTimeoutOptionReplacesTheManifests: a longer per-call timeout lets a
// call finish that the manifest's figure would have cut.
func TestTimeoutOptionReplacesTheManifests(t *testing.T) {
	up := slowUpstream(t, 300*time.Millisecond)
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/slow","timeoutMs":100}`)
	if _, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("with a 5 s option: %v", err)
	}
	if e := invokeErr(t, context.Background(), tool, synth.InvokeOptions{}); e.Reason != synth.ReasonTimeout {
		t.Fatalf("without: %v", e)
	}
}

// syncBuffer is a buffer safe to read while a logger or a process writes it.
type syncBuffer = testkit.Buffer

// TestPerCallLoggerAndAttrs: the call's logger takes the audit record, with
// the call's attributes, and the client's logger takes none; the
// idempotency key option reaches the header.
func TestPerCallLoggerAndAttrs(t *testing.T) {
	var clientLog, callLog syncBuffer
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{
		Logger: slog.New(slog.NewJSONHandler(&clientLog, nil)),
	})))
	up := newUpstream(t, reply(200, `{}`))
	tool, err := (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"t.opts","description":"d","version":"1.0.0","mutating":true,
	  "input":{"type":"object"},"output":{},
	  "spec":{"kind":"http","method":"POST","urlTemplate":"` + up.URL + `/x","headers":[{"name":"Idempotency-Key","value":""}],
	    "authorization":{"kind":"bearer","secretRef":{"envName":"e","name":"T"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cc := synth.CallContext{Tenant: "acme", IdempotencyKey: "from-context", Secrets: auth.Map{"e/T": "s3cret-token-value"}}
	_, err = tool.Invoke(context.Background(), cc, json.RawMessage(`{}`),
		synth.InvokeOptions{
			Logger:         slog.New(slog.NewJSONHandler(&callLog, nil)),
			LogAttrs:       []slog.Attr{slog.String("run", "r-17"), slog.Int("step", 3)},
			IdempotencyKey: "from-option",
		})
	if err != nil {
		t.Fatal(err)
	}
	if clientLog.String() != "" {
		t.Errorf("the client's logger got %q", clientLog.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(callLog.String()), &rec); err != nil {
		t.Fatalf("call log %q: %v", callLog.String(), err)
	}
	if rec["msg"] != "outbound call" || rec["tool"] != "t.opts" || rec["tenant"] != "acme" || rec["run"] != "r-17" || rec["step"] != 3.0 {
		t.Errorf("record %v", rec)
	}
	if strings.Contains(callLog.String(), "s3cret") {
		t.Errorf("the record holds the secret: %s", callLog.String())
	}
	if got := up.last(t).Header.Get("Idempotency-Key"); got != "from-option" {
		t.Errorf("Idempotency-Key %q, want the option's", got)
	}

	// Without the option, the client's logger and the context's key.
	if _, err := tool.Invoke(context.Background(), cc, json.RawMessage(`{}`), synth.InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(clientLog.String(), `"msg":"outbound call"`) {
		t.Errorf("client log %q", clientLog.String())
	}
	if got := up.last(t).Header.Get("Idempotency-Key"); got != "from-context" {
		t.Errorf("Idempotency-Key %q, want the context's", got)
	}
}

// TestLibraryLogsNothingByDefault: a client built without a logger writes
// no record to the program's default logger.
func TestLibraryLogsNothingByDefault(t *testing.T) {
	var global syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&global, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{})))
	up := newUpstream(t, reply(200, `{}`))
	tool, err := (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"t.quiet","description":"d","version":"1.0.0","mutating":false,
	  "input":{"type":"object"},"output":{},"spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if s := global.String(); s != "" {
		t.Errorf("the default logger got %q", s)
	}
}

// countingSender stands in front of a fetch.Client, as a kernel's test
// double or recorder would.
type countingSender struct {
	next *fetch.Client
	mu   sync.Mutex
	reqs []*fetch.Request
}

func (c *countingSender) Do(ctx context.Context, r *fetch.Request) (*fetch.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r)
	c.mu.Unlock()
	return c.next.Do(ctx, r)
}

// TestSenderSeam: handlers send through the Sender they were synthesized
// with, which sees the tool, tenant and policy of each request.
func TestSenderSeam(t *testing.T) {
	up := newUpstream(t, reply(200, `{"ok":true}`))
	s := &countingSender{next: testkit.LoopbackClient(fetch.Config{})}
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(s))
	tool, err := (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"t.seam","description":"d","version":"1.0.0","mutating":false,
	  "input":{"type":"object"},"output":{},"network":{"kind":"allowlist","hosts":["127.0.0.1"]},
	  "spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Invoke(context.Background(), synth.CallContext{Tenant: "acme"}, json.RawMessage(`{}`), synth.InvokeOptions{})
	if err != nil || string(res.Output) != `{"ok":true}` {
		t.Fatalf("%v %v", err, res)
	}
	if len(s.reqs) != 1 || s.reqs[0].Tool != "t.seam" || s.reqs[0].Tenant != "acme" || !s.reqs[0].Restricted || s.reqs[0].Allowlist[0] != "127.0.0.1" {
		t.Fatalf("sender saw %+v", s.reqs)
	}
	// A nil *fetch.Client is no client: the shared one is used.
	var none *fetch.Client
	if httpspec.NewSynthesizer(none) == nil {
		t.Fatal("nil")
	}
}

// TestSharedHeaderValuesAreClipped: the header a tool's calls share (see
// TestSharedHeaderStaysWhole) holds values whose length is their capacity,
// as every shared header value does: a Sender that appends to one
// (append(h.Values(k), …)) gets a copy, never a write into the array the
// tool's other calls are reading.
func TestSharedHeaderValuesAreClipped(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	s := &countingSender{next: testkit.LoopbackClient(fetch.Config{})}
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(s))
	tool, err := (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"t.tags","description":"d","version":"1.0.0","mutating":false,
	  "input":{"type":"object"},"output":{},
	  "spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/x",
	    "headers":[{"name":"X-Tag","value":"a"},{"name":"X-Tag","value":"b"},{"name":"X-Tag","value":"c"},{"name":"Accept","value":"application/json"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.reqs) != 2 {
		t.Fatalf("sender saw %d requests; want 2", len(s.reqs))
	}
	for _, r := range s.reqs {
		if got := strings.Join(r.Header.Values("X-Tag"), ","); got != "a,b,c" {
			t.Errorf("X-Tag %q; want a,b,c", got)
		}
		for k, v := range r.Header {
			if len(v) != cap(v) {
				t.Errorf("header %s: len %d, cap %d; want them equal", k, len(v), cap(v))
			}
		}
	}
}

// TestHeaderNamesAreTokens: header names (a header's, the header
// authorization's) are RFC 9110 tokens, refused with the field path
// otherwise.
func TestHeaderNamesAreTokens(t *testing.T) {
	good := []string{"X-Api-Key", "x_key", "X.Key~", "A!#$%&'*+-.^_`|~9"}
	bad := []string{"X Key", "X:Key", "é-Key", "X\tKey", "X(Key)", "X\"K", "X/Y", "X@Y", "X[Y]", "X{Y}", "X,Y", "X;Y", "X=Y", "X?Y", "X\\Y", "\x7f", "X\x00"}
	for _, name := range append(good, bad...) {
		n, _ := json.Marshal(name)
		for _, c := range []struct{ spec, path string }{
			{`{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/x","headers":[{"name":` + string(n) + `,"value":"v"}]}`, "spec.headers[0].name"},
			{`{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/x","authorization":{"kind":"header","headerName":` + string(n) + `,"secretRef":{"envName":"e","name":"K"}}}`, "spec.authorization.headerName"},
		} {
			_, err := loopbackLoader.Load([]byte(`{"id":"t.h","description":"d","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},"spec":` + c.spec + `}`))
			wantBad := slices.Contains(bad, name)
			if got := err != nil && strings.Contains(err.Error(), c.path) && strings.Contains(err.Error(), "is not a valid header name"); got != wantBad {
				t.Errorf("%q at %s: refused %v, want %v (%v)", name, c.path, got, wantBad, err)
			}
		}
	}
}

// TestHandlerSpecIsACopy: changing what Handler.Spec returns changes
// nothing the handler sends.
func TestHandlerSpecIsACopy(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/x","headers":[{"name":"X-A","value":"1"}],
	  "authorization":{"kind":"bearer","secretRef":{"envName":"e","name":"T"}},"parseJson":true,"successStatus":{"min":200,"max":299}}`)
	s := tool.Handler().(*httpspec.Handler).Spec()
	s.Method, s.URLTemplate, s.Headers[0].Value = "DELETE", "http://169.254.169.254/", "2"
	s.Authorization.SecretRef.Name, *s.ParseJSON, s.SuccessStatus.Min = "OTHER", false, 500
	if _, err := tool.Invoke(context.Background(), synth.CallContext{Secrets: auth.Map{"e/T": "tok-123456789"}}, json.RawMessage(`{}`), synth.InvokeOptions{}); err != nil {
		t.Fatal(err)
	}
	r := up.last(t)
	if r.Method != "GET" || r.URI != "/x" || r.Header.Get("X-A") != "1" || r.Header.Get("Authorization") != "Bearer tok-123456789" {
		t.Errorf("sent %+v", r)
	}
	if again := tool.Handler().(*httpspec.Handler).Spec(); again.Method != "GET" || again.Authorization.SecretRef.Name != "T" || !*again.ParseJSON {
		t.Errorf("spec changed: %+v", again)
	}
}

// TestPercentEncodedVariableNames: a query parameter whose name RFC 6570
// cannot spell is written percent-encoded, sent so (the server decodes
// it) and read from the input member of its decoded name.
func TestPercentEncodedVariableNames(t *testing.T) {
	var got []string
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		got = []string{q.Get("max-keys"), q.Get("$filter"), q.Get("include[]"), q.Get("assignee.any"), r.URL.Path}
		w.Write([]byte(`{}`))
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/b/{bucket%2Dname}{?max%2Dkeys,%24filter,include%5B%5D*,assignee%2Eany}"}`,
		`"input":{"type":"object","properties":{"bucket-name":{"type":"string"},"max-keys":{"type":"integer"},"$filter":{"type":"string"},"include[]":{"type":"array"},"assignee.any":{"type":"string"}},"required":["bucket-name"]}`)
	for _, w := range tool.Warnings() {
		if strings.Contains(w.Message, "not declared") {
			t.Errorf("warning %v", w)
		}
	}
	if _, e := invoke(t, tool, synth.CallContext{}, `{"bucket-name":"logs","max-keys":5,"$filter":"a eq 1","include[]":["x","y"],"assignee.any":"bob"}`); e != nil {
		t.Fatal(e)
	}
	if want := []string{"5", "a eq 1", "x", "bob", "/b/logs"}; !slices.Equal(got, want) {
		t.Errorf("server read %q, want %q", got, want)
	}
	if r := up.last(t); !strings.Contains(r.URI, "max%2Dkeys=5") || !strings.Contains(r.URI, "include%5B%5D=x&include%5B%5D=y") {
		t.Errorf("sent %s", r.URI)
	}
}
