// Command upstream is the benchmark's API: every request gets the same
// 1 KiB JSON document (benchkit.Answer).
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/httptools/httptools/internal/benchkit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*addr, benchkit.Upstream))
}
