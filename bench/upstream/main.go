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
	doc := []byte(benchkit.Answer)
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})))
}
