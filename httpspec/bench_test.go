package httpspec_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/internal/benchkit"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/synth"
)

// kib is the benchmarks' upstream answer: 1 KiB of JSON.
var kib = benchkit.Answer

// BenchmarkInvoke times one GET that returns 1 KiB of JSON, synthesized from
// a manifest and written by hand with net/http, against the same server in
// the same run. The difference is httptools' overhead: input validation, URL
// expansion, secret resolution, headers, status check, JSON check and output
// validation.
func BenchmarkInvoke(b *testing.B) {
	srv := httptest.NewServer(benchkit.Upstream)
	defer srv.Close()

	// The baseline: what a careful engineer writes by hand for one API call,
	// with a deadline as every outbound call should have.
	b.Run("handwritten", func(b *testing.B) { handwritten(b, pooled(), srv.URL, true) })
	// The same without a deadline, for reference.
	b.Run("handwritten-nodeadline", func(b *testing.B) { handwritten(b, pooled(), srv.URL, false) })

	b.Run("synthesized", func(b *testing.B) { synthesized(b, srv.URL, loopbackLoader) })
	// The same with the audit record switched off (a logger whose level is
	// above Info), to show what the record itself costs.
	b.Run("synthesized-noaudit", func(b *testing.B) { synthesized(b, srv.URL, quietLoader) })
}

// BenchmarkInvokePaired is BenchmarkInvoke with the two calls taken turn
// about in one loop, against the same server, each timed on its own: the
// machine's drift between runs (±10–20% on a shared 2-core box, more than
// the difference being measured) then falls on both alike. It reports the
// mean of each and their difference (overhead-µs/call); the order within a
// pair alternates, so neither always runs after the other. Its ns/op,
// B/op and allocs/op are those of the pair.
func BenchmarkInvokePaired(b *testing.B) {
	srv := httptest.NewServer(benchkit.Upstream)
	defer srv.Close()
	client := pooled()
	hand := func() error { return handCall(client, srv.URL, true) }
	b.Run("synthesized", func(b *testing.B) { paired(b, hand, benchTool(b, srv.URL, loopbackLoader)) })
	b.Run("synthesized-noaudit", func(b *testing.B) { paired(b, hand, benchTool(b, srv.URL, quietLoader)) })
}

// paired times hand and syn in turn and reports their means and the
// difference.
func paired(b *testing.B, hand, syn func() error) {
	calls := [2]func() error{hand, syn}
	var took [2]time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for k := range 2 {
			i := (n + k) % 2
			t := time.Now()
			if err := calls[i](); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(t)
		}
		n++
	}
	h, s := took[0].Seconds()*1e6/float64(n), took[1].Seconds()*1e6/float64(n)
	b.ReportMetric(h, "handwritten-µs/call")
	b.ReportMetric(s, "synthesized-µs/call")
	b.ReportMetric(s-h, "overhead-µs/call")
}

func synthesized(b *testing.B, base string, loader *synth.Loader) {
	call := benchTool(b, base, loader)
	b.ReportAllocs()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTool synthesizes the benchmarks' tool against base and returns one
// call of it.
func benchTool(b *testing.B, base string, loader *synth.Loader) func() error {
	tool, err := loader.Load([]byte(`{"id":"bench.get-issue","description":"d","version":"1.0.0","mutating":false,
	  "input":{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"number":{"type":"integer"}},"required":["owner","repo","number"]},
	  "output":{"type":"object"},
	  "spec":{"kind":"http","method":"GET","urlTemplate":"` + base + `/repos/{owner}/{repo}/issues/{number}",
	    "headers":[{"name":"Accept","value":"application/json"}],
	    "authorization":{"kind":"bearer","secretRef":{"envName":"production","name":"TOKEN"}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tc := synth.CallContext{Tenant: "t", Secrets: auth.Map{"production/TOKEN": "t0ken"}}
	in := json.RawMessage(`{"owner":"octo","repo":"hello","number":42}`)
	return func() error {
		res, err := tool.Invoke(ctx, tc, in, synth.InvokeOptions{})
		if err == nil && len(res.Output) != len(kib) {
			err = errors.New("short output")
		}
		return err
	}
}

// quietLoader is loopbackLoader with the audit record off.
var quietLoader = func() *synth.Loader {
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(testkit.LoopbackClient(fetch.Config{
		UserAgent: httpspec.UserAgent,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError})),
	})))
	return &synth.Loader{Registry: reg}
}()

// pooled is a client with the same pool settings as fetch.Client's
// transport.
func pooled() *http.Client {
	return &http.Client{Transport: &http.Transport{
		ForceAttemptHTTP2: true, MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second, MaxResponseHeaderBytes: 1 << 20,
	}}
}

// handwritten is what a careful engineer writes by hand for the call, sent
// with client to base.
func handwritten(b *testing.B, client *http.Client, base string, deadline bool) {
	b.ReportAllocs()
	for b.Loop() {
		if err := handCall(client, base, deadline); err != nil {
			b.Fatal(err)
		}
	}
}

// handCall is one hand-written call.
func handCall(client *http.Client, base string, deadline bool) error {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if deadline {
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	}
	defer cancel()
	u := base + "/repos/" + url.PathEscape("octo") + "/" + url.PathEscape("hello") + "/issues/" + strconv.Itoa(42)
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer t0ken")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !json.Valid(body) {
		return errors.New("bad response")
	}
	return nil
}

// BenchmarkOverhead is BenchmarkInvoke with the network taken out: both
// sides send through the same in-memory transport, so the difference is
// httptools' own work per call, without the loopback's noise (two goroutines
// and four syscalls a call, which on a shared machine vary by more than the
// difference itself).
func BenchmarkOverhead(b *testing.B) {
	b.Run("handwritten", func(b *testing.B) {
		handwritten(b, &http.Client{Transport: benchkit.Memory{}}, "http://api.example", true)
	})
	b.Run("synthesized", func(b *testing.B) {
		reg := &synth.Registry{}
		reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(fetch.NewClient(fetch.Config{
			UserAgent:     httpspec.UserAgent,
			Logger:        quiet,
			WrapTransport: func(http.RoundTripper) http.RoundTripper { return benchkit.Memory{} },
		})))
		synthesized(b, "http://api.example", &synth.Loader{Registry: reg})
	})
}
