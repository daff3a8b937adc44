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
		got, err := readCapped(io.LimitReader(strings.NewReader(body), tc.size), cl, tc.cap)
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
	_, err := readCapped(r, -1, 1<<20)
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
