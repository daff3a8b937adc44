package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/httptools/httptools/fetch"
)

// TestRefusedStreamsCountAsAttempts: an HTTP/2 upstream that refuses
// every stream (with SETTINGS_MAX_CONCURRENT_STREAMS 0 or without), or
// goes away on every connection, gets at most 3 TLS handshakes and 3
// request streams from one call — net/http's Transport sends a request
// again on its own below fetch's attempt loop, and each of those counts —
// and the call ends with a *fetch.ResendError long before its deadline.
// A POST gets the same: HTTP/2 sends a request again only when the
// upstream said it did not process it. Response.Attempts counts them all.
func TestRefusedStreamsCountAsAttempts(t *testing.T) {
	for _, tc := range []struct {
		name                string
		mode                h2Mode
		method              string
		handshakes, streams int64 // at most
	}{
		{"GET, max streams 0", h2NoStreams, "GET", 3, 3},
		{"GET, every stream refused", h2Refuse, "GET", 3, 3},
		{"GET, GOAWAY on every connection", h2GoAway, "GET", 3, 3},
		// HTTP/2 sends a request again only when the upstream said it
		// did not process it: a POST too, as an attempt.
		{"POST, max streams 0", h2NoStreams, "POST", 3, 3},
		{"POST, every stream refused", h2Refuse, "POST", 3, 3},
		{"POST, GOAWAY on every connection", h2GoAway, "POST", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newH2Upstream(t, tc.mode)
			c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, TLSClientConfig: up.tls, Logger: quietLogger(),
				RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond})
			defer c.CloseIdleConnections()
			// A deadline the call must not reach: it ends on its
			// attempts, not on the clock.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var body []byte
			if tc.method == "POST" {
				body = []byte(`{"amount":1}`)
			}
			resp, err := c.Do(ctx, &fetch.Request{Method: tc.method, URL: up.url, Header: http.Header{}, Body: body, SuccessMin: 200, SuccessMax: 299})
			hs, st := up.handshakes.Load(), up.streams.Load()
			t.Logf("%d handshakes, %d streams, attempts %v: %v", hs, st, resp, err)
			if hs > tc.handshakes || st > tc.streams || hs < 1 {
				t.Errorf("%d TLS handshakes and %d streams for one call; want 1 to %d and at most %d", hs, st, tc.handshakes, tc.streams)
			}
			var re *fetch.ResendError
			if !errors.As(err, &re) || ctx.Err() != nil {
				t.Fatalf("error %v (context %v); want a *fetch.ResendError before the deadline", err, ctx.Err())
			}
			if resp == nil || resp.Attempts > 3 || int64(resp.Attempts) < max(hs, st) {
				t.Errorf("Response.Attempts %v; want one for each of %d handshakes and %d streams, at most 3", resp, hs, st)
			}
		})
	}
}

// TestDroppedConnectionsCountAsAttempts: net/http sends an idempotent
// request again by itself, on the next pooled connection, when a
// kept-alive one closes under it. With 6 idle connections that all do, a
// GET reaches the upstream 3 times, not 7 (each dead connection and a
// new one) times 3, and a POST once.
func TestDroppedConnectionsCountAsAttempts(t *testing.T) {
	for _, tc := range []struct {
		method   string
		key      bool
		requests int64
	}{
		{"GET", false, 3},
		{"PUT", false, 3},
		{"POST", true, 3}, // an Idempotency-Key makes it repeatable
		{"POST", false, 1},
	} {
		name := tc.method
		if tc.key {
			name += " with Idempotency-Key"
		}
		t.Run(name, func(t *testing.T) {
			const idle = 6
			up := newH1Upstream(t, idle)
			c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, Logger: quietLogger(),
				RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond})
			defer c.CloseIdleConnections()
			var wg sync.WaitGroup
			for range idle {
				wg.Go(func() {
					if _, err := c.Do(context.Background(), &fetch.Request{Method: "GET", URL: up.url, Header: http.Header{}, SuccessMin: 200, SuccessMax: 299}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			before := up.requests.Load()
			up.dropping.Store(true)
			h := http.Header{}
			if tc.key {
				h.Set("Idempotency-Key", "k-1")
			}
			resp, err := c.Do(context.Background(), &fetch.Request{Method: tc.method, URL: up.url, Header: h, Body: []byte(`{}`), SuccessMin: 200, SuccessMax: 299})
			if err == nil {
				t.Fatalf("status %d; want an error", resp.Status)
			}
			n := up.requests.Load() - before
			t.Logf("%d requests, %d attempts: %v", n, resp.Attempts, err)
			if n > tc.requests || n < 1 {
				t.Errorf("the upstream read %d requests of one %s call; want 1 to %d (%v)", n, tc.method, tc.requests, err)
			}
			if resp.Attempts < int(n) || resp.Attempts > 3 {
				t.Errorf("Response.Attempts %d; want the %d requests sent, at most 3", resp.Attempts, n)
			}
			if strings.Contains(err.Error(), "127.0.0.1:") && strings.Contains(err.Error(), "->") {
				t.Errorf("the error names this side's address: %v", err)
			}
		})
	}
}

// TestHTTP2ResendsWhatWasNotProcessed: an upstream that sends GOAWAY
// (last stream 0) on its first connection, or refuses the first stream,
// and then answers, gets a GET and a POST through on the next stream, as
// net/http does by itself: 200, 2 streams, 2 attempts (3 when the
// Transport dialled one connection more). (An nginx rotating
// a connection every 1,000 requests does this routinely.)
func TestHTTP2ResendsWhatWasNotProcessed(t *testing.T) {
	for _, mode := range []h2Mode{h2GoAwayOnce, h2RefuseOnce} {
		for _, method := range []string{"GET", "POST"} {
			up := newH2Upstream(t, mode)
			c := fetch.NewClient(fetch.Config{AllowCIDRs: loopback, TLSClientConfig: up.tls, Logger: quietLogger(),
				RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond})
			var body []byte
			if method == "POST" {
				body = []byte(`{"amount":1}`)
			}
			resp, err := c.Do(context.Background(), &fetch.Request{Method: method, URL: up.url, Header: http.Header{}, Body: body, SuccessMin: 200, SuccessMax: 299})
			c.CloseIdleConnections()
			// Attempts count connections dialled as well as streams: on a
			// loaded machine the Transport may dial one more connection than
			// it sends streams on (a CI run with two CPU burners saw 3), so
			// it is at least the 2 streams and at most MaxAttempts.
			if err != nil || resp.Status != 200 || up.streams.Load() != 2 || resp.Attempts < 2 || resp.Attempts > 3 {
				t.Errorf("mode %d, %s: %v %v, %d streams; want 200 on the second of 2 streams, 2 or 3 attempts", mode, method, resp, err, up.streams.Load())
			}
		}
	}
}
