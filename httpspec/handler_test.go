package httpspec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/synth"
)

// upstream is a recording test server: it keeps every request it got and
// answers with the handler it was given.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method, URI string
	Header      http.Header
	Body        string
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, recorded{r.Method, r.RequestURI, r.Header.Clone(), string(b)})
		u.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

func (u *upstream) last(t *testing.T) recorded {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		t.Fatal("the upstream got no request")
	}
	return u.reqs[len(u.reqs)-1]
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// load builds a tool whose spec is specJSON with {URL} replaced by the
// server's URL. extra adds top-level manifest fields.
func load(t *testing.T, srvURL, specJSON string, extra ...string) *synth.Tool {
	t.Helper()
	fields := ""
	for _, e := range extra {
		fields += "," + e
	}
	if !strings.Contains(fields, `"input"`) {
		fields += `,"input":{"type":"object"}`
	}
	if !strings.Contains(fields, `"output"`) {
		fields += `,"output":{}`
	}
	src := `{"id":"t.tool","description":"d","version":"1.0.0","mutating":true` + fields +
		`,"spec":` + strings.ReplaceAll(specJSON, "{URL}", srvURL) + `}`
	tool, err := loopbackLoader.Load([]byte(src))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return tool
}

// loopbackLoader synthesizes http tools whose client may reach 127.0.0.0/8,
// where httptest servers listen; the guard refuses it otherwise.
var loopbackLoader = func() *synth.Loader {
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{
		UserAgent:    httpspec.UserAgent,
		RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond,
		Logger: quiet,
	})))
	return &synth.Loader{Registry: reg}
}()

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// countingSecrets is a SecretResolver that counts its calls.
type countingSecrets struct {
	calls  atomic.Int32
	values map[string]string
}

func (c *countingSecrets) ResolveSecret(ctx context.Context, ref synth.SecretRef) (string, error) {
	c.calls.Add(1)
	return auth.Map(c.values).ResolveSecret(ctx, ref)
}

func invoke(t *testing.T, tool *synth.Tool, tc synth.CallContext, input string) (*synth.Result, *synth.Error) {
	t.Helper()
	res, err := tool.Invoke(context.Background(), tc, json.RawMessage(input), synth.InvokeOptions{})
	if err == nil {
		return res, nil
	}
	var e *synth.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *synth.Error", err)
	}
	return nil, e
}

func TestURLFilling(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	for _, tc := range []struct {
		name, tmpl, input, want string
	}{
		{"space", "{URL}/s/{q}", `{"q":"claude code"}`, "/s/claude%20code"},
		{"delimiters cannot add a segment", "{URL}/s/{q}", `{"q":"a/b?c"}`, "/s/a%2Fb%3Fc"},
		{"number text kept", "{URL}/n/{n}", `{"n":42}`, "/n/42"},
		{"big integer exact", "{URL}/n/{n}", `{"n":9007199254740993}`, "/n/9007199254740993"},
		{"float text kept", "{URL}/n/{n}", `{"n":1.50}`, "/n/1.50"},
		{"boolean", "{URL}/b/{b}", `{"b":true}`, "/b/true"},
		{"nested", "{URL}/u/{user.id}", `{"user":{"id":"u 1"}}`, "/u/u%201"},
		{"query omits missing", "{URL}/s{?q,page,limit}", `{"q":"go","limit":10}`, "/s?q=go&limit=10"},
		{"query omits null", "{URL}/s{?q,page}", `{"q":"go","page":null}`, "/s?q=go"},
		{"query list", "{URL}/s{?ids}", `{"ids":[1,2,3]}`, "/s?ids=1,2,3"},
		{"query explode object", "{URL}/s{?f*}", `{"f":{"a":"1","b":"x y"}}`, "/s?a=1&b=x%20y"},
		{"path explode", "{URL}/x{/p*}", `{"p":["a","b c"]}`, "/x/a/b%20c"},
		{"utf8", "{URL}/s{?q}", `{"q":"drücken"}`, "/s?q=dr%C3%BCcken"},
		{"reserved", "{URL}/r/{+path}", `{"path":"a/b"}`, "/r/a/b"},
		{"fragment-free continuation", "{URL}/s{?q}{&page}", `{"q":"x","page":2}`, "/s?q=x&page=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"`+tc.tmpl+`"}`)
			if _, e := invoke(t, tool, synth.CallContext{}, tc.input); e != nil {
				t.Fatal(e)
			}
			if got := up.last(t).URI; got != tc.want {
				t.Errorf("upstream saw %s, want %s", got, tc.want)
			}
		})
	}
}

func TestURLValueErrors(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/x/{id}"}`)
	for _, tc := range []struct{ input, reason, msg string }{
		{`{}`, httpspec.ReasonMissingValue, "{id}"},
		{`{"id":null}`, httpspec.ReasonMissingValue, "{id}"},
		{`{"id":{"a":1}}`, httpspec.ReasonNotPrimitive, "must be a primitive"},
		{`{"id":[1]}`, httpspec.ReasonNotPrimitive, "must be a primitive"},
	} {
		_, e := invoke(t, tool, synth.CallContext{}, tc.input)
		if e == nil || e.Code != synth.CodeHandlerError || e.Reason != tc.reason || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: got %v", tc.input, e)
		}
		if e != nil && !strings.HasPrefix(e.Message, `Tool "t.tool" failed: `) {
			t.Errorf("message %q", e.Message)
		}
	}
	if n := up.count(); n != 0 {
		t.Errorf("%d requests sent, want 0", n)
	}
}

func TestAuth(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	secrets := &countingSecrets{values: map[string]string{"production/TOKEN": "tok-1"}}
	tc := synth.CallContext{Secrets: secrets}

	bearer := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/a","authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}`)
	invoke(t, bearer, tc, `{}`)
	if got := up.last(t).Header.Get("Authorization"); got != "Bearer tok-1" {
		t.Errorf("bearer: Authorization %q", got)
	}
	header := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/a","authorization":{"kind":"header","headerName":"X-Api-Key","secretRef":{"envName":"production","name":"TOKEN"}}}`)
	invoke(t, header, tc, `{}`)
	if r := up.last(t); r.Header.Get("X-Api-Key") != "tok-1" || r.Header.Get("Authorization") != "" {
		t.Errorf("header auth: X-Api-Key %q, Authorization %q", r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
	}
	if n := secrets.calls.Load(); n != 2 {
		t.Errorf("resolver called %d times, want 2 (once per call)", n)
	}
	// A rotated secret is used on the very next call.
	secrets.values["production/TOKEN"] = "tok-2"
	invoke(t, bearer, tc, `{}`)
	if got := up.last(t).Header.Get("Authorization"); got != "Bearer tok-2" {
		t.Errorf("after rotation: %q", got)
	}
	// No auth declared: the resolver is never asked.
	none := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/a"}`)
	invoke(t, none, tc, `{}`)
	if n := secrets.calls.Load(); n != 3 {
		t.Errorf("resolver called %d times, want 3", n)
	}
	// Auth declared, no resolver wired; and a missing secret.
	sent := up.count()
	_, e := invoke(t, bearer, synth.CallContext{}, `{}`)
	if e == nil || e.Code != synth.CodePreconditionFailed || e.Reason != synth.ReasonSecretUnavailable || !strings.Contains(e.Message, "no secret resolver is wired") {
		t.Errorf("no resolver: %v", e)
	}
	_, e = invoke(t, bearer, synth.CallContext{Secrets: auth.Map{}}, `{}`)
	// The message says how to store it, for the service and for a local call.
	if e == nil || e.Reason != synth.ReasonSecretUnavailable || !strings.HasPrefix(e.Message, `Tool "t.tool" was not run: secret-unavailable: secret production/TOKEN`) ||
		!strings.Contains(e.Message, "PUT /v1/secrets/production/TOKEN") || !strings.Contains(e.Message, "--secret production/TOKEN=") ||
		!strings.Contains(e.Message, "$HTTPTOOLS_SECRET_PRODUCTION_TOKEN") {
		t.Errorf("missing secret: %v", e)
	}
	if up.count() != sent {
		t.Error("a call without its secret must send nothing")
	}
}

