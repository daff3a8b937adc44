package httpspec_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/redact/redacttest"
	"github.com/httptools/httptools/synth"
)

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDeeplyNestedAnswerIsRefused: an upstream answering 10 MiB of "[" (which
// crashed serve with a stack overflow) or an array nested 40 000 deep in
// 80 KB (seconds of quadratic validation) is refused as not JSON at the
// nesting limit, with an output schema that would have walked it, and the
// call allocates little more than the body it read.
func TestDeeplyNestedAnswerIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"10 MiB of [", bytes.Repeat([]byte("["), 10<<20-1)},
		{"40000 deep", []byte(strings.Repeat("[", 40000) + strings.Repeat("]", 40000))},
		{"objects 129 deep", []byte(strings.Repeat(`{"a":`, 129) + "1" + strings.Repeat("}", 129))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(tc.body)
			})
			tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/deep","timeoutMs":5000}`,
				`"output":{"type":"array","items":{"$ref":"#"}}`)
			var e *synth.Error
			alloc := allocated(func() { _, e = invoke(t, tool, synth.CallContext{}, `{}`) })
			if e == nil || e.Reason != synth.ReasonResponseNotJSON || !strings.Contains(e.Message, "nested deeper than 128 levels") {
				t.Fatalf("got %v, want response-not-json for nesting over 128", e)
			}
			if limit := uint64(3*len(tc.body)) + 4<<20; alloc > limit {
				t.Errorf("the call allocated %d bytes for a %d-byte answer; want at most %d", alloc, len(tc.body), limit)
			}
		})
	}
	// At the limit, the answer is read and validated.
	deep := strings.Repeat("[", 128) + strings.Repeat("]", 128)
	up := newUpstream(t, reply(200, deep))
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/deep"}`, `"output":{"type":"array","items":{"$ref":"#"}}`)
	if res, e := invoke(t, tool, synth.CallContext{}, `{}`); e != nil || string(res.Output) != deep {
		t.Fatalf("128 levels: %v", e)
	}
}

