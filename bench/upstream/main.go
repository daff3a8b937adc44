// Command upstream is the benchmark's API: every request gets the same
// 1 KiB JSON document.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	var b strings.Builder
	b.WriteString(`{"id":9007199254740993,"title":"benchmark issue","labels":[`)
	for i := 0; b.Len() < 1000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"label-%d"}`, i, i)
	}
	b.WriteString(`]}`)
	doc := []byte(b.String())
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})))
}