func TestBodies(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	for _, tc := range []struct {
		name, spec, input, body, ctype string
	}{
		{"POST default json-input minus consumed keys", `"method":"POST","urlTemplate":"{URL}/r/{owner}/{repo}"`,
			`{"owner":"o","title":"t","repo":"r","id":9007199254740993,"n":1.0}`, `{"title":"t","id":9007199254740993,"n":1.0}`, "application/json"},
		{"nothing left: no body, no content type", `"method":"POST","urlTemplate":"{URL}/r/{id}"`, `{"id":"1"}`, "", ""},
		{"DELETE default json-input", `"method":"DELETE","urlTemplate":"{URL}/r"`, `{"why":"x"}`, `{"why":"x"}`, "application/json"},
		{"passthrough", `"method":"PUT","urlTemplate":"{URL}/r/{id}","requestBody":{"kind":"input-passthrough"}`, `{"id":"1","z":2}`, `{"id":"1","z":2}`, "application/json"},
		{"GET has no body", `"method":"GET","urlTemplate":"{URL}/r"`, `{"a":1}`, "", ""},
		{"text", `"method":"POST","urlTemplate":"{URL}/r","requestBody":{"kind":"text","template":"hello {name}, {missing} {nil}!"}`,
			`{"name":"Ann","nil":null}`, "hello Ann, {missing} !", "text/plain"},
		{"manifest Content-Type wins", `"method":"POST","urlTemplate":"{URL}/r","headers":[{"name":"content-type","value":"application/x-www-form-urlencoded"}],"requestBody":{"kind":"text","template":"a={a}"}`,
			`{"a":"1"}`, "a=1", "application/x-www-form-urlencoded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := load(t, up.URL, `{"kind":"http",`+tc.spec+`}`)
			if _, e := invoke(t, tool, synth.CallContext{}, tc.input); e != nil {
				t.Fatal(e)
			}
			r := up.last(t)
			if r.Body != tc.body || r.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("body %q type %q; want %q %q", r.Body, r.Header.Get("Content-Type"), tc.body, tc.ctype)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/h","headers":[
		{"name":"X-Id","value":"id-{id}"},{"name":"X-Absent","value":"{nope}"},{"name":"X-Null","value":"[{n}]"},
		{"name":"X-Num","value":"{big}"},{"name":"X-Raw","value":"a b/c?d"},{"name":"X-Lone-Null","value":"{n}"},{"name":"X-Part","value":"v={nope}"}]}`)
	invoke(t, tool, synth.CallContext{}, `{"id":"a b","n":null,"big":9007199254740993}`)
	h := up.last(t).Header
	for k, want := range map[string]string{"X-Id": "id-a b", "X-Null": "[]", "X-Num": "9007199254740993", "X-Raw": "a b/c?d", "X-Part": "v={nope}", "User-Agent": httpspec.UserAgent} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	// A header that is one input value the input lacks (or gives null)
	// is optional: not sent.
	for _, k := range []string{"X-Absent", "X-Lone-Null"} {
		if v, sent := h[k]; sent {
			t.Errorf("%s sent as %q", k, v)
		}
	}
	ua := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/h","headers":[{"name":"user-agent","value":"acme/2"}]}`)
	invoke(t, ua, synth.CallContext{}, `{}`)
	if got := up.last(t).Header.Values("User-Agent"); len(got) != 1 || got[0] != "acme/2" {
		t.Errorf("User-Agent %v, want the manifest's only", got)
	}
}

// TestHeaderInjectionRefused: a value built from input that holds CR, LF or
// NUL fails before anything is sent, and the error does not echo it.
func TestHeaderInjectionRefused(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/h","headers":[{"name":"X-Note","value":"{note}"}]}`)
	for _, evil := range []string{"a\r\nX-Injected: 1", "a\nb", "a\u0000b", "a\rb"} {
		in, _ := json.Marshal(map[string]string{"note": evil})
		_, e := invoke(t, tool, synth.CallContext{}, string(in))
		if e == nil || e.Reason != httpspec.ReasonInvalidHeader {
			t.Fatalf("%q: got %v", evil, e)
		}
		if strings.Contains(e.Message, "Injected") || strings.Contains(e.Message, evil) {
			t.Errorf("the error echoes the value: %q", e.Message)
		}
	}
	if n := up.count(); n != 0 {
		t.Errorf("%d requests reached the upstream, want 0", n)
	}
}

func TestStatusAndParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.HandlerFunc
		spec    string
		output  string
		reason  string
		status  int
		message string
	}{
		{"json kept exactly", reply(200, ` {"id": 9007199254740993, "x": 1.0} `), "", `{"id": 9007199254740993, "x": 1.0}`, "", 0, ""},
		{"empty body is null", reply(204, ""), "", "null", "", 0, ""},
		{"not json", reply(200, "<html>"), "", "", synth.ReasonResponseNotJSON, 200, "not valid JSON"},
		{"text", reply(200, "plain <b>text</b>\n"), `,"parseJson":false`, `"plain <b>text</b>\n"`, "", 0, ""},
		{"text not utf8", reply(200, "\xff\xfe"), `,"parseJson":false`, "", httpspec.ReasonResponseNotText, 200, "not valid UTF-8"},
		{"429 with body", reply(429, "rate limit exceeded"), "", "", httpspec.ReasonUpstreamStatus, 429, "429"},
		{"500", reply(500, `{"error":"boom"}`), "", "", httpspec.ReasonUpstreamStatus, 500, `{"error":"boom"}`},
		{"302 inside a widened range", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(302) }, `,"successStatus":{"min":200,"max":399}`, "null", "", 0, ""},
		{"302 outside the default range", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(302) }, "", "", httpspec.ReasonUpstreamStatus, 302, "302"},
		{"201 only", reply(200, `{}`), `,"successStatus":{"min":201,"max":201}`, "", httpspec.ReasonUpstreamStatus, 200, "outside the success range 201–201"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, tc.h)
			tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/s"`+tc.spec+`}`)
			res, e := invoke(t, tool, synth.CallContext{}, `{}`)
			if tc.reason == "" {
				if e != nil {
					t.Fatal(e)
				}
				if string(res.Output) != tc.output {
					t.Errorf("output %s, want %s", res.Output, tc.output)
				}
				return
			}
			if e == nil || e.Code != synth.CodeHandlerError || e.Reason != tc.reason || e.Status != tc.status || !strings.Contains(e.Error(), tc.message) {
				t.Fatalf("got %+v", e)
			}
			if tc.status == 429 && (!strings.Contains(e.Outside, "rate limit exceeded") || strings.Contains(e.Message, "rate limit")) {
				t.Errorf("outside %q must hold the body, message %q must not", e.Outside, e.Message)
			}
		})
	}
}

func TestUpstreamStatusBodyIsCappedAndRedacted(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		fmt.Fprintf(w, "bad token %s; url-encoded %s; %s", r.Header.Get("Authorization"), "s3cr%2Ft%2B1", long)
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/s","authorization":{"kind":"bearer","secretRef":{"envName":"p","name":"T"}}}`)
	_, e := invoke(t, tool, synth.CallContext{Secrets: auth.Map{"p/T": "s3cr/t+1"}}, `{}`)
	if e == nil || e.Status != 401 {
		t.Fatalf("got %v", e)
	}
	for _, s := range []string{e.Message, e.Body, fmt.Sprint(e.Details())} {
		if strings.Contains(s, "s3cr/t+1") || strings.Contains(s, "s3cr%2Ft%2B1") {
			t.Errorf("secret leaked: %q", s)
		}
	}
	if !strings.Contains(e.Body, "bad token Bearer [REDACTED]; url-encoded [REDACTED]") {
		t.Errorf("body %q", e.Body[:60])
	}
	if len(e.Body) > 512 || !json.Valid([]byte(fmt.Sprintf("%q", e.Body))) {
		t.Errorf("body is %d bytes, want at most 512 cut on a character", len(e.Body))
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/slow","timeoutMs":100}`)
	start := time.Now()
	_, e := invoke(t, tool, synth.CallContext{}, `{}`)
	if e == nil || e.Reason != synth.ReasonTimeout || !strings.Contains(e.Message, "timed out after 100ms") {
		t.Fatalf("got %v", e)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	// The caller's cancellation stops the call.
	arrived := make(chan struct{}, 1)
	hold := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	long := load(t, hold.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/slow","timeoutMs":60000}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := long.Invoke(ctx, synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{})
		done <- err
	}()
	<-arrived
	cancel()
	err := <-done
	var se *synth.Error
	if !errors.As(err, &se) || se.Reason != synth.ReasonCanceled {
		t.Fatalf("got %v", err)
	}
}

func TestResponseTooLarge(t *testing.T) {
	chunk := strings.Repeat("x", 64<<10)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 64; i++ { // 4 MiB, chunked
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/big","parseJson":false}`, `"limits":{"memMB":1,"cpuMs":1}`)
	_, e := invoke(t, tool, synth.CallContext{}, `{}`)
	if e == nil || e.Reason != httpspec.ReasonResponseTooLarge || !strings.Contains(e.Message, "1048576-byte cap") {
		t.Fatalf("got %v", e)
	}
}

// fakeConnections hands out tokens and counts requests.
type fakeConnections struct {
	mu       sync.Mutex
	reqs     []synth.ConnectionRequest
	token    string
	refreshd string
}

func (f *fakeConnections) AccessToken(_ context.Context, req synth.ConnectionRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	if req.ForceRefresh {
		return f.refreshd, nil
	}
	return f.token, nil
}

func TestConnectionAuth(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer fresh" {
			w.WriteHeader(401)
			return
		}
		io.WriteString(w, `{"id":"m1"}`)
	})
	needs := `"needsSpec":{"connections":{"gmail":{"app":"google","permissions":["gmail.send"],"as":"person"}}}`
	tool := load(t, up.URL, `{"kind":"http","method":"POST","urlTemplate":"{URL}/send","authorization":{"kind":"connection","connection":"gmail"}}`, needs)
	conns := &fakeConnections{token: "stale", refreshd: "fresh"}
	res, e := invoke(t, tool, synth.CallContext{Tenant: "t1", Person: "u1", Connections: conns}, `{"raw":"x"}`)
	if e != nil {
		t.Fatal(e)
	}
	if res.Attempts != 2 || up.count() != 2 || len(conns.reqs) != 2 || !conns.reqs[1].ForceRefresh {
		t.Errorf("attempts %d, upstream %d, token requests %d; want one forced refresh and one retry", res.Attempts, up.count(), len(conns.reqs))
	}
	if r := conns.reqs[0]; r.Tenant != "t1" || r.Person != "u1" || r.Name != "gmail" || r.Need.App != "google" {
		t.Errorf("request %+v", r)
	}
	_, e = invoke(t, tool, synth.CallContext{Connections: conns}, `{}`)
	if e == nil || e.Reason != synth.ReasonConnectionUnavailable || !strings.Contains(e.Message, "the run has no person") {
		t.Errorf("no person: %v", e)
	}
	_, e = invoke(t, tool, synth.CallContext{Person: "u1"}, `{}`)
	// No connection source (serve without --apps): the message says the
	// fix, not the wiring.
	if e == nil || e.Code != synth.CodePreconditionFailed || e.Reason != synth.ReasonConnectionUnavailable ||
		!strings.Contains(e.Message, "start httptools serve with --apps apps.json naming app \"google\"") || strings.Contains(e.Message, "wired") {
		t.Errorf("no source: %v", e)
	}
}

