package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// rawConn opens a TCP connection to a running serve.
func rawConn(t *testing.T, p *proc) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readUntilClosed reads what a connection sends until the server closes it
// (true) or within is over (false: still open).
func readUntilClosed(c net.Conn, within time.Duration) (string, bool) {
	c.SetReadDeadline(time.Now().Add(within))
	var got bytes.Buffer
	_, err := io.Copy(&got, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return got.String(), false
	}
	return got.String(), true
}

// TestServeFreesStalledConnections: on the built binary with 1 s header,
// body and idle timeouts, a kept-alive connection with no next request, a
// request whose headers stall, an invoke whose body stalls and a keyless
// POST whose body stalls are each closed by serve (4 of 4); the keyless one
// is answered 401 at once, before its body's timeout.
func TestServeFreesStalledConnections(t *testing.T) {
	w := newWorld(t)
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0",
		"--header-timeout", "1s", "--body-timeout", "1s", "--idle-timeout", "1s")
	cases := map[string]struct {
		send string
		want string // in what serve answers before it closes
	}{
		"idle keep-alive": {"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200"},
		"stalled headers": {"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", ""},
		"stalled invoke body": {"POST /v1/tools/t.echo/invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + p.key +
			"\r\nContent-Length: 100\r\n\r\n{\"input\":", "HTTP/1.1 4"},
		"stalled keyless body": {"POST /v1/tools/t.echo/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", "HTTP/1.1 401"},
	}
	closed := 0
	for name, tc := range cases {
		c := rawConn(t, p)
		if _, err := io.WriteString(c, tc.send); err != nil {
			t.Fatal(err)
		}
		got, ok := readUntilClosed(c, testkit.WaitLimit)
		if !ok {
			t.Errorf("%s: still open after %v", name, testkit.WaitLimit)
			continue
		}
		closed++
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: serve answered %.200q; want %q", name, got, tc.want)
		}
	}
	t.Logf("%d of %d stalled connections closed by serve", closed, len(cases))
}

// TestKeylessStalledBodyIsAnsweredAtOnce: with a body timeout of an hour,
// a keyless POST whose body never comes gets its 401 and a closed
// connection: 5 of 5 routes, within testkit.WaitLimit, so before that
// timeout (before the fix net/http drained the body first, and the 401
// waited with it).
func TestKeylessStalledBodyIsAnsweredAtOnce(t *testing.T) {
	w := newWorld(t)
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0",
		"--body-timeout", "1h", "--idle-timeout", "1h")
	for _, route := range []string{"POST /v1/tools/t.echo/invoke", "POST /v1/keys", "POST /mcp", "PUT /v1/secrets/production/X", "POST /nowhere"} {
		c := rawConn(t, p)
		io.WriteString(c, route+" HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
		got, ok := readUntilClosed(c, testkit.WaitLimit)
		if !ok || !strings.HasPrefix(got, "HTTP/1.1 401") && !strings.HasPrefix(got, "HTTP/1.1 404") {
			t.Errorf("%s: closed %v, answer %.100q; want 401 (404 for no route) and closed", route, ok, got)
		}
	}
}

// TestServeClosesSmuggledRequests: a request carrying both Content-Length
// and Transfer-Encoding (in several spellings), and an HTTP/1.0 request
// with Transfer-Encoding, with a second request smuggled behind: serve
// answers exactly one request on the connection and closes it (before the
// fix it answered both and kept the connection). Its idle timeout is an
// hour: a connection kept is still open when the test stops reading.
func TestServeClosesSmuggledRequests(t *testing.T) {
	w := newWorld(t)
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0",
		"--idle-timeout", "1h")
	smuggled := "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	front := map[string]string{
		"CL then TE":       "POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"TE then CL":       "POST /v1/keys HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n",
		"TE capitalised":   "POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
		"te lower, tab":    "POST /v1/keys HTTP/1.1\r\nHost: x\r\ncontent-length: 4\r\ntransfer-encoding:\tchunked\r\n\r\n0\r\n\r\n",
		"TE alone":         "POST /v1/keys HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.0 with TE": "POST /v1/keys HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.0 GET":     "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	}
	for name, f := range front {
		c := rawConn(t, p)
		io.WriteString(c, f+smuggled)
		got, ok := readUntilClosed(c, testkit.WaitLimit)
		n := strings.Count(got, "HTTP/1.1 ") + strings.Count(got, "HTTP/1.0 ")
		if !ok || n != 1 {
			t.Errorf("%s: %d answers, closed %v; want 1 answer and the connection closed:\n%s", name, n, ok, got)
		}
	}
}

