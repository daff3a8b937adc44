package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestInvalidUTF8IsOneAnswer: an upstream's invalid UTF-8 in 8 forms (a
// Latin-1 value, a Latin-1 member name, a cut sequence, an encoded
// surrogate, an overlong form, a long streamed answer, an error body, and
// two names that read the same once replaced) reaches REST as valid UTF-8
// in every answer (8 of 8), with each bad byte as U+FFFD, and REST's output
// is byte for byte MCP's text (before: 3 of 7 forms went out raw, and MCP
// answered differently).
func TestInvalidUTF8IsOneAnswer(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ResultBudgets.Default = -1 }) // MCP's text whole, as REST's
	long := strings.Repeat("x", 40<<10)
	forms := map[string]string{
		"value":     `{"s":"caf` + "\xe9" + `"}`,
		"name":      `{"caf` + "\xe9" + `":1}`,
		"cut":       `{"s":"a` + "\xe2\x82" + `"}`,
		"surrogate": `{"s":"` + "\xed\xa0\x80" + `"}`,
		"overlong":  `{"s":"` + "\xc0\xaf" + `"}`,
		"streamed":  `{"s":"` + long + "\xff\xfe" + long + `"}`,
		"error":     "\xff bad request \xfe",
		"collide":   `{"a` + "\xff" + `":1,"a` + "\xfe" + `":2}`,
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := strings.TrimPrefix(req.URL.Path, "/")
		if p == "error" {
			w.WriteHeader(400)
		}
		io.WriteString(w, forms[p])
	}))
	defer up.Close()
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "u.json"), []byte(`{"id":"t.u","description":"x.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"p":{"type":"string"}},"required":["p"]},"output":{},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/{p}"}}`), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	valid := 0
	for name := range forms {
		rp := r.do(t, r.keyA, "POST", "/v1/tools/t.u/invoke", `{"input":{"p":"`+name+`"}}`)
		if !utf8.ValidString(rp.raw) {
			t.Errorf("%s: REST answered invalid UTF-8: %.120q", name, rp.raw)
			continue
		}
		valid++
		mcp := r.doMCP(t, r.keyA, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t.u","arguments":{"p":"`+name+`"}}}`, "")
		var res struct {
			Result struct {
				Content []struct{ Text string }
				IsError bool
			}
		}
		if err := json.Unmarshal([]byte(mcp.raw), &res); err != nil || len(res.Result.Content) == 0 {
			t.Errorf("%s: MCP %d %.200s", name, mcp.status, mcp.raw)
			continue
		}
		switch name {
		case "error", "collide":
			if rp.status != 502 || !res.Result.IsError {
				t.Errorf("%s: REST %d, MCP isError %v; want an error both ways", name, rp.status, res.Result.IsError)
			}
		default:
			var out struct{ Output json.RawMessage }
			json.Unmarshal([]byte(rp.raw), &out)
			if rp.status != 200 || string(out.Output) != unframe(t, res.Result.Content[0].Text) {
				t.Errorf("%s: REST %d output %.100q, MCP text %.100q; want the same", name, rp.status, out.Output, res.Result.Content[0].Text)
			}
			if !strings.Contains(string(out.Output), "\uFFFD") {
				t.Errorf("%s: no U+FFFD in %.100q", name, out.Output)
			}
		}
	}
	t.Logf("%d of %d REST answers valid UTF-8", valid, len(forms))
}