func TestSecretNames(t *testing.T) {
	tool := load(t, "http://x.test", `{"kind":"http","method":"GET","urlTemplate":"{URL}/","authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}`,
		`"needsSpec":{"secrets":{"WEBHOOK":{"type":"string"},"TOKEN":{}}}`)
	if got := strings.Join(tool.SecretNames(), ","); got != "TOKEN,WEBHOOK" {
		t.Errorf("SecretNames() = %s", got)
	}
}

func TestDefaults(t *testing.T) {
	var s httpspec.Spec
	if s.Timeout() != 30000 || !s.Parse() || s.Success() != (httpspec.StatusRange{Min: 200, Max: 299}) {
		t.Errorf("defaults: timeout %d, parse %v, success %v", s.Timeout(), s.Parse(), s.Success())
	}
	for method, want := range map[string]string{"GET": "", "POST": "json-input", "PUT": "json-input", "PATCH": "json-input", "DELETE": "json-input"} {
		if got := (&httpspec.Spec{Method: method}).BodyKind(); got != want {
			t.Errorf("%s: body %q, want %q", method, got, want)
		}
	}
}

// TestIdempotencyKey: an Idempotency-Key header the input leaves empty holds
// the kernel's key for the call; with no key at all, no empty header is sent.
func TestIdempotencyKey(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	tool := load(t, up.URL, `{"kind":"http","method":"POST","urlTemplate":"{URL}/pay","headers":[{"name":"Idempotency-Key","value":"{request_id}"}]}`)
	for _, tc := range []struct {
		input, ctxKey, want string
		present             bool
	}{
		{`{"request_id":"from-input"}`, "from-kernel", "from-input", true},
		{`{"request_id":null}`, "from-kernel", "from-kernel", true},
		{`{"request_id":null}`, "", "", false},
	} {
		invoke(t, tool, synth.CallContext{IdempotencyKey: tc.ctxKey}, tc.input)
		got := up.last(t).Header.Values("Idempotency-Key")
		if (len(got) == 1) != tc.present || (tc.present && got[0] != tc.want) {
			t.Errorf("%s with key %q: header %q, want %q", tc.input, tc.ctxKey, got, tc.want)
		}
	}
}