// TestDeeplyNestedInputIsRefused: input over the limit is refused before its
// schema is consulted and before anything is sent.
func TestDeeplyNestedInputIsRefused(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	tool := load(t, up.URL, `{"kind":"http","method":"POST","urlTemplate":"{URL}/in"}`, `"input":{"type":"object","properties":{"a":{"$ref":"#"}}}`)
	for _, in := range []string{
		`{"a":` + strings.Repeat("[", 1<<20) + `}`,
		`{"a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	} {
		var e *synth.Error
		alloc := allocated(func() { _, e = invoke(t, tool, synth.CallContext{}, in) })
		if e == nil || e.Code != synth.CodeInputValidationFailed || e.Reason != synth.ReasonInputInvalid || !strings.Contains(e.Message, "deeper than 128") {
			t.Fatalf("got %v, want input-validation-failed/input-invalid", e)
		}
		if alloc > uint64(2*len(in))+1<<20 {
			t.Errorf("refusing %d bytes of input allocated %d", len(in), alloc)
		}
	}
	if n := up.count(); n != 0 {
		t.Errorf("%d requests sent, want 0", n)
	}
}

// TestDuplicateKeysRefused: the validator and the URL, headers and body
// builders must read the same document; a member named twice at any depth
// is refused with its path, and nothing is sent.
func TestDuplicateKeysRefused(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	name := `"input":{"type":"object","properties":{"name":{"type":"string","pattern":"^[A-Za-z0-9._-]+$"},"id":{"type":"string","pattern":"^[a-z]+$"},"o":{"type":"object"}},"required":["name"]}`
	for _, tc := range []struct {
		name, spec, input, pointer string
	}{
		{"query", `{"kind":"http","method":"GET","urlTemplate":"{URL}/q{?name}"}`, `{"name":"Ann&amount=1","name":"Ann"}`, "/name"},
		{"text body", `{"kind":"http","method":"POST","urlTemplate":"{URL}/t","requestBody":{"kind":"text","template":"name={name}"}}`, `{"name":"Ann&amount=1","name":"Ann"}`, "/name"},
		{"path and header", `{"kind":"http","method":"GET","urlTemplate":"{URL}/p/{+id}","headers":[{"name":"X-Id","value":"{id}"}]}`, `{"name":"a","id":"../../admin","id":"ok"}`, "/id"},
		{"escaped twin", `{"kind":"http","method":"GET","urlTemplate":"{URL}/q{?name}"}`, `{"name":"x y","\u006eame":"ok"}`, "/name"},
		{"nested", `{"kind":"http","method":"POST","urlTemplate":"{URL}/n"}`, `{"name":"a","o":{"k":[{"z":1,"z":2}]}}`, "/o/k/0/z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := load(t, up.URL, tc.spec, name)
			_, e := invoke(t, tool, synth.CallContext{}, tc.input)
			if e == nil || e.Code != synth.CodeInputValidationFailed || e.Reason != synth.ReasonInputInvalid {
				t.Fatalf("got %v, want input-validation-failed/input-invalid", e)
			}
			if len(e.Violations) != 1 || e.Violations[0].Pointer != tc.pointer {
				t.Errorf("violations %+v, want one at %s", e.Violations, tc.pointer)
			}
		})
	}
	if n := up.count(); n != 0 {
		t.Errorf("%d requests sent, want 0", n)
	}
}

// TestDotSegmentsRefused: an input value that makes a "." or ".." path
// segment, in any spelling a server or proxy resolves, is refused with the
// input's path; values that only look alike pass.
func TestDotSegmentsRefused(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	for _, tc := range []struct {
		tmpl, input, pointer string
	}{
		{"/api/{x}/info", `{"x":".."}`, "/x"},
		{"/api/{x}/info", `{"x":"."}`, "/x"},
		{"/api/{x}", `{"x":".."}`, "/x"},
		{"/api/{+x}/info", `{"x":"a/../b"}`, "/x"},
		{"/api/{+x}/info", `{"x":"%2e%2E"}`, "/x"},
		{"/api/{+x}/info", `{"x":"%252e%252e"}`, "/x"},
		{"/api/{+x}/info", `{"x":"..;jsessionid=1"}`, "/x"},
		{"/api/{+x}/info", `{"x":"..\\admin"}`, "/x"},
		{"/api/{x}/info", `{"x":"../admin"}`, "/x"},
		{"/api/{x}/info", `{"x":"%2e%2e"}`, "/x"}, // sent as %252e%252e: decoded twice by a proxy and a server
		{"/api/{x}/info", `{"x":"..\\admin"}`, "/x"},
		{"/api{/p*}/info", `{"p":["a",".."]}`, "/p"},
		{"/api{/p}/info", `{"p":".."}`, "/p"},
		{"/api/{#x}", `{"x":"a"}`, ""}, // fragments are never sent: allowed
		{"/api/{a}{b}/info", `{"a":".","b":"."}`, "/a"},
		{"/api/{u.id}/info", `{"u":{"id":".."}}`, "/u/id"},
		{"/api/.{x}/info", `{"x":"."}`, "/x"},
		{"/api/{+x}/info", `{"x":"admin#"}`, "/x"},
		{"/api/{+x}/info", `{"x":"a?admin=1"}`, "/x"},
		{"/api{/x}/info", `{"x":"a?b"}`, ""}, // encoded by {/x}: allowed
		{"/s{?q}{+rest}", `{"q":"a","rest":"#frag"}`, "/rest"},
	} {
		tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}`+tc.tmpl+`"}`)
		_, e := invoke(t, tool, synth.CallContext{}, tc.input)
		if tc.pointer == "" {
			if e != nil {
				t.Errorf("%s %s: %v", tc.tmpl, tc.input, e)
			}
			continue
		}
		if e == nil || e.Code != synth.CodeInputValidationFailed || e.Reason != synth.ReasonInputInvalid || len(e.Violations) != 1 || e.Violations[0].Pointer != tc.pointer {
			t.Errorf("%s %s: got %+v, want input-invalid at %s", tc.tmpl, tc.input, e, tc.pointer)
		}
	}
	before := up.count()
	for _, ok := range []string{`{"x":"..."}`, `{"x":"..a"}`, `{"x":".well-known"}`, `{"x":"a.."}`, `{"x":"%2f"}`} {
		tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/api/{x}/info"}`)
		if _, e := invoke(t, tool, synth.CallContext{}, ok); e != nil {
			t.Errorf("%s: %v", ok, e)
		}
	}
	if got := up.count() - before; got != 5 {
		t.Errorf("look-alike values sent %d requests, want 5", got)
	}
	if got := up.count(); got != 7 { // the fragment case, the encoded ?, and the five look-alikes
		t.Errorf("%d requests in all, want 7", got)
	}
}

