// Command load sends the same request with a fixed number of concurrent
// workers for a fixed time and prints requests/s and latency percentiles as
// one JSON line. Every request must answer 200.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	url := flag.String("url", "", "target")
	method := flag.String("method", "GET", "method")
	body := flag.String("body", "", "request body")
	key := flag.String("key", "", "API key (Authorization: Bearer)")
	conc := flag.Int("c", 32, "concurrent workers")
	dur := flag.Duration("d", 10*time.Second, "duration")
	var headers headerFlags
	flag.Var(&headers, "H", "a request header, Name: value (repeatable)")
	flag.Parse()
	tr := &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	stop := time.Now().Add(*dur)
	var wg sync.WaitGroup
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for time.Now().Before(stop) {
				req, _ := http.NewRequest(*method, *url, bytes.NewReader([]byte(*body)))
				if *key != "" {
					req.Header.Set("Authorization", "Bearer "+*key)
				}
				if *body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				for _, h := range headers {
					if k, v, ok := strings.Cut(h, ":"); ok {
						req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
					}
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					bad++
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(float64(len(lat)-1)*p)].Microseconds()) / 1000
	}
	out := map[string]any{"requests": len(lat), "errors": errs, "rps": float64(len(lat)) / dur.Seconds(), "p50_ms": pct(0.50), "p99_ms": pct(0.99)}
	json.NewEncoder(os.Stdout).Encode(out)
	if errs > 0 {
		fmt.Fprintf(os.Stderr, "load: %d requests failed\n", errs)
		os.Exit(1)
	}
}

type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }
