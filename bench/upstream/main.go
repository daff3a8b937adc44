// Command upstream is the benchmark's API: every request gets the same
// 1 KiB JSON document (benchkit.Answer), after -delay (a slow API: the
// slow-calls benchmark, bench/slow.sh). With -tls CERT,KEY it serves HTTPS
// (HTTP/2 and HTTP/1.1, by ALPN).
package main

import (
	"flag"
	"log"
	"net/http"
	"strings"

	"github.com/httptools/httptools/internal/benchkit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	delay := flag.Duration("delay", 0, "answer after this long")
	tlsFiles := flag.String("tls", "", "CERT,KEY: serve HTTPS")
	flag.Parse()
	h := benchkit.Upstream
	if *delay > 0 {
		h = benchkit.Slow(*delay)
	}
	srv := &http.Server{Addr: *addr, Handler: h}
	if cert, key, ok := strings.Cut(*tlsFiles, ","); ok {
		srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000}
		log.Fatal(srv.ListenAndServeTLS(cert, key))
	}
	log.Fatal(srv.ListenAndServe())
}