// TestHealthzUnderStalledConnections: serve with 256 descriptors, under
// 1,000 connections stalled in their headers, 300 keyless POSTs stalled in
// their bodies and 200 connections holding 60 KiB of unfinished headers
// each: /healthz answers 5 of 5, an authenticated call still works, serve
// holds no more connections than it allows, and its peak memory stays
// under 200 MiB (before: /healthz answered 0 of 5, and the unfinished
// headers took it from 43 to 618 MiB). Header and body timeouts of an hour:
// no stalled connection times out while the test runs, and a /healthz is
// answered because serve makes room, not because time passed.
func TestHealthzUnderStalledConnections(t *testing.T) {
	w := newWorld(t)
	p := startServeNoFile(t, 256, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0", "--allow-cidr", "127.0.0.0/8",
		"--header-timeout", "1h", "--body-timeout", "1h")
	addr := strings.TrimPrefix(p.url, "http://")
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	open := func(first string) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return // the backlog is full: a refusal, not a failure of the test
		}
		held = append(held, c)
		c.SetWriteDeadline(time.Now().Add(time.Second))
		io.WriteString(c, first)
	}
	for range 1000 {
		open("GET /healthz HTTP/1.1\r\nHost: x\r\n")
	}
	for range 300 {
		open("POST /v1/tools/t.echo/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	}
	big := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 60<<10)
	for range 200 {
		open(big)
	}
	t.Logf("%d connections opened and stalled", len(held))
	ok := 0
	client := &http.Client{Timeout: testkit.WaitLimit, Transport: &http.Transport{DisableKeepAlives: true}}
	for range 5 {
		resp, err := client.Get(p.url + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				ok++
			}
		}
	}
	if ok != 5 {
		t.Errorf("/healthz answered %d of 5 under the stalled connections", ok)
	}
	req, _ := http.NewRequest("POST", p.url+"/v1/tools/t.echo/invoke", strings.NewReader(`{"input":{"id":"1"}}`))
	req.Header.Set("Authorization", "Bearer "+p.key)
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("an authenticated call under the stalled connections: %v %v", resp, err)
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
	peak := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("/healthz %d of 5; serve holds %d descriptors of 256; peak RSS %.1f MiB", ok, len(fds), float64(peak)/(1<<20))
	if peak > 200<<20 {
		t.Errorf("peak RSS %.1f MiB; want under 200", float64(peak)/(1<<20))
	}
	select {
	case err := <-p.done:
		t.Fatalf("serve exited: %v\n%s", err, p.stderr)
	default:
	}
	// Every line serve wrote is one of its log's records: net/http's own
	// (an accept failing for want of descriptors) included.
	stray := 0
	for _, l := range strings.Split(strings.TrimSpace(p.stderr.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, "time=") {
			stray++
			t.Logf("not a record of the log: %q", l)
		}
	}
	if stray > 0 {
		t.Errorf("%d lines of serve's output are not log records", stray)
	}
}

// TestServeSurvivesStartupSignals: SIGHUP sent every 2 ms from the moment
// internal/hangup has caught it until serve's banner: 7 of 7 starts come up,
// each after at least one SIGHUP (without internal/hangup every start dies
// at its first one). The signals start at an event, not after a delay:
// the runtime prints hangup's line of GODEBUG=inittrace=1 once its init has
// returned, so signal.Notify has taken SIGHUP. Before that line the
// runtime's default (exit) applies and no program can change it; hangup
// runs as early as a package that needs os/signal can (TestHangupInitsEarly).
func TestServeSurvivesStartupSignals(t *testing.T) {
	w := newWorld(t)
	up := 0
	for i := range 7 {
		cmd := exec.Command(binary(t), "serve", "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), fmt.Sprintf("s%d.db", i)), "--addr", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), append(e2eEnv, "GODEBUG=inittrace=1")...)
		out, _ := cmd.StdoutPipe()
		var stderr testkit.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "REST ") {
					started <- true
					io.Copy(io.Discard, out)
					return
				}
			}
			started <- false
		}()
		testkit.WaitFor(t, "internal/hangup's init", func() bool { return strings.Contains(stderr.String(), hangupInit) })
		sent := 0
		ok := false
		giveUp := time.After(testkit.WaitLimit)
	loop:
		for {
			cmd.Process.Signal(syscall.SIGHUP)
			sent++
			select {
			case ok = <-started:
				break loop
			case <-giveUp:
				t.Fatalf("start %d: neither a banner nor an exit after %d SIGHUPs: %s", i, sent, stderr.String())
			case <-time.After(2 * time.Millisecond):
			}
		}
		t.Logf("start %d: %d SIGHUPs, up %v", i, sent, ok)
		if ok {
			up++
		} else {
			t.Logf("start %d died: %s", i, stderr.String())
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	if up != 7 {
		t.Errorf("%d of 7 starts came up under SIGHUP", up)
	}
}

// TestHangupInitsEarly: of the packages the binary initialises before
// internal/hangup (GODEBUG=inittrace=1), 0 are this module's. Go
// initialises next, among the packages whose imports are done, the one
// whose path sorts first: hangup waits only for os/signal and what it
// imports, and for the few packages (about 10 today, the largest
// runtime/metrics' table) whose paths sort first and that are ready
// before os is; none does I/O.
func TestHangupInitsEarly(t *testing.T) {
	cmd := exec.Command(binary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	var before []string
	found := false
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, hangupInit) {
			found = true
			break
		}
		if pkg, ok := strings.CutPrefix(l, "init "); ok {
			before = append(before, strings.Fields(pkg)[0])
		}
	}
	if !found {
		t.Fatalf("no %q line: %s", hangupInit, stderr.String())
	}
	ours := 0
	for _, pkg := range before {
		if strings.HasPrefix(pkg, "github.com/httptools/httptools/") {
			ours++
		}
	}
	t.Logf("%d packages initialised before internal/hangup: %v", len(before), before)
	if ours != 0 {
		t.Errorf("%d of this module's packages are initialised before internal/hangup: %v", ours, before)
	}
}

// hangupInit starts the line GODEBUG=inittrace=1 prints once
// internal/hangup's init has returned.
const hangupInit = "init github.com/httptools/httptools/internal/hangup @"

// TestReloadKeepsToolsOfAnEmptiedFolder: SIGHUP after every manifest was
// removed keeps the 4 tools served and logs why (before, the catalogue
// emptied, while a start-up refuses an empty folder).
func TestReloadKeepsToolsOfAnEmptiedFolder(t *testing.T) {
	w := newWorld(t)
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0")
	files, _ := filepath.Glob(filepath.Join(w.tools, "*.json"))
	for _, f := range files {
		os.Remove(f)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	testkit.WaitFor(t, "the reload to be refused", func() bool { return strings.Contains(p.stderr.String(), "holds no manifest") })
	_, body := p.do(t, p.key, "GET", "/v1/tools", "")
	if n := strings.Count(body, `"spec"`); n != len(files) {
		t.Errorf("%d tools after the emptied reload; want %d", n, len(files))
	}
}

// TestConfigMapFolder: a tools folder laid out as Kubernetes mounts a
// ConfigMap (the files in ..<timestamp>/, ..data a link to it, each
// manifest a link to ..data/NAME) loads in serve and validate alike: 2
// tools, no duplicate id.
func TestConfigMapFolder(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	stamp := filepath.Join(dir, "..2026_12_03_10_00_00.123456789")
	os.Mkdir(stamp, 0o755)
	for _, name := range []string{"echo.json", "slow.json"} {
		b, _ := os.ReadFile(filepath.Join(w.tools, name))
		os.WriteFile(filepath.Join(stamp, name), b, 0o644)
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data"))
	if out, errOut, code := runCLI(t, "validate", dir); code != 0 {
		t.Fatalf("validate: %d %s %s", code, out, errOut)
	}
	p := startServe(t, e2eEnv, "--tools", dir, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0")
	_, body := p.do(t, p.key, "GET", "/v1/tools", "")
	if n := strings.Count(body, `"spec"`); n != 2 {
		t.Errorf("serve lists %d tools; want 2: %.300s", n, body)
	}
}

// ownMemoryCgroup is the folder of this process's memory cgroup and the
// file that sets its limit (cgroup v1 or v2), or "" when there is none.
func ownMemoryCgroup() (dir, limitFile string) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), "memory") {
			return filepath.Join("/sys/fs/cgroup/memory", parts[2]), "memory.limit_in_bytes"
		}
		if parts[0] == "0" && parts[1] == "" {
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
				dir, limitFile = filepath.Join("/sys/fs/cgroup", parts[2]), "memory.max"
			}
		}
	}
	return dir, limitFile
}

// TestServeBudgetFollowsItsCgroup: serve started in a new cgroup nested
// under this test's own, limited to 200 MiB, defaults its memory budget to
// a quarter of that, 50 MiB, as /metrics says (before, the limit of a group
// below the mount's root was not read: 6 GiB on a 24 GiB machine).
func TestServeBudgetFollowsItsCgroup(t *testing.T) {
	parent, limitFile := ownMemoryCgroup()
	if parent == "" {
		t.Skip("no memory cgroup to nest one under")
	}
	dir := filepath.Join(parent, fmt.Sprintf("httptools-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	t.Cleanup(func() { os.Remove(dir) }) // after the process (cleanups run last first)
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.Itoa(200<<20)), 0o644); err != nil {
		t.Skipf("cannot limit a cgroup here: %v", err)
	}
	w := newWorld(t)
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", dir,
		binary(t), "serve", "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), e2eEnv...)
	p := startProc(t, cmd, nil)
	_, metrics := p.do(t, p.key, "GET", "/metrics", "")
	var budget string
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, "httptools_memory_budget_bytes "); ok {
			budget = v
		}
	}
	if got, _ := strconv.ParseFloat(budget, 64); got != 50<<20 {
		t.Errorf("budget %s bytes in a 200 MiB cgroup; want %d", budget, 50<<20)
	}
	// The process leaves the group when it is killed (startProc's
	// cleanup, which runs before the group is removed).
}

