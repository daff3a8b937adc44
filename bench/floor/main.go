// Command floor is the Go floor of the load benchmark: the least a Go
// service can do for one REST invoke — net/http server, one pooled client
// GET to the upstream, the JSON envelope in and out — and nothing else
// (benchkit.Floor, which the in-process benchmarks run too).
//
//	floor -addr 127.0.0.1:8081 -upstream http://127.0.0.1:8080
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/httptools/httptools/internal/benchkit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	upstream := flag.String("upstream", "", "upstream base URL")
	flag.Parse()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}}
	log.Fatal(http.ListenAndServe(*addr, benchkit.Floor(client, *upstream)))
}
