package mcpremote_test

import (
	"context"
	"encoding/json"
	"github.com/httptools/httptools/internal/testkit"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/httptools/httptools/synth"
)

var (
	stdioOnce   sync.Once
	stdioBinary string
	stdioErr    error
)

// stdioServer builds the test's stdio server (the official Go SDK's) once.
func stdioServer(t *testing.T) string {
	t.Helper()
	stdioOnce.Do(func() {
		dir, err := os.MkdirTemp("", "httptools-stdioserver-")
		if err != nil {
			stdioErr = err
			return
		}
		stdioBinary = filepath.Join(dir, "stdioserver")
		out, err := exec.Command("go", "build", "-o", stdioBinary, "./testdata/stdioserver").CombinedOutput()
		if err != nil {
			stdioErr = err
			t.Log(string(out))
		}
	})
	if stdioErr != nil {
		t.Fatalf("building the stdio server: %v", stdioErr)
	}
	return stdioBinary
}

type whoami struct {
	PID int
	Env []string
	Dir string
}

func (e *env) whoami(t *testing.T, tool *synth.Tool, tenant string) whoami {
	t.Helper()
	res, err := tool.Invoke(context.Background(), synth.CallContext{Tenant: tenant}, json.RawMessage(`{}`), synth.InvokeOptions{})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	var w whoami
	if err := json.Unmarshal(res.Output, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

func stdioManifest(id, bin, tool, extra string) []byte {
	return []byte(`{"id":"` + id + `","description":"a stdio tool","version":"1.0.0","transport":"mcp","mcpEndpoint":"mcp+stdio://` + bin + `#` + tool + `",
		"input":{"type":"object"},"output":{}` + extra + `}`)
}

func TestStdioServer(t *testing.T) {
	bin := stdioServer(t)
	t.Setenv("HTTPTOOLS_MASTER_KEY", "the-service-secret")
	e := newEnv(t)
	// The fragment is not part of a stdio command: the remote tool is
	// named by the id.
	who := e.load(t, stdioManifest("acme.whoami", bin, "", ""))
	a1 := e.whoami(t, who, "a")
	a2 := e.whoami(t, who, "a")
	b := e.whoami(t, who, "b")
	if a1.PID != a2.PID || a1.PID == b.PID {
		t.Errorf("pids: a %d, a %d, b %d: want one process per tenant", a1.PID, a2.PID, b.PID)
	}
	for _, kv := range a1.Env {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			t.Errorf("the process got %q of the service's environment", kv)
		}
	}
	if wd, _ := os.Getwd(); a1.Dir == wd || a1.Dir == b.Dir {
		t.Errorf("working folders: a %s, b %s, the service's %s", a1.Dir, b.Dir, wd)
	}

	// A process that dies is started again on the next call.
	crash := e.load(t, stdioManifest("acme.crash", bin, "", ""))
	if _, err := crash.Invoke(context.Background(), synth.CallContext{Tenant: "a"}, json.RawMessage(`{}`), synth.InvokeOptions{}); err == nil {
		t.Fatal("crash: no error")
	}
	again := e.whoami(t, who, "a")
	if again.PID == a1.PID {
		t.Errorf("after the crash the same pid %d answered", again.PID)
	}
	if alive(a1.PID) {
		t.Errorf("the crashed process %d is still there", a1.PID)
	}
	if !strings.Contains(e.log.String(), "crashing on purpose") {
		t.Errorf("the process's stderr is not in the log:\n%s", e.log)
	}

	// An answer line past the cap (limits.memMB) ends the process.
	big := e.load(t, stdioManifest("acme.big", bin, "", `,"limits":{"memMB":1,"cpuMs":1000}`))
	_, err := big.Invoke(context.Background(), synth.CallContext{Tenant: "a"}, json.RawMessage(`{}`), synth.InvokeOptions{})
	if err == nil {
		t.Fatal("8 MiB line: no error")
	}
	t.Logf("8 MiB line with a 1 MiB cap: %v", err)

	// A hung process (stopped: it answers nothing) is killed after a call
	// times out, and replaced.
	hang := e.load(t, stdioManifest("acme.freeze", bin, "", `,"spec":{"kind":"mcp","timeoutMs":300}`))
	before := e.whoami(t, who, "c")
	if _, err := hang.Invoke(context.Background(), synth.CallContext{Tenant: "c"}, json.RawMessage(`{}`), synth.InvokeOptions{}); err == nil {
		t.Fatal("hang: no error")
	}
	deadline := time.Now().Add(testkit.WaitLimit)
	for alive(before.PID) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	after := e.whoami(t, who, "c")
	if after.PID == before.PID {
		t.Errorf("the hung process %d still serves", before.PID)
	}
}

// alive says the process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
