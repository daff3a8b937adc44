package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestOutputsThatNeedNoCheckStream: a tool whose output schema accepts any
// value streams the answer to the REST client as it arrives (no
// Content-Length: nothing held to count it), with the same output as a
// tool that holds the answer to check it; an empty answer is null; an
// error status is the usual error, and so is a broken answer that ends
// within the first read; a bigger one found broken after it started is cut
// off — the client never gets a complete body — for each way of being
// broken.
func TestOutputsThatNeedNoCheckStream(t *testing.T) {
	r := newRig(t)
	doc := `{"items":[` + strings.Repeat(`{"id":1,"name":"a"},`, 5000) + `{"id":2,"name":"b"}],"next":null}` // 100 KiB: past net/http's buffer
	pad := strings.Repeat(" ", 40<<10)                                                                       // past the first read: streamed
	broken := map[string]string{
		"syntax":    `{"items":[1,2,` + strings.Repeat(`3,`, 100000) + `}`,
		"duplicate": `{"a":1,` + strings.Repeat(` `, 100000) + `"a":2}`,
		"deep":      `[` + pad + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 201),
		"number":    `{"pad":"` + strings.Repeat("x", 40<<10) + `","n":1e999999}`,
		"two":       `{"pad":"` + strings.Repeat("x", 40<<10) + `"} {}`,
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch p := strings.TrimPrefix(req.URL.Path, "/"); {
		case p == "doc":
			io.WriteString(w, doc)
		case p == "empty":
		case p == "small-broken":
			io.WriteString(w, `{"n":1e999999}`)
		case p == "fail":
			w.WriteHeader(500)
			io.WriteString(w, `{"error":"x"}`)
		default:
			io.WriteString(w, broken[p])
		}
	}))
	defer up.Close()
	dir := r.srv.cfg.ToolsDir
	for name, out := range map[string]string{"any": `{}`, "held": `{"type":"object"}`} {
		os.WriteFile(filepath.Join(dir, name+".json"), []byte(`{"id":"t.`+name+`","description":"x.","version":"1.0.0","mutating":false,
			"input":{"type":"object","properties":{"p":{"type":"string"}},"required":["p"]},"output":`+out+`,
			"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/{p}"}}`), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	invoke := func(tool, p string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest("POST", r.http.URL+"/v1/tools/"+tool+"/invoke", strings.NewReader(`{"input":{"p":"`+p+`"}}`))
		req.Header.Set("Authorization", "Bearer "+r.keyA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	output := func(b []byte) any {
		var v struct{ Output any }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
		return v.Output
	}
	resp, streamed, err := invoke("t.any", "doc")
	if err != nil || resp.StatusCode != 200 || resp.ContentLength != -1 {
		t.Fatalf("streamed: %v %v length %d", err, resp.StatusCode, resp.ContentLength)
	}
	resp, held, err := invoke("t.held", "doc")
	if err != nil || resp.StatusCode != 200 || resp.ContentLength <= 0 {
		t.Fatalf("held: %v %d length %d", err, resp.StatusCode, resp.ContentLength)
	}
	if a, b := output(streamed), output(held); !reflect.DeepEqual(a, b) {
		t.Errorf("streamed output %v, held %v", a, b)
	}
	if !strings.Contains(string(streamed), `"meta":{"status":200,"attempts":1`) {
		t.Errorf("streamed body without its meta: %s", streamed)
	}
	if _, b, err := invoke("t.any", "empty"); err != nil || output(b) != nil {
		t.Errorf("empty answer: %v %s", err, b)
	}
	if resp, b, err := invoke("t.any", "fail"); err != nil || resp.StatusCode != 502 || !strings.Contains(string(b), "upstream-status") {
		t.Errorf("error status: %v %s", err, b)
	}
	// Small enough to be seen whole: the usual error, not a cut.
	if resp, b, err := invoke("t.any", "small-broken"); err != nil || resp.StatusCode != 502 || !strings.Contains(string(b), "response-not-json") {
		t.Errorf("a small broken answer: %v %s", err, b)
	}
	for name := range broken {
		resp, b, err := invoke("t.any", name)
		if err == nil && json.Valid(b) {
			t.Errorf("%s: a broken answer came out whole: %d %.200s", name, resp.StatusCode, b)
		}
	}
}

// TestBrokenBeforeTheFirstByteIsAnswered: a streamed tool's answer found
// broken within its first block (10 MiB of "[", refused at byte 129; a
// syntax error, a duplicate name or a number out of bounds at the start of
// a 100 KiB answer) gets the 502 response-not-json it would get held, with
// a whole error body: nothing had gone to the client, so nothing is cut
// (before the fix the first three were cut, access log status 0).
func TestBrokenBeforeTheFirstByteIsAnswered(t *testing.T) {
	r := newRig(t)
	pad := strings.Repeat(" ", 100<<10)
	early := map[string]string{
		"deep":      strings.Repeat("[", 10<<20),
		"syntax":    `{"a":}` + pad,
		"duplicate": `{"a":1,"a":2,` + pad + `}`,
		"number":    `{"n":1e999999,` + pad + `}`,
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, early[strings.TrimPrefix(req.URL.Path, "/")])
	}))
	defer up.Close()
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "any.json"), []byte(`{"id":"t.any","description":"x.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"p":{"type":"string"}},"required":["p"]},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/{p}"}}`), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	answered := 0
	for name := range early {
		req, _ := http.NewRequest("POST", r.http.URL+"/v1/tools/t.any/invoke", strings.NewReader(`{"input":{"p":"`+name+`"}}`))
		req.Header.Set("Authorization", "Bearer "+r.keyA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s: %v (cut, not answered)", name, err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 502 || !json.Valid(b) || !strings.Contains(string(b), "response-not-json") {
			t.Errorf("%s: %d %v %.200s; want a whole 502 response-not-json", name, resp.StatusCode, err, b)
			continue
		}
		answered++
	}
	t.Logf("%d of %d answered 502", answered, len(early))
}
