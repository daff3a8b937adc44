// Package benchkit is what the benchmarks share: the upstream's answer, an
// in-memory upstream, and the Go floor's handler, so that the load
// benchmark's processes (bench/upstream, bench/floor) and the in-process
// benchmarks (httpspec, server) measure against the same things.
package benchkit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Answer is the benchmarks' upstream answer: 1 KiB of JSON, like a small
// API object (an issue with its labels).
var Answer = func() string {
	var b strings.Builder
	b.WriteString(`{"id":9007199254740993,"title":"benchmark issue","labels":[`)
	for i := 0; b.Len() < 1000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"label-%d"}`, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}()

// Upstream answers every request with Answer over HTTP: the load
// benchmark's API (bench/upstream) and the loopback benchmarks' server.
var Upstream http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, Answer)
})

// Slow answers every request with Answer after d: an API that makes its
// callers wait (the slow-calls benchmark). The wait ends early when the
// caller goes.
func Slow(d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		Upstream.ServeHTTP(w, r)
	})
}

// Memory answers every request with Answer, in memory: no socket, no
// server, so that what remains of a call is the client's own work.
type Memory struct{}

// RoundTrip answers r.
func (Memory) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
		Header:        http.Header{"Content-Type": {"application/json"}},
		ContentLength: int64(len(Answer)), Body: io.NopCloser(strings.NewReader(Answer))}, nil
}

// Floor is the least a Go service can do for one REST invoke
// (POST /invoke with {"input":{"id":…}}): decode the envelope, GET
// upstream/items/{id} with client, check the answer is JSON, and write it
// in the output envelope — nothing else.
func Floor(client *http.Client, upstream string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /invoke", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input struct {
				ID string `json:"id"`
			} `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		start := time.Now()
		resp, err := client.Get(upstream + "/items/" + req.Input.ID)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !json.Valid(body) {
			http.Error(w, "bad upstream answer", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"output":%s,"meta":{"status":%d,"attempts":1,"durationMs":%d,"outsideData":true}}`+"\n", body, resp.StatusCode, time.Since(start).Milliseconds())
	})
	return mux
}
