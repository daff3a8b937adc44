package fetch_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/httptools/httptools/fetch"
)

// TestRedirectsFollowedAsHTTPClientDoes: fetch follows redirects with its
// own loop (follow.go), not http.Client's; on the same host, for every
// redirect status and method, the upstream sees what it saw through
// http.Client: the next hop's method, body, Content-Length and Referer,
// and the same final answer. A 3xx without a Location, or with one that
// does not parse, ends as http.Client ends it. (It found that a HEAD
// answer's Content-Length was read as a body owed: "the response body
// ended after 0 of the 11 bytes", through http.Client too.)
func TestRedirectsFollowedAsHTTPClientDoes(t *testing.T) {
	type hop struct{ method, body, length, referer, auth string }
	var mu sync.Mutex
	var seen []hop
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, hop{r.Method, string(b), fmt.Sprint(r.ContentLength), r.Header.Get("Referer"), r.Header.Get("Authorization")})
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/code/"):
			code := 0
			fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/code/"), &code)
			w.Header().Set("Location", "/final?q=1")
			w.WriteHeader(code)
		case r.URL.Path == "/nolocation":
			w.WriteHeader(http.StatusFound)
		case r.URL.Path == "/badlocation":
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(http.StatusFound)
		default:
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	defer srv.Close()
	c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, MaxAttempts: 1})
	run := func(send func(method, path, body string) (int, string)) ([]hop, []string) {
		var outs []string
		mu.Lock()
		seen = nil
		mu.Unlock()
		for _, code := range []int{301, 302, 303, 307, 308} {
			for _, m := range []string{"GET", "POST", "PUT", "DELETE", "HEAD"} {
				body := ""
				if m == "POST" || m == "PUT" {
					body = `{"a":1}`
				}
				st, e := send(m, fmt.Sprintf("/code/%d", code), body)
				outs = append(outs, fmt.Sprintf("%d %s: %d %s", code, m, st, e))
			}
		}
		for _, p := range []string{"/nolocation", "/badlocation"} {
			st, e := send("GET", p, "")
			outs = append(outs, fmt.Sprintf("%s: %d %s", p, st, e))
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]hop(nil), seen...), outs
	}
	ours, ourOuts := run(func(method, path, body string) (int, string) {
		req := &fetch.Request{Method: method, URL: srv.URL + path, SuccessMin: 200, SuccessMax: 399,
			Header: http.Header{"Authorization": {"Bearer same-host"}}}
		if body != "" {
			req.Body = []byte(body)
		}
		resp, err := c.Do(context.Background(), req)
		if err != nil {
			return 0, strings.ReplaceAll(err.Error(), srv.URL, "URL")
		}
		return resp.Status, ""
	})
	theirs, theirOuts := run(func(method, path, body string) (int, string) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, srv.URL+path, rd)
		req.Header.Set("Authorization", "Bearer same-host")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, strings.ReplaceAll(err.Error(), srv.URL, "URL")
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, ""
	})
	if len(ours) != len(theirs) {
		t.Fatalf("%d requests reached the upstream through fetch, %d through http.Client", len(ours), len(theirs))
	}
	for i := range ours {
		// http.Client sends its own User-Agent; everything else compared.
		if ours[i] != theirs[i] {
			t.Errorf("request %d: fetch sent %+v, http.Client %+v", i, ours[i], theirs[i])
		}
	}
	for i := range ourOuts {
		if ourOuts[i] != theirOuts[i] {
			t.Errorf("fetch: %s\nhttp.Client: %s", ourOuts[i], theirOuts[i])
		}
	}
}
