package mcpremote_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/httptools/httptools/internal/testkit"
	"github.com/httptools/httptools/synth"
)

// TestCloseStopsBackgroundWork: after Close, no goroutine the synthesizer
// started is left: not the reaper, not a session's watcher, not the ping
// of a stdio process whose call timed out (Close cancels it before its
// 2 s: it logs nothing), not the processes' waiters.
func TestCloseStopsBackgroundWork(t *testing.T) {
	bin := stdioServer(t)
	r := startRemote(t, "http")
	before := runtime.NumGoroutine()
	e := newEnv(t)

	echo := e.load(t, manifest("acme.echo", r.endpoint("mcp+http", "echo"), ""))
	if _, ferr := call(t, echo, `{"text":"a"}`); ferr != nil {
		t.Fatal(ferr)
	}
	who := e.load(t, stdioManifest("acme.whoami", bin, "", ""))
	e.whoami(t, who, "a")
	e.whoami(t, who, "b")
	// The call times out on a hung process: checkAlive pings it.
	hang := e.load(t, stdioManifest("acme.freeze", bin, "", `,"spec":{"kind":"mcp","timeoutMs":300}`))
	if _, err := hang.Invoke(context.Background(), synth.CallContext{Tenant: "c"}, json.RawMessage(`{}`), synth.InvokeOptions{}); err == nil {
		t.Fatal("hang: no error")
	}

	if err := e.syn.Close(); err != nil {
		t.Fatal(err)
	}
	e.client.CloseIdleConnections()
	r.srv.Close()
	var now int
	testkit.WaitFor(t, "the goroutines to return to their count before the sessions", func() bool {
		now = runtime.NumGoroutine()
		return now <= before
	})
	if strings.Contains(e.log.String(), "did not answer a ping") {
		t.Errorf("the ping Close cancelled was taken for a hung process:\n%s", e.log)
	}
}
