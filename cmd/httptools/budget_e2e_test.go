package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMemoryBudgetHoldsUnderBigAnswers: 60, then 600 concurrent calls of a
// tool whose upstream answers 9 MiB of JSON, read by slow clients, keep the
// peak RSS of serve under its --max-inflight-bytes plus a fixed margin, and
// every call gets 200 (the whole answer) or 503 overloaded with Retry-After
// — or, on a machine too busy to answer within the tool's 60 s, 504 with
// the timeout reason (a CPU burner beside the suite made 2 of 600): never
// a dropped connection. (Without the budget, 240 such calls took
// serve to 4.1 GiB.) For a tool whose output needs no check, the answers
// stream through instead of being held.
func TestMemoryBudgetHoldsUnderBigAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 6 GB over loopback")
	}
	w := newWorld(t)
	var big bytes.Buffer
	big.WriteString(`{"items":[`)
	for i := 0; big.Len() < 9<<20; i++ {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `{"id":%d,"name":"item %d"}`, i, i)
	}
	big.WriteString("]}")
	answer := big.Bytes()
	up := httpServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.Write(answer)
	}))
	w.write("big.json", `{"id":"t.big","description":"Big.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up+`/big","timeoutMs":60000}}`)
	// The same answer for a tool whose output needs no check: streamed on.
	w.write("bigany.json", `{"id":"t.bigany","description":"Big, any output.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up+`/big","timeoutMs":60000}}`)
	const budget = 256 << 20
	const margin = 256 << 20
	p := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e.db"), "--addr", "127.0.0.1:0",
		"--allow-cidr", "127.0.0.0/8", "--max-inflight-bytes", "256MiB", "--tenant-max-inflight", "-1")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	// The streamed tool in a process of its own, with a budget too small to
	// hold even 8 of the answers: they pass through.
	ps := startServe(t, e2eEnv, "--tools", w.tools, "--db", "sqlite:"+filepath.Join(t.TempDir(), "e2e2.db"), "--addr", "127.0.0.1:0",
		"--allow-cidr", "127.0.0.0/8", "--max-inflight-bytes", "64MiB", "--tenant-max-inflight", "-1")
	for _, run := range []struct {
		p      *proc
		tool   string
		n      int
		budget int64
	}{{p, "t.big", 60, budget}, {p, "t.big", 600, budget}, {ps, "t.bigany", 200, 64 << 20}} {
		n, p, budget := run.n, run.p, run.budget
		var mu sync.Mutex
		statuses := map[int]int{}
		var failures []string
		var first503 string
		var wg sync.WaitGroup
		start := time.Now()
		for range n {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", p.url+"/v1/tools/"+run.tool+"/invoke", strings.NewReader(`{"input":{}}`))
				req.Header.Set("Authorization", "Bearer "+p.key)
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					return
				}
				defer resp.Body.Close()
				timeout := false
				switch resp.StatusCode {
				case 503:
					b, _ := io.ReadAll(resp.Body)
					mu.Lock()
					if first503 == "" {
						first503 = string(b)
					}
					mu.Unlock()
				case 504:
					b, _ := io.ReadAll(resp.Body)
					timeout = strings.Contains(string(b), `"reason":"timeout"`)
				}
				// A slow reader: 256 KiB every 2 ms.
				got, buf := 0, make([]byte, 256<<10)
				var rerr error
				for {
					k, err := io.ReadFull(resp.Body, buf)
					got += k
					if err != nil {
						if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
							rerr = err
						}
						break
					}
					time.Sleep(2 * time.Millisecond)
				}
				mu.Lock()
				defer mu.Unlock()
				statuses[resp.StatusCode]++
				switch {
				case rerr != nil:
					failures = append(failures, "body: "+rerr.Error())
				case resp.StatusCode == 200 && got < len(answer):
					failures = append(failures, fmt.Sprintf("200 with %d of %d bytes", got, len(answer)))
				case resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "":
					failures = append(failures, "503 without Retry-After")
				case resp.StatusCode == 504 && !timeout:
					failures = append(failures, "504 without the timeout reason")
				case resp.StatusCode != 200 && resp.StatusCode != 503 && resp.StatusCode != 504:
					failures = append(failures, fmt.Sprintf("status %d", resp.StatusCode))
				}
			})
		}
		wg.Wait()
		peak := peakRSS(t, p.cmd.Process.Pid)
		t.Logf("%s: %d concurrent 9 MiB answers in %v: statuses %v, peak RSS %.0f MiB (budget %d MiB + margin %d MiB)", run.tool, n, time.Since(start).Round(time.Millisecond), statuses, float64(peak)/(1<<20), budget>>20, margin>>20)
		if first503 != "" {
			t.Logf("first 503: %.300s", first503)
		}
		if len(failures) > 0 {
			t.Errorf("%d of %d calls failed, first: %s", len(failures), n, failures[0])
		}
		if statuses[200] == 0 {
			t.Errorf("no call succeeded")
		}
		if peak > budget+margin {
			t.Errorf("peak RSS %.0f MiB over the budget plus margin", float64(peak)/(1<<20))
		}
	}
	if st, body := p.do(t, p.key, "GET", "/metrics", ""); st != 200 || !strings.Contains(body, "httptools_memory_budget_bytes 2.68435456e+08") || !strings.Contains(body, "httptools_inflight_bytes 0") {
		t.Errorf("metrics: the budget gauges are missing or not back to 0:\n%s", grepLines(body, "inflight_bytes|budget_bytes"))
	}
}

func grepLines(s, words string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, w := range strings.Split(words, "|") {
			if strings.Contains(l, w) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}
