// Command floor is the Go floor of the load benchmark: the least a Go
// service can do for one REST invoke — net/http server, one pooled client
// GET to the upstream, the JSON envelope in and out — and nothing else
// (benchkit.Floor, which the in-process benchmarks run too).
//
//	floor -addr 127.0.0.1:8081 -upstream http://127.0.0.1:8080 [-pprof 127.0.0.1:6061] [-sync]
//
// -pprof serves Go's profiler on its own address, to compare a profile of
// the floor with one of serve --pprof under the same load. -sync replaces
// net/http's Transport by an experiment that makes the upstream call in
// the handler's own goroutine (sync.go).
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/httptools/httptools/internal/benchkit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	upstream := flag.String("upstream", "", "upstream base URL")
	pprofAddr := flag.String("pprof", "", "serve Go's profiler on this address; off by default")
	idle := flag.Int("idle", 256, "idle connections kept to the upstream (the slow-calls benchmark keeps one per call in flight)")
	syncRT := flag.Bool("sync", false, "make the upstream call in the handler's goroutine (an experiment: clear-text HTTP/1.1 only)")
	flag.Parse()
	if *pprofAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		go func() { log.Fatal(http.ListenAndServe(*pprofAddr, mux)) }()
	}
	var rt http.RoundTripper = &http.Transport{MaxIdleConns: *idle, MaxIdleConnsPerHost: *idle, IdleConnTimeout: 90 * time.Second}
	if *syncRT {
		rt = &syncTransport{}
	}
	client := &http.Client{Transport: rt}
	log.Fatal(http.ListenAndServe(*addr, benchkit.Floor(client, *upstream)))
}
