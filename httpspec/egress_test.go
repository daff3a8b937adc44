package httpspec_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/httpspec"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// TestGuardRefusesLoopbackByDefault: with the default client, a manifest
// pointing at a loopback server is refused unsent.
func TestGuardRefusesLoopbackByDefault(t *testing.T) {
	up := newUpstream(t, reply(200, `{}`))
	tool, err := synth.Load([]byte(`{"id":"t.local","description":"d","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/admin"}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, e := invoke(t, tool, synth.CallContext{}, `{}`)
	if e == nil || e.Code != synth.CodePreconditionFailed || e.Reason != httpspec.ReasonEgressDenied || !strings.Contains(e.Outside, "127.0.0.1 is loopback") || strings.Contains(e.Message, "127.0.0.1") {
		t.Fatalf("got %v", e)
	}
	if up.count() != 0 {
		t.Errorf("%d requests reached the upstream", up.count())
	}
}

// TestManifestAllowlistOnEveryHop: the manifest's network allowlist is
// checked on each redirect hop.
func TestManifestAllowlistOnEveryHop(t *testing.T) {
	other := newUpstream(t, reply(200, `{"stolen":true}`))
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+otherPort+"/", http.StatusFound)
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/x"}`, `"network":{"kind":"allowlist","hosts":["127.0.0.1"]}`)
	_, e := invoke(t, tool, synth.CallContext{}, `{}`)
	if e == nil || e.Reason != httpspec.ReasonEgressDenied || !strings.Contains(e.Outside, "localhost") {
		t.Fatalf("got %v", e)
	}
	if up.count() != 1 || other.count() != 0 {
		t.Errorf("upstream %d, other %d requests; want 1 and 0", up.count(), other.count())
	}
}

// TestHeaderAuthDroppedOnCrossHostRedirect: the manifest's header-auth name
// is not forwarded to another host (Go's client would forward it).
func TestHeaderAuthDroppedOnCrossHostRedirect(t *testing.T) {
	other := newUpstream(t, reply(200, `{}`))
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+otherPort+"/landed", http.StatusFound)
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/x",
		"headers":[{"name":"X-Echo","value":"sig-{q}"}],
		"authorization":{"kind":"header","headerName":"X-Api-Key","secretRef":{"envName":"p","name":"K"}}}`)
	if _, e := invoke(t, tool, synth.CallContext{Secrets: auth.Map{"p/K": "key-789"}}, `{"q":"key-789"}`); e != nil {
		t.Fatal(e)
	}
	if got := up.last(t).Header.Get("X-Api-Key"); got != "key-789" {
		t.Fatalf("the first host got X-Api-Key %q", got)
	}
	h := other.last(t).Header
	if h.Get("X-Api-Key") != "" || h.Get("X-Echo") != "" {
		t.Errorf("the other host got X-Api-Key %q, X-Echo %q", h.Get("X-Api-Key"), h.Get("X-Echo"))
	}
}

func TestTooManyRedirects(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/again", http.StatusFound) })
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/x"}`)
	_, e := invoke(t, tool, synth.CallContext{}, `{}`)
	if e == nil || e.Code != synth.CodeHandlerError || e.Reason != httpspec.ReasonTooManyRedirects || up.count() != 11 {
		t.Fatalf("got %v after %d requests", e, up.count())
	}
}

// TestURLCredentialsNeverInErrors: a key sent in the query string does not
// appear in the error of a failed call.
func TestURLCredentialsNeverInErrors(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/x{?api_key,q}"}`)
	_, e := invoke(t, tool, synth.CallContext{}, `{"api_key":"k-SECRET-9","q":"fine"}`)
	if e == nil || e.Reason != httpspec.ReasonFetchFailed {
		t.Fatalf("got %v", e)
	}
	if strings.Contains(e.Message, "SECRET") || !strings.Contains(e.Message, "api_key=%5BREDACTED%5D") {
		t.Errorf("message %q", e.Message)
	}
}

func TestInvokeReportsAttempts(t *testing.T) {
	n := 0
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		if n < 3 {
			w.WriteHeader(503)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/x"}`)
	res, e := invoke(t, tool, synth.CallContext{}, `{}`)
	if e != nil || res.Attempts != 3 || res.Status != 200 {
		t.Fatalf("got %+v, %v", res, e)
	}
}

// TestSharedHeaderStaysWhole: a tool whose header is the same on every call
// (literal values, no authorization, no body) shares one header map between
// its calls; a cross-host redirect that drops the Cookie, and calls at the
// same time (run with -race), leave it whole for the next call.
func TestSharedHeaderStaysWhole(t *testing.T) {
	other := newUpstream(t, reply(200, `{}`))
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://localhost:"+otherPort+"/landed", http.StatusFound)
			return
		}
		io.WriteString(w, `{}`)
	})
	tool := load(t, up.URL, `{"kind":"http","method":"GET","urlTemplate":"{URL}/{where}",
		"headers":[{"name":"Cookie","value":"session=s1"},{"name":"X-Tag","value":"a"},{"name":"x-tag","value":"b"}]}`)
	want := func(h http.Header, cookie string) {
		t.Helper()
		if h.Get("Cookie") != cookie || strings.Join(h.Values("X-Tag"), ",") != "a,b" || h.Get("User-Agent") != httpspec.UserAgent {
			t.Errorf("header %v; want Cookie %q, X-Tag a,b and httptools' User-Agent", h, cookie)
		}
	}
	if _, e := invoke(t, tool, synth.CallContext{}, `{"where":"away"}`); e != nil {
		t.Fatal(e)
	}
	want(up.last(t).Header, "session=s1")
	want(other.last(t).Header, "") // dropped on the hop to another host
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			where := []string{"here", "away"}[i%2]
			if _, e := invoke(t, tool, synth.CallContext{}, `{"where":"`+where+`"}`); e != nil {
				t.Error(e)
			}
		}()
	}
	wg.Wait()
	if _, e := invoke(t, tool, synth.CallContext{}, `{"where":"here"}`); e != nil {
		t.Fatal(e)
	}
	want(up.last(t).Header, "session=s1")
	if n := up.count(); n != 18 {
		t.Errorf("the first host got %d requests; want 18", n)
	}
}
