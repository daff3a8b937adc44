package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/httptools/httptools/internal/testkit"
)

// switching is an upstream's 101 answer.
const switching = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"

// TestServeRefusesSwitchingProtocols: on the built binary, tools whose
// upstream answers 101 and then floods the connection (one streaming its
// output, one held whole, one reached by a redirect) get 502 fetch-failed
// over REST, each upstream connection is closed by serve (hung up: 3 of 3),
// each upstream gets 1 request, and serve's peak memory stays under
// 100 MiB. Before the fix one such call took serve from 31 MiB to 2.4 GiB.
func TestServeRefusesSwitchingProtocols(t *testing.T) {
	w := newWorld(t)
	ups := map[string]*testkit.HostileUpstream{}
	for _, id := range []string{"any", "object", "hop"} {
		ups[id] = testkit.NewHostileUpstream(t, switching, true, 60*time.Second)
	}
	w.write("sw-any.json", `{"id":"t.sw-any","description":"101, any output.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+ups["any"].URL+`x","timeoutMs":20000}}`)
	w.write("sw-object.json", `{"id":"t.sw-object","description":"101, object output.","version":"1.0.0","mutating":true,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"POST","urlTemplate":"`+ups["object"].URL+`x","timeoutMs":20000}}`)
	redirect := httpServer(t, redirectTo(ups["hop"].URL+"x"))
	w.write("sw-hop.json", `{"id":"t.sw-hop","description":"Redirect to 101.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+redirect+`/r","timeoutMs":20000}}`)
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0", "--allow-cidr", "127.0.0.0/8")
	for _, id := range []string{"any", "object", "hop"} {
		st, body := p.do(t, p.key, "POST", "/v1/tools/t.sw-"+id+"/invoke", `{"input":{}}`)
		if st != 502 || !strings.Contains(body, "fetch-failed") || !strings.Contains(body, "101") {
			t.Errorf("%s: %d %.300s; want 502 fetch-failed naming 101", id, st, body)
		}
	}
	for id, up := range ups {
		testkit.WaitFor(t, "serve to hang up on "+id, func() bool { return up.HungUp.Load() == 1 })
		if n := up.Requests.Load(); n != 1 {
			t.Errorf("%s: %d requests; want 1", id, n)
		}
	}
	if st, _ := p.do(t, "", "GET", "/healthz", ""); st != 200 {
		t.Fatalf("healthz %d", st)
	}
	peak := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("peak RSS %.1f MiB", float64(peak)/(1<<20))
	if peak > 100<<20 {
		t.Errorf("peak RSS %.1f MiB; want under 100", float64(peak)/(1<<20))
	}
}

// TestCallRefusesSwitchingProtocols: httptools call on a 101 upstream that
// stays silent for a minute ends with fetch-failed, exit 1, and hangs up
// the connection, instead of waiting until the upstream closes.
func TestCallRefusesSwitchingProtocols(t *testing.T) {
	up := testkit.NewHostileUpstream(t, switching, false, time.Minute)
	m := filepath.Join(t.TempDir(), "sw.json")
	os.WriteFile(m, []byte(`{"id":"t.sw","description":"101.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`x","timeoutMs":2000}}`), 0o644)
	var stdout, stderr bytes.Buffer
	code := run([]string{"call", m, "--input", "{}", "--allow-cidr", "127.0.0.0/8"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "fetch-failed") || strings.Contains(stderr.String(), "timeout") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	testkit.WaitFor(t, "call to hang up", func() bool { return up.HungUp.Load() == 1 })
}

// redirectTo answers every request with a 302 to url.
func redirectTo(url string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, url, http.StatusFound) })
}