// TestHTMLErrorPageIsWordedAsText: an upstream's HTML error page is not
// put whole in the message: its title is, and details.body keeps the
// page's start.
func TestHTMLErrorPageIsWordedAsText(t *testing.T) {
	page := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(502)
		io.WriteString(w, page)
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/x"}`)
	_, e := invoke(t, tool, synth.CallContext{}, `{}`)
	if e == nil || e.Reason != httpspec.ReasonUpstreamStatus || e.Outside != "502 Bad Gateway" || !strings.Contains(e.Message, "with an HTML page") ||
		strings.Contains(e.Error(), "<") || !strings.Contains(e.Body, "<title>502 Bad Gateway</title>") {
		t.Errorf("%v; body %q", e, e.Body)
	}
}

// TestHeaderSentAsWritten: a manifest's header goes on the wire and in the
// dry run as the manifest spells it (X-GitHub-Api-Version, not
// X-Github-Api-Version); the ones code reads or strips stay canonical.
func TestHeaderSentAsWritten(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	raw := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var b []byte
		buf := make([]byte, 4096)
		for !bytes.Contains(b, []byte("\r\n\r\n")) {
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			b = append(b, buf[:n]...)
		}
		raw <- string(b)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
	}()
	tool := load(t, "http://"+ln.Addr().String(), `{"kind":"http","method":"GET","urlTemplate":"{URL}/x",
		"headers":[{"name":"X-GitHub-Api-Version","value":"2022-11-28"},{"name":"user-agent","value":"mine/1"},{"name":"range","value":"bytes=0-9"}]}`)
	out, err := tool.DryRun(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{})
	if err != nil || !strings.Contains(string(out), "X-GitHub-Api-Version: 2022-11-28") || !strings.Contains(string(out), "User-Agent: mine/1") {
		t.Errorf("dry run: %v\n%s", err, out)
	}
	if _, e := invoke(t, tool, synth.CallContext{}, `{}`); e != nil {
		t.Fatal(e)
	}
	got := <-raw
	// Range stays canonical: net/http's transport reads it to leave out
	// its own Accept-Encoding on a range request.
	if !strings.Contains(got, "\r\nX-GitHub-Api-Version: 2022-11-28\r\n") || !strings.Contains(got, "\r\nUser-Agent: mine/1\r\n") || strings.Count(got, "User-Agent") != 1 ||
		!strings.Contains(got, "\r\nRange: bytes=0-9\r\n") || strings.Contains(got, "Accept-Encoding") {
		t.Errorf("on the wire:\n%s", got)
	}
}

// TestOptionalWholeBody: a body that is one input member sent whole
// ({body}, as the OpenAPI import makes an optional JSON body) is sent
// when the input gives it and not at all, nor its Content-Type, when the
// input leaves it out or gives null (issue 43, class 1).
func TestOptionalWholeBody(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	for _, auth := range []string{"", `,"authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"T"}}`} {
		tool := load(t, up.URL, `{"kind":"http","method":"DELETE","urlTemplate":"{URL}/zones/{id}","headers":[{"name":"Content-Type","value":"application/json"}],"requestBody":{"kind":"text","template":"{body}"}`+auth+`}`,
			`"input":{"type":"object","properties":{"id":{"type":"string"},"body":{"type":["object","null"]}},"required":["id"]}`)
		for _, tc := range []struct{ input, body, ctype string }{
			{`{"id":"z1","body":{"purge":true}}`, `{"purge":true}`, "application/json"},
			{`{"id":"z1"}`, "", ""},
			{`{"id":"z1","body":null}`, "", ""},
		} {
			before := up.count()
			if _, e := invoke(t, tool, synth.CallContext{Secrets: &countingSecrets{values: map[string]string{"production/T": "t"}}}, tc.input); e != nil {
				t.Fatal(e)
			}
			r := up.last(t)
			if up.count() != before+1 || r.Body != tc.body || len(r.Body) != len(tc.body) {
				t.Errorf("%s: %d requests, body %q (%d bytes), want 1 and %q", tc.input, up.count()-before, r.Body, len(r.Body), tc.body)
			}
			if v, sent := r.Header["Content-Type"]; tc.ctype == "" && sent || tc.ctype != "" && r.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("%s%s: Content-Type %v (sent %v), want %q", tc.input, auth, v, sent, tc.ctype)
			}
		}
	}
}
