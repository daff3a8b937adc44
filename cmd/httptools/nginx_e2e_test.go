package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"encoding/base64"

	"github.com/httptools/httptools/internal/pgtest"
	"github.com/httptools/httptools/internal/testkit"
)

// nginxBinary is Debian's nginx; without it the test skips, unless
// HTTPTOOLS_TEST_NGINX=required (as .ci/run sets it), where it fails.
func nginxBinary(t *testing.T) string {
	for _, p := range []string{"/usr/sbin/nginx", "nginx"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("HTTPTOOLS_TEST_NGINX") == "required" {
		t.Fatal("HTTPTOOLS_TEST_NGINX=required but nginx is not installed (apt-get install nginx-light)")
	}
	t.Skip("nginx is not installed (apt-get install nginx-light)")
	return ""
}

// shippedNginx is docs/deploy/nginx.conf as shipped, but for the two
// things Docker gives it: its upstream servers are the given local
// addresses (with the shipped server line's parameters but resolve), it
// listens on listen, and it has no resolver.
func shippedNginx(t *testing.T, listen string, upstreams []string) string {
	b, err := os.ReadFile("../../docs/deploy/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	serverLine := regexp.MustCompile(`(?m)^(\s*)server httptools:8080 resolve( [^;]*)?;$`)
	m := serverLine.FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("docs/deploy/nginx.conf has no 'server httptools:8080 resolve …;' line")
	}
	var servers []string
	for _, u := range upstreams {
		servers = append(servers, m[1]+"server "+u+m[2]+";")
	}
	conf := serverLine.ReplaceAllLiteralString(string(b), strings.Join(servers, "\n"))
	conf = regexp.MustCompile(`(?m)^resolver .*$`).ReplaceAllString(conf, "")
	conf = regexp.MustCompile(`(?m)^(\s*)listen 8080;`).ReplaceAllString(conf, "${1}listen "+listen+";")
	if !strings.Contains(conf, "listen "+listen) {
		t.Fatal("docs/deploy/nginx.conf does not listen on 8080")
	}
	return conf
}

// startNginx runs nginx in the foreground on conf (the http block's
// contents), stopped with the test.
func startNginx(t *testing.T, bin, conf string) {
	dir, err := os.MkdirTemp("", "httptools-nginx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777) // its workers run as nobody
	main := fmt.Sprintf(`worker_processes 2;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
%[2]s
}
`, dir, conf)
	path := filepath.Join(dir, "nginx.conf")
	os.WriteFile(path, []byte(main), 0o644)
	cmd := exec.Command(bin, "-p", dir, "-c", path)
	var out testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		cmd.Wait()
		if b, _ := os.ReadFile(filepath.Join(dir, "error.log")); len(b) > 0 {
			for _, l := range strings.Split(string(b), "\n") {
				if l != "" && !strings.Contains(l, "connect() failed (111") {
					t.Logf("nginx: %s", l)
				}
			}
		}
	})
}

// TestRollingRestartBehindNginx: three replicas on PostgreSQL behind nginx
// running docs/deploy/nginx.conf as shipped; six clients call a mutating
// POST tool through nginx without pause while each replica in turn is
// stopped with SIGTERM and started again. 0 calls fail (before, nginx's
// defaults benched each replica in turn: 767–901 of ~1,620 calls failed
// with 502 "no live upstreams").
func TestRollingRestartBehindNginx(t *testing.T) {
	bin := nginxBinary(t)
	dsn := pgtest.DSN(t)
	w := newWorld(t)
	w.write("post.json", `{"id":"t.post","description":"Post.","version":"1.0.0","mutating":true,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"POST","urlTemplate":"{UP}/items"}}`)
	env := append([]string{"HTTPTOOLS_MASTER_KEY=" + base64.StdEncoding.EncodeToString(make([]byte, 32))}, e2eEnv...)
	addrs := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	args := func(addr string) []string {
		return []string{"--tools", w.tools, "--db", dsn, "--addr", addr, "--allow-cidr", "127.0.0.0/8", "--no-access-log"}
	}
	procs := make([]*proc, len(addrs))
	for i, a := range addrs {
		procs[i] = startServe(t, env, args(a)...)
	}
	key := createKey(t, env, dsn)
	lb := freeAddr(t)
	startNginx(t, bin, shippedNginx(t, lb, addrs))
	testkit.WaitFor(t, "nginx", func() bool {
		resp, err := http.Get("http://" + lb + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	var ok, failed atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: testkit.WaitLimit}
	for range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("POST", "http://"+lb+"/v1/tools/t.post/invoke", strings.NewReader(`{"input":{"n":1}}`))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err == nil && resp.StatusCode == 200 {
					ok.Add(1)
				} else {
					failed.Add(1)
					why := fmt.Sprint(err)
					if resp != nil {
						why = resp.Status
					}
					firstFailure.CompareAndSwap(nil, why)
				}
				if resp != nil {
					resp.Body.Close()
				}
			}
		})
	}
	waitCalls := func(n int64) {
		from := ok.Load()
		testkit.WaitFor(t, "calls to go through", func() bool { return ok.Load() >= from+n })
	}
	waitCalls(50)
	for i, a := range addrs {
		p := procs[i]
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			p.done <- err // for startServe's cleanup
		case <-time.After(testkit.WaitLimit):
			t.Fatalf("replica %d did not stop", i)
		}
		waitCalls(20) // the others carry the load meanwhile
		procs[i] = startServe(t, env, args(a)...)
		waitCalls(20)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d calls through nginx over a rolling restart of 3 replicas: %d failed", ok.Load()+failed.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d of %d calls failed (first: %v)", failed.Load(), ok.Load()+failed.Load(), firstFailure.Load())
	}
}