// TestServeWaitsForItsStore: PostgreSQL with max_connections=20, all 20
// held by others (the other replicas), and a replica starting: it neither
// exits nor listens while the store refuses it (0 connections accepted,
// at least 1 "trying again" logged), and it serves once a connection is
// free (before: it exited with "cannot set up its tables", having taken
// requests it then reset).
func TestServeWaitsForItsStore(t *testing.T) {
	pg := newPrivatePostgres(t)
	pg.stop(t)
	pg.opts = "-c max_connections=20"
	pg.start(t)
	db, err := sql.Open("pgx", pg.dsn())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var held []*sql.Conn
	for len(held) < 20 {
		c, err := db.Conn(context.Background())
		if err != nil {
			break // the server's own reserve
		}
		if err := c.PingContext(context.Background()); err != nil {
			c.Close()
			break
		}
		held = append(held, c)
	}
	t.Logf("%d of 20 connections held", len(held))
	w := newWorld(t)
	addr := freeAddr(t)
	cmd := exec.Command(binary(t), "serve", "--tools", w.tools, "--db", pg.dsn(), "--addr", addr, "--db-wait", "10m")
	cmd.Env = append(os.Environ(), append(e2eEnv, "HTTPTOOLS_MASTER_KEY="+base64.StdEncoding.EncodeToString(make([]byte, 32)))...)
	var stderr testkit.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	testkit.WaitFor(t, "a refused try", func() bool { return strings.Contains(stderr.String(), "trying again") })
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("serve listens before its store is open")
	}
	for _, c := range held {
		c.Close()
	}
	db.Close()
	banner := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "REST ") {
				banner <- true
				io.Copy(io.Discard, out)
				return
			}
		}
		banner <- false
	}()
	// --db-wait is 10 minutes, longer than the test waits: serve does not
	// give up first.
	select {
	case up := <-banner:
		if !up {
			t.Fatalf("serve did not come up: %s", stderr.String())
		}
	case <-time.After(testkit.WaitLimit):
		t.Fatalf("serve did not come up: %s", stderr.String())
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	resp.Body.Close()
	t.Logf("tries refused before it came up: %d", strings.Count(stderr.String(), "trying again"))
}

// TestMetricsOnTheirOwnAddress: on the service's address /metrics needs an
// admin key (keyless: 401; its series name tenants); --metrics-addr serves
// them keyless on an address of its own, tenant labels included.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	w := newWorld(t)
	maddr := freeAddr(t)
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0", "--metrics-addr", maddr)
	p.do(t, p.key, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"}}`)
	if st, _ := p.do(t, "", "GET", "/metrics", ""); st != 401 {
		t.Errorf("keyless /metrics on --addr: %d; want 401", st)
	}
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `tenant="local"`) {
		t.Errorf("--metrics-addr: %d, tenant series %v", resp.StatusCode, strings.Contains(string(b), `tenant="local"`))
	}
}

// TestServeDropsAStalledReader: a client that asks for a 9 MiB answer and
// then reads nothing (a 4 KiB receive buffer) loses its connection after
// serve's --write-stall (1 s here): once serve has logged the call's
// request record (its handler gave up writing), the client reads a cut
// answer, fewer bytes than the answer's, where before serve would have
// waited for it for ever, holding the call, its connection and its bytes.
func TestServeDropsAStalledReader(t *testing.T) {
	w := newWorld(t)
	big := `{"s":"` + strings.Repeat("x", 9<<20) + `"}`
	up := httpServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, big) }))
	w.write("big.json", `{"id":"t.big","description":"Big.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up+`/big"}}`)
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0",
		"--allow-cidr", "127.0.0.0/8", "--write-stall", "1s")
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"input":{}}`
	fmt.Fprintf(c, "POST /v1/tools/t.big/invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", p.key, len(body), body)
	// The client reads nothing (the stall under test) until serve's
	// handler has given up: its access record is written when it returns.
	testkit.WaitFor(t, "the call's access record", func() bool {
		return strings.Contains(p.stderr.String(), `route="POST /v1/tools/{id}/invoke"`)
	})
	got, closed := readUntilClosed(c, testkit.WaitLimit)
	if !closed || len(got) >= len(big) {
		t.Errorf("read %d bytes of a %d-byte answer, closed %v; want the connection cut", len(got), len(big), closed)
	}
	t.Logf("the stalled reader got %d of %d bytes, then its connection was closed", len(got), len(big))
}
