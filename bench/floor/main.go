// Command floor is the Go floor of the load benchmark: the least a Go
// service can do for one REST invoke — net/http server, one pooled client
// GET to the upstream, the JSON envelope in and out — and nothing else.
//
//	floor -addr 127.0.0.1:8081 -upstream http://127.0.0.1:8080
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	upstream := flag.String("upstream", "", "upstream base URL")
	flag.Parse()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}}
	http.HandleFunc("POST /invoke", func(w http.ResponseWriter, r *http.Request) {
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
		resp, err := client.Get(*upstream + "/items/" + req.Input.ID)
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
	log.Fatal(http.ListenAndServe(*addr, nil))
}