// TestHeaderAuthReachesTheWire: a header credential is sent as declared,
// whatever its name, over HTTP/1.1 and HTTP/2: no default replaces it.
func TestHeaderAuthReachesTheWire(t *testing.T) {
	var got []string
	h := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			got = append(got, strings.Join(r.Header.Values(name), "|"))
			w.Write([]byte(`{}`))
		}
	}
	names := []string{"User-Agent", "Content-Type", "Accept", "Accept-Encoding", "Cookie", "X-Api-Key", "Idempotency-Key", "Api-Key", "Authorization"}
	plain := httptest.NewServer(nil)
	defer plain.Close()
	h2 := httptest.NewUnstartedServer(nil)
	h2.EnableHTTP2 = true
	h2.StartTLS()
	defer h2.Close()
	pool := x509.NewCertPool()
	pool.AddCert(h2.Certificate())
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{
		TLSClientConfig: &tls.Config{RootCAs: pool}, UserAgent: httpspec.UserAgent, Logger: quiet,
	})))
	loader := &synth.Loader{Registry: reg}
	sent := 0
	for _, srv := range []*httptest.Server{plain, h2} {
		for _, name := range names {
			srv.Config.Handler = h(name)
			src := `{"id":"t.auth","description":"d","version":"1.0.0","mutating":true,"input":{"type":"object"},"output":{},
				"spec":{"kind":"http","method":"POST","urlTemplate":"` + srv.URL + `/a",
				"authorization":{"kind":"header","headerName":"` + name + `","secretRef":{"envName":"production","name":"KEY"}}}}`
			tool, err := loader.Load([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			tc := synth.CallContext{Secrets: mapResolver{"production/KEY": "key-" + name}}
			if _, err := tool.Invoke(context.Background(), tc, json.RawMessage(`{"k":1}`), synth.InvokeOptions{}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sent++
			if w := "key-" + name; got[len(got)-1] != w {
				t.Errorf("%s over %s: upstream saw %q, want %q", name, srv.URL[:5], got[len(got)-1], w)
			}
		}
	}
	if len(got) != sent || sent != 2*len(names) {
		t.Errorf("upstream saw %d requests, want %d", len(got), 2*len(names))
	}
}

type mapResolver map[string]string

func (m mapResolver) ResolveSecret(_ context.Context, ref synth.SecretRef) (string, error) {
	return m[ref.String()], nil
}

// TestPortsAndHeaderNamesAtLoad: an invalid port, a hop-by-hop header name
// and a static header that the credential would replace are load errors.
func TestPortsAndHeaderNamesAtLoad(t *testing.T) {
	for _, tc := range []struct{ spec, path, msg string }{
		{`"urlTemplate":"https://api.example.com:70000/x"`, "spec.urlTemplate", "port"},
		{`"urlTemplate":"https://api.example.com:0/x"`, "spec.urlTemplate", "port"},
		{`"urlTemplate":"https://api.example.com:65536/x"`, "spec.urlTemplate", "port"},
		{`"urlTemplate":"https://api.example.com:/x"`, "spec.urlTemplate", "port"},
		{`"urlTemplate":"https://api.example.com:0443/x"`, "spec.urlTemplate", "port"},
		{`"urlTemplate":"https://api.example.com/a/../b"`, "spec.urlTemplate", `".."`},
		{`"urlTemplate":"https://api.example.com/a/./b/{x}"`, "spec.urlTemplate", `".."`},
		{`"urlTemplate":"https://api.example.com/x","authorization":{"kind":"header","headerName":"Keep-Alive","secretRef":{"envName":"p","name":"K"}}`, "spec.authorization.headerName", "set by the HTTP client"},
		{`"urlTemplate":"https://api.example.com/x","authorization":{"kind":"header","headerName":"TE","secretRef":{"envName":"p","name":"K"}}`, "spec.authorization.headerName", "set by the HTTP client"},
		{`"urlTemplate":"https://api.example.com/x","headers":[{"name":"X-Key","value":"v"}],"authorization":{"kind":"header","headerName":"x-key","secretRef":{"envName":"p","name":"K"}}`, "spec.headers[0].name", "conflicts"},
	} {
		src := `{"id":"t.load","description":"d","version":"1.0.0","mutating":true,"input":{"type":"object","properties":{"x":{"type":"string"}}},"output":{},"spec":{"kind":"http","method":"GET",` + tc.spec + `}}`
		_, err := synth.Load([]byte(src))
		var e *synth.Error
		if !errorsAs(err, &e) {
			t.Errorf("%s: loaded, want an error at %s", tc.spec, tc.path)
			continue
		}
		found := false
		for _, p := range e.Problems {
			if p.Path == tc.path && strings.Contains(p.Message, tc.msg) && p.Severity == synth.SeverityError {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: problems %v, want one at %s mentioning %s", tc.spec, e.Problems, tc.path, tc.msg)
		}
	}
}

func errorsAs(err error, e **synth.Error) bool { return errors.As(err, e) }

// TestTruncatedAnswerIsNotAnOutput: an upstream that announces 200 bytes,
// sends 17 of valid JSON and closes gave 200 with that output; now each of
// 300 calls is handler-error/response-truncated.
func TestTruncatedAnswerIsNotAnOutput(t *testing.T) {
	up, _ := toolstest.RawUpstream(t, []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"+`{"ok":true,"n":1}`))
	tool := load(t, strings.TrimSuffix(up, "/"), `{"kind":"http","method":"GET","urlTemplate":"{URL}/t"}`)
	truncated := 0
	for range 300 {
		if _, e := invoke(t, tool, synth.CallContext{}, `{}`); e != nil && e.Code == synth.CodeHandlerError && e.Reason == httpspec.ReasonResponseTruncated {
			truncated++
		}
	}
	if truncated != 300 {
		t.Errorf("%d of 300 calls were response-truncated", truncated)
	}
}

// TestDryRunNeverShowsTheSecret: random secrets × every spelling, put in a
// header and the body through the input: the dry run (JSON and curl) holds
// none of them; a one-character secret leaves the host and body alone.
func TestDryRunNeverShowsTheSecret(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	spec := `{"kind":"http","method":"POST","urlTemplate":"https://api.example.com/x","headers":[{"name":"X-Echo","value":"{echo}"}],
		"requestBody":{"kind":"text","template":"echo={echo}"},"authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"T"}}}`
	tool := load(t, "", spec, `"input":{"type":"object","properties":{"echo":{"type":"string"}}}`)
	leaks := 0
	for range 40 {
		secret := redacttest.RandomSecret(r)
		tc := synth.CallContext{Secrets: mapResolver{"production/T": secret}}
		for enc, f := range redacttest.Encodings() {
			form := f(secret)
			if strings.ContainsAny(form, "\r\n\x00") {
				continue
			}
			in, _ := json.Marshal(map[string]string{"echo": form})
			out, err := tool.DryRun(context.Background(), tc, in, synth.InvokeOptions{})
			if err != nil {
				t.Fatalf("%s: %v", enc, err)
			}
			var d struct{ Curl string }
			json.Unmarshal(out, &d)
			for _, s := range []string{string(out), d.Curl} {
				if strings.Contains(s, secret) || (len(form) >= 8 && strings.Contains(s, form)) {
					leaks++
					t.Errorf("%s of %q in the dry run: %s", enc, secret, s)
				}
			}
		}
	}
	if leaks != 0 {
		t.Errorf("%d leaks", leaks)
	}
	tc := synth.CallContext{Secrets: mapResolver{"production/T": "x"}}
	out, err := tool.DryRun(context.Background(), tc, json.RawMessage(`{"echo":"example"}`), synth.InvokeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Curl string }
	json.Unmarshal(out, &d)
	if !strings.Contains(d.Curl, "'https://api.example.com/x'") || !strings.Contains(d.Curl, "'echo=example'") || !strings.Contains(d.Curl, `'Authorization: Bearer '"$HTTPTOOLS_SECRET_PRODUCTION_T"`) {
		t.Errorf("a one-character secret changed the curl line:\n%s", d.Curl)
	}
}
