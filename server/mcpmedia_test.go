package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// TestBinaryAnswersAsMediaBlocks: an upstream's image, audio or other
// binary answer (a PDF, octet-stream, bytes that are not UTF-8) reaches MCP
// as an image, audio or embedded resource block holding the same bytes, on
// the fast path and the SDK's alike (6 of 6 each), and REST as their base64
// with meta.mediaType, read whole where a JSON answer of its size would be
// streamed; a JSON answer stays text; an answer over the tool's cap stays
// an error. A tool's media answer that is outside data comes inside the
// boundary: an opening and a closing text block around it.
func TestBinaryAnswersAsMediaBlocks(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
	wav := []byte("RIFF\x2c\x00\x00\x00WAVEfmt \x10\x00\x80\x80")
	pdf := []byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	raw := []byte{0, 1, 2, 0xff, 0xfe}
	wide := append(bytes.Clone(png), bytes.Repeat([]byte{0xfe}, 40<<10)...) // past the 32 KiB REST streams from
	answers := map[string]struct {
		ct   string
		body []byte
	}{
		"/png": {"image/png", png}, "/wav": {"audio/wav", wav}, "/pdf": {"application/pdf", pdf},
		"/raw": {"application/x-thing", raw}, "/json": {"application/json", []byte(`{"a":1}`)},
		"/big":  {"image/png", bytes.Repeat([]byte{0xff}, 1<<20+1)}, // past limits.memMB 1
		"/wide": {"image/png", wide},
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.URL.Path]
		w.Header().Set("Content-Type", a.ct)
		w.Write(a.body)
	}))
	t.Cleanup(up.Close)
	r := newRig(t)
	for _, name := range []string{"png", "wav", "pdf", "raw", "json", "big", "wide"} {
		body := `{"id":"t.media-` + name + `","description":"Media.","version":"1.0.0","mutating":false,"input":{"type":"object"},"output":{},
			"spec":{"kind":"http","method":"GET","urlTemplate":"` + up.URL + `/` + name + `"}}`
		if name == "big" {
			body = strings.Replace(body, `"output":{},`, `"output":{},"limits":{"memMB":1,"cpuMs":1000},`, 1)
		}
		os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, name+".json"), []byte(body), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		kind, media string
		data        []byte
	}{
		"png": {"image", "image/png", png}, "wav": {"audio", "audio/wav", wav},
		"pdf": {"resource", "application/pdf", pdf}, "raw": {"resource", "application/x-thing", raw},
	}
	ctx := context.Background()
	cs := mcpSession(t, r.http.URL, r.keyA)
	for _, fast := range []bool{true, false} {
		r.srv.noFastPath.Store(!fast)
		agreed := 0
		for name, w := range want {
			before := r.srv.fastCalls.Load()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.media-" + name, Arguments: map[string]any{}})
			// The rig's tools are outside data: the media block sits
			// between the two text blocks of one boundary.
			if err != nil || res.IsError || len(res.Content) != 3 {
				t.Fatalf("fast %v, %s: %+v %v", fast, name, res, err)
			}
			open, _ := res.Content[0].(*mcp.TextContent)
			end, _ := res.Content[2].(*mcp.TextContent)
			if open == nil || end == nil || !strings.HasPrefix(open.Text, "[outside data ") ||
				end.Text != "[end of outside data "+strings.Fields(open.Text)[2] || res.Meta[OutsideDataMeta] != true {
				t.Errorf("fast %v, %s: the media block is not framed: %#v %#v", fast, name, res.Content[0], res.Content[2])
			}
			if served := r.srv.fastCalls.Load() > before; served != fast {
				t.Errorf("fast %v, %s: the fast path served it: %v", fast, name, served)
			}
			var kind, media string
			var data []byte
			switch c := res.Content[1].(type) {
			case *mcp.ImageContent:
				kind, media, data = "image", c.MIMEType, c.Data
			case *mcp.AudioContent:
				kind, media, data = "audio", c.MIMEType, c.Data
			case *mcp.EmbeddedResource:
				kind, media, data = "resource", c.Resource.MIMEType, c.Resource.Blob
				if c.Resource.URI != "httptools://tools/t.media-"+name+"/output" {
					t.Errorf("%s: uri %q", name, c.Resource.URI)
				}
			}
			if kind != w.kind || media != w.media || !bytes.Equal(data, w.data) {
				t.Errorf("fast %v, %s: %s %s %q; want %s %s %q", fast, name, kind, media, data, w.kind, w.media, w.data)
				continue
			}
			agreed++
		}
		if agreed != len(want) {
			t.Errorf("fast %v: %d of %d media answers right", fast, agreed, len(want))
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.media-json", Arguments: map[string]any{}})
		if err != nil || len(res.Content) != 1 {
			t.Fatalf("json: %+v %v", res, err)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, `{"a":1}`) {
			t.Errorf("fast %v: a JSON answer: %#v", fast, res.Content[0])
		}
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.media-big", Arguments: map[string]any{}}); err != nil || !res.IsError {
			t.Errorf("fast %v: an image over the cap: %+v %v", fast, res, err)
		}
	}
	// REST: the base64 text and its media type.
	rp := r.do(t, r.keyA, "POST", "/v1/tools/t.media-png/invoke", `{"input":{}}`)
	got, _ := base64.StdEncoding.DecodeString(gjson.Get(rp.raw, "output").Str)
	if rp.status != 200 || !bytes.Equal(got, png) || gjson.Get(rp.raw, "meta.mediaType").Str != "image/png" {
		t.Errorf("REST: %d %s", rp.status, rp.raw)
	}
	// One REST would stream (any output, past 32 KiB) is read whole.
	rp = r.do(t, r.keyA, "POST", "/v1/tools/t.media-wide/invoke", `{"input":{}}`)
	got, _ = base64.StdEncoding.DecodeString(gjson.Get(rp.raw, "output").Str)
	if rp.status != 200 || !bytes.Equal(got, wide) || gjson.Get(rp.raw, "meta.mediaType").Str != "image/png" {
		t.Errorf("REST, 40 KiB: %d %.300s", rp.status, rp.raw)
	}
	if rp := r.do(t, r.keyA, "POST", "/v1/tools/t.media-json/invoke", `{"input":{}}`); gjson.Get(rp.raw, "meta.mediaType").Exists() {
		t.Errorf("REST, JSON: %s", rp.raw)
	}
}
