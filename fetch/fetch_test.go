package fetch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestReadCapped(t *testing.T) {
	for _, tc := range []struct {
		size, cap int64
		known     bool
		tooLarge  bool
	}{
		{0, 10, true, false},
		{10, 10, true, false},
		{11, 10, true, true},
		{10, 10, false, false},
		{11, 10, false, true},
		{5000, 4096, false, true},
		{4096, 4096, false, false},
	} {
		body := strings.Repeat("x", int(tc.size))
		cl := int64(-1)
		if tc.known {
			cl = tc.size
		}
		got, err := readCapped(context.Background(), io.LimitReader(strings.NewReader(body), tc.size), cl, tc.cap, nil)
		if tc.tooLarge {
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("%+v: got %d bytes, %v; want ErrTooLarge", tc, len(got), err)
			}
			continue
		}
		if err != nil || string(got) != body {
			t.Errorf("%+v: got %d bytes, %v", tc, len(got), err)
		}
	}
}

// TestReadCappedStopsReading checks that an endless body is not read past
// the cap: the reader is asked for at most cap+1 bytes.
func TestReadCappedStopsReading(t *testing.T) {
	r := &countingReader{}
	_, err := readCapped(context.Background(), r, -1, 1<<20, nil)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatal(err)
	}
	if r.n > 1<<20+1 {
		t.Errorf("read %d bytes for a 1 MiB cap", r.n)
	}
}

type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n += int64(len(p))
	return len(p), nil
}

func TestHostAllowed(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		host     string
		want     bool
	}{
		{[]string{"api.x.com"}, "api.x.com", true},
		{[]string{"api.x.com"}, "API.X.COM.", true},
		{[]string{"api.x.com."}, "api.x.com", true},
		{[]string{"api.x.com"}, "api.x.com.evil.com", false},
		{[]string{"api.x.com"}, "x.com", false},
		{[]string{"*.x.com"}, "x.com", false},
		{[]string{"*.x.com"}, "a.b.x.com", true},
		{[]string{"*.x.com"}, "evilx.com", false},
		{nil, "x.com", false},
	} {
		if got := HostAllowed(tc.patterns, tc.host); got != tc.want {
			t.Errorf("%v vs %q: %v, want %v", tc.patterns, tc.host, got, tc.want)
		}
	}
}

func TestClientIgnoresEnvironmentProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") }))
	defer srv.Close()
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	c := NewClient(Config{AllowCIDRs: loopback, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	resp, err := c.Do(context.Background(), &Request{Method: "GET", URL: srv.URL, Header: http.Header{}})
	if err != nil || string(resp.Body) != "direct" {
		t.Fatalf("got %v %v", resp, err)
	}
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// FuzzRetryAfter: any header value parses to a wait between zero and a year,
// or to "absent", and never panics.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "3600", "99999999999999999999", "Fri, 31 Dec 2099 23:59:59 GMT",
		"Friday, 31-Dec-99 23:59:59 GMT", "Thu Dec 31 23:59:59 2099", "soon", " 5 ", "1e3", "+5", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := retryAfter(v, now)
		if !ok {
			if d != 0 {
				t.Fatalf("%q: not ok but %v", v, d)
			}
			return
		}
		if d < 0 || (d > 366*24*time.Hour && !strings.Contains(v, " ")) {
			t.Fatalf("%q: wait %v", v, d)
		}
	})
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"120":                               2 * time.Minute,
		"0":                                 0,
		"Wed, 02 Dec 2026 00:00:30 GMT":     30 * time.Second,
		"Wednesday, 02-Dec-26 00:01:00 GMT": time.Minute,
		"Wed Dec  2 00:00:10 2026":          10 * time.Second,
		"Tue, 01 Dec 2026 00:00:00 GMT":     0, // in the past: now
	} {
		if d, ok := retryAfter(v, now); !ok || d != want {
			t.Errorf("%q: %v %v, want %v", v, d, ok, want)
		}
	}
	for _, v := range []string{"", "-5", "soon", "1.5", "12 s"} {
		if _, ok := retryAfter(v, now); ok {
			t.Errorf("%q: want not ok", v)
		}
	}
}

// TestCallersHeaderUnchanged: the client's User-Agent reaches the upstream
// without being written into the caller's header, which calls may share.
func TestCallersHeaderUnchanged(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Values("User-Agent") }))
	defer srv.Close()
	c := NewClient(Config{AllowCIDRs: loopback, UserAgent: "ua/1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, hdr := range []http.Header{nil, {}, {"X-A": {"1"}}} {
		if _, err := c.Do(context.Background(), &Request{Method: "GET", URL: srv.URL, Header: hdr}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != "ua/1" {
			t.Errorf("upstream got User-Agent %q", got)
		}
		if _, ok := hdr["User-Agent"]; ok || len(hdr) > 1 {
			t.Errorf("the caller's header became %v", hdr)
		}
	}
}
