package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// peakRSS is a running process's high-water resident memory, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestServeSurvivesHostileJSON: an upstream answering 10 MiB of "[" (which
// killed serve with a stack overflow, for every tenant), input nested past
// the limit over REST and MCP, and duplicate keys: each call gets its error,
// the process lives on, and its peak memory stays within a small multiple of
// the 10 MiB body cap.
func TestServeSurvivesHostileJSON(t *testing.T) {
	w := newWorld(t)
	deep := bytes.Repeat([]byte("["), 10<<20-1)
	hostile := http.NewServeMux()
	hostile.HandleFunc("/deep", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.Write(deep)
	})
	up := httpServer(t, hostile)
	w.write("deep.json", `{"id":"t.deep","description":"Deep.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"array","items":{"$ref":"#"}},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up+`/deep"}}`)
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0", "--allow-cidr", "127.0.0.0/8")
	for range 3 {
		if st, body := p.do(t, p.key, "POST", "/v1/tools/t.deep/invoke", `{}`); st != 502 || !strings.Contains(body, "response-not-json") {
			t.Fatalf("deep answer: %d %.300s", st, body)
		}
	}
	for _, in := range []string{
		`{"input":{"id":"a","x":` + strings.Repeat("[", 900<<10) + `}}`,
		`{"input":{"id":"a","x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}}`,
		`{"input":{"id":"a","id":"../x"}}`,
	} {
		if st, body := p.do(t, p.key, "POST", "/v1/tools/t.echo/invoke", in); st != 400 || !strings.Contains(body, "input-validation-failed") {
			t.Fatalf("hostile input: %d %.300s", st, body)
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(p.key)}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var nested any = "x"
	for range 300 {
		nested = []any{nested}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "a", "x": nested}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "deeper than 128") {
		t.Fatalf("MCP deep arguments: %+v %v", res, err)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t.deep", Arguments: map[string]any{}})
	if err != nil || !res.IsError {
		t.Fatalf("MCP deep answer: %+v %v", res, err)
	}
	if st, _ := p.do(t, "", "GET", "/healthz", ""); st != 200 {
		t.Fatalf("healthz %d after the hostile calls", st)
	}
	if st, body := p.do(t, p.key, "POST", "/v1/tools/t.echo/invoke", `{"input":{"id":"1"}}`); st != 200 {
		t.Fatalf("a plain call after: %d %s", st, body)
	}
	select {
	case err := <-p.done:
		t.Fatalf("serve exited: %v\n%s", err, p.stderr)
	default:
	}
	peak := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("peak RSS %.1f MiB", float64(peak)/(1<<20))
	if peak > 160<<20 {
		t.Errorf("peak RSS %.1f MiB; want under 160 MiB for a 10 MiB body cap", float64(peak)/(1<<20))
	}
}

// TestCallSurvivesHostileJSON: httptools call on 1 MiB of "[" (which took
// it to ~250 MiB) ends with response-not-json, exit 1, allocating a few
// times the body. (Run in process: a child's ru_maxrss counts the memory of
// the test binary it was forked from.)
func TestCallSurvivesHostileJSON(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/deep", func(rw http.ResponseWriter, r *http.Request) { rw.Write(bytes.Repeat([]byte("["), 1<<20)) })
	up := httpServer(t, mux)
	m := filepath.Join(t.TempDir(), "deep.json")
	os.WriteFile(m, []byte(`{"id":"t.deep","description":"Deep.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up+`/deep"}}`), 0o644)
	var stdout, stderr bytes.Buffer
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := run([]string{"call", m, "--input", "{}", "--allow-cidr", "127.0.0.0/8"}, &stdout, &stderr)
	runtime.ReadMemStats(&after)
	if code != 1 || !strings.Contains(stderr.String(), "response-not-json") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("call allocated %.1f MiB for a 1 MiB answer", float64(alloc)/(1<<20))
	if alloc > 8<<20 {
		t.Errorf("call allocated %.1f MiB for a 1 MiB answer", float64(alloc)/(1<<20))
	}
}

func httpServer(t *testing.T, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// privatePostgres is a PostgreSQL cluster of the test's own, which it may
// stop and start (the shared one of .ci/run serves other packages' tests at
// the same time). It skips where PostgreSQL is not installed and
// HTTPTOOLS_TEST_POSTGRES is unset; with the variable set it must work.
type privatePostgres struct {
	bin, data, port string
	asPostgres      bool
	opts            string // more server options for the next start, e.g. "-c max_connections=20"
}

func newPrivatePostgres(t *testing.T) *privatePostgres {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		if os.Getenv("HTTPTOOLS_TEST_POSTGRES") != "" {
			t.Fatal("HTTPTOOLS_TEST_POSTGRES is set but no pg_ctl is installed")
		}
		t.Skip("PostgreSQL is not installed")
	}
	pg := &privatePostgres{bin: filepath.Dir(bins[len(bins)-1]), asPostgres: os.Getuid() == 0}
	data, err := os.MkdirTemp("", "httptools-pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	if pg.asPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		os.Chown(data, uid, gid)
	}
	pg.data = data
	addr := freeAddr(t)
	_, pg.port, _ = net.SplitHostPort(addr)
	pg.run(t, "initdb", "-D", data, "-A", "trust", "-U", "postgres")
	pg.start(t)
	t.Cleanup(func() { pg.ctl(t, "stop", "-m", "immediate") })
	return pg
}

func (pg *privatePostgres) run(t *testing.T, prog string, args ...string) {
	t.Helper()
	var cmd *exec.Cmd
	path := filepath.Join(pg.bin, prog)
	if pg.asPostgres {
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = "'" + a + "'"
		}
		cmd = exec.Command("su", "postgres", "-s", "/bin/sh", "-c", path+" "+strings.Join(quoted, " "))
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", prog, args, err, out)
	}
}

func (pg *privatePostgres) ctl(t *testing.T, args ...string) {
	pg.run(t, "pg_ctl", append([]string{"-D", pg.data}, args...)...)
}

func (pg *privatePostgres) start(t *testing.T) {
	pg.ctl(t, "-l", filepath.Join(pg.data, "log"), "-w", "-o",
		"-p "+pg.port+" -k "+pg.data+" -c listen_addresses=127.0.0.1 -c fsync=off "+pg.opts, "start")
}

func (pg *privatePostgres) stop(t *testing.T) { pg.ctl(t, "-w", "-m", "fast", "stop") }

func (pg *privatePostgres) dsn() string {
	return "postgres://postgres@127.0.0.1:" + pg.port + "/postgres?sslmode=disable"
}

// TestRefreshSurvivesPostgresRestart: a refresh whose provider answers while
// PostgreSQL is down (rotating the refresh token) keeps the new tokens: the
// call succeeds, the rotated token reaches the database when it is back,
// later calls use it, and the provider sees no revoked token again.
func TestRefreshSurvivesPostgresRestart(t *testing.T) {
	pg := newPrivatePostgres(t)
	w := newWorld(t)
	w.provider.Rotate = true
	// The token endpoint, through a gate: the test stops PostgreSQL while
	// the refresh request waits at it.
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	target, _ := url.Parse(w.provider.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	gateOn := false
	gate := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if gateOn && r.URL.Path == "/token" {
			arrived <- struct{}{}
			<-release
		}
		proxy.ServeHTTP(rw, r)
	})
	gateURL := httpServer(t, gate)
	os.WriteFile(w.apps, []byte(fmt.Sprintf(`{"apps":{"google":{"authURL":%q,"tokenURL":%q,"clientID":"client-1","clientSecretEnv":"E2E_GOOGLE_SECRET","authStyle":"params","permissions":{"gmail.send":["mail.send"]}}}}`,
		w.provider.AuthURL(), gateURL+"/token")), 0o644)
	env := append([]string{"HTTPTOOLS_MASTER_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))}, e2eEnv...)
	addr := freeAddr(t)
	p := startServe(t, env, "--tools", w.tools, "--db", pg.dsn(), "--addr", addr, "--allow-cidr", "127.0.0.0/8", "--apps", w.apps)
	key := createKey(t, env, pg.dsn())
	_, body := p.do(t, key, "POST", "/v1/connections/google/authorize", `{"as":"company"}`)
	var auth struct{ URL string }
	json.Unmarshal([]byte(body), &auth)
	resp, err := http.Get(auth.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	db, err := sql.Open("pgx", pg.dsn())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE connections SET expiry = 1`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	gateOn = true
	result := make(chan string, 1)
	go func() {
		st, body := p.do(t, key, "POST", "/v1/tools/t.mail/invoke", `{}`)
		result <- fmt.Sprint(st, " ", body)
	}()
	<-arrived
	pg.stop(t) // the provider answers while the database is down
	close(release)
	if got := <-result; !strings.HasPrefix(got, "200 ") {
		t.Fatalf("the call whose refresh could not be stored: %s", got)
	}
	pg.start(t)
	db, _ = sql.Open("pgx", pg.dsn())
	defer db.Close()
	waitFor(t, func() bool {
		var lastError string
		var version int64
		err := db.QueryRow(`SELECT last_error, version FROM connections`).Scan(&lastError, &version)
		return err == nil && strings.Contains(p.stderr.String(), "held in memory is stored")
	})
	for range 5 {
		if st, body := p.do(t, key, "POST", "/v1/tools/t.mail/invoke", `{}`); st != 200 {
			t.Fatalf("after the restart: %d %s", st, body)
		}
	}
	// Expire it again and call through a second replica, which knows only
	// the database: its refresh must send the rotated refresh token.
	db.Exec(`UPDATE connections SET expiry = 1`)
	gateOn = false
	b := startServe(t, env, "--tools", w.tools, "--db", pg.dsn(), "--addr", freeAddr(t), "--allow-cidr", "127.0.0.0/8", "--apps", w.apps)
	if st, body := b.do(t, key, "POST", "/v1/tools/t.mail/invoke", `{}`); st != 200 {
		t.Fatalf("the next refresh, on another replica: %d %s", st, body)
	}
	if r, i := w.provider.RevokedRefreshUses.Load(), w.provider.InvalidGrants.Load(); r != 0 || i != 0 {
		t.Errorf("%d revoked refresh tokens presented, %d invalid_grant answers; want 0 and 0", r, i)
	}
	if g := w.provider.RefreshGrants.Load(); g != 2 {
		t.Errorf("%d refresh grants, want 2", g)
	}
}

// TestServeNamesAStoreItCannotUse: a database in a missing folder, or a
// read-only one, stops serve at start with the file and the cause.
func TestServeNamesAStoreItCannotUse(t *testing.T) {
	w := newWorld(t)
	missing := filepath.Join(t.TempDir(), "no", "such", "x.db")
	out, err := exec.Command(binary(t), "serve", "--tools", w.tools, "--db", "sqlite:"+missing, "--addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), missing) || !strings.Contains(string(out), "does not exist") {
		t.Errorf("missing folder: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Errorf("serve created the missing folder")
	}
	db := filepath.Join(t.TempDir(), "ro.db")
	if out, err := exec.Command(binary(t), "keys", "create", "--tenant", "t", "--db", "sqlite:"+db).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if os.Getuid() == 0 {
		if out, err := exec.Command("chattr", "+i", db).CombinedOutput(); err != nil {
			t.Skipf("chattr: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", db).Run() })
	} else {
		os.Chmod(db, 0o444)
	}
	out, err = exec.Command(binary(t), "serve", "--tools", w.tools, "--db", "sqlite:"+db, "--addr", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), db) || !strings.Contains(string(out), "writing") {
		t.Errorf("read-only database: %v: %s", err, out)
	}
}
