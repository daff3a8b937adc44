package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/budget"
	"github.com/httptools/httptools/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultBudgetFitsEveryAnswer: answers of 10 KB to 8 MB give a model at
// most the call's budget of text (the answer's part inside the boundary
// and the notice), valid JSON of the answer's shape, a notice in the text
// and in _meta, and a link to the whole, which the same key reads back
// page by page, byte for byte, and no other key reads at all — on the
// fast path and the SDK's alike. The whole is drawn on the memory budget
// and given back when it expires.
func TestResultBudgetFitsEveryAnswer(t *testing.T) {
	const limit = 6000
	mem := budget.New(256 << 20)
	r := newRig(t, func(c *Config) {
		c.ResultBudgets = ResultBudgets{Default: limit, Tools: map[string]int{"t.roomy": -1}}
		c.Budget = mem
		c.ResultKeep = time.Hour
	})
	sizes := map[string]int{"10k": 10, "100k": 100, "1m": 1000, "8m": 7000}
	answers := map[string][]byte{}
	for name, n := range sizes {
		answers[name] = testkit.IssuesAnswer(n)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(answers[strings.TrimPrefix(req.URL.Path, "/")])
	}))
	t.Cleanup(up.Close)
	for _, id := range []string{"t.issues", "t.roomy"} {
		os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, id+".json"), []byte(`{"id":"`+id+`","description":"Issues.","version":"1.0.0","mutating":false,
			"input":{"type":"object","properties":{"size":{"type":"string"}},"required":["size"]},"output":{"type":"object"},"limits":{"memMB":16,"cpuMs":5000},
			"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/{size}"}}`), 0o644)
	}
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := mcpSession(t, r.http.URL, r.keyA)
	other, _, _ := r.store.CreateAPIKey(ctx, "tenant-a", auth.RoleAdmin, "")
	csOther := mcpSession(t, r.http.URL, other)
	fitted, readBack, othersRead := 0, 0, 0
	for _, fast := range []bool{true, false} {
		r.srv.noFastPath.Store(!fast)
		for name, n := range sizes {
			before := r.srv.fastCalls.Load()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.issues", Arguments: map[string]any{"size": name}})
			if err != nil || res.IsError {
				t.Fatalf("%s: %s %v", name, textOf(res), err)
			}
			if served := r.srv.fastCalls.Load() > before; served != fast {
				t.Errorf("fast %v, %s: served by the fast path: %v", fast, name, served)
			}
			chars := 0
			var texts []string
			var link *mcp.ResourceLink
			for _, c := range res.Content {
				switch c := c.(type) {
				case *mcp.TextContent:
					chars += utf8.RuneCountInString(c.Text)
					texts = append(texts, c.Text)
				case *mcp.ResourceLink:
					link = c
				}
			}
			if chars > limit || len(texts) != 2 || link == nil {
				t.Errorf("fast %v, %s: %d characters of text in %d blocks, link %v", fast, name, chars, len(texts), link)
				continue
			}
			var part struct {
				Total  int
				Issues []struct{ Number int }
			}
			if err := json.Unmarshal([]byte(unframe(t, texts[0])), &part); err != nil || part.Total != n || len(part.Issues) == 0 {
				t.Errorf("fast %v, %s: the part is not the answer's shape: %v", fast, name, err)
				continue
			}
			var note resultCut
			raw, _ := json.Marshal(res.Meta[TruncatedMeta])
			listed := len(part.Issues) == n || strings.Contains(texts[1], "keeps "+strconv.Itoa(len(part.Issues))+" of its "+strconv.Itoa(n)+" items")
			if err := json.Unmarshal(raw, &note); err != nil || note.URI != link.URI || note.Budget != limit || note.CutCount == 0 || !listed {
				t.Errorf("fast %v, %s: notice %s / %q", fast, name, raw, texts[1])
				continue
			}
			fitted++
			// The whole, page by page, by the same key.
			var whole strings.Builder
			for p := 1; p <= note.Pages; p++ {
				uri := link.URI
				if p > 1 {
					uri += "?page=" + strconv.Itoa(p)
				}
				rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil || len(rr.Contents) != 1 {
					t.Fatalf("%s page %d: %v", name, p, err)
				}
				whole.WriteString(rr.Contents[0].Text)
			}
			if whole.String() == string(answers[name]) {
				readBack++
			} else {
				t.Errorf("fast %v, %s: %d pages read back %d bytes of %d", fast, name, note.Pages, whole.Len(), len(answers[name]))
			}
			if _, err := csOther.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI}); err == nil {
				othersRead++
			}
		}
	}
	if want := 2 * len(sizes); fitted != want || readBack != want || othersRead != 0 {
		t.Errorf("%d of %d answers fitted, %d read back whole, %d read by another key", fitted, want, readBack, othersRead)
	}
	// The tool whose budget is off gives its answer whole.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.roomy", Arguments: map[string]any{"size": "100k"}})
	if err != nil || res.Meta[TruncatedMeta] != nil || len(res.Content) != 1 {
		t.Errorf("t.roomy: %v %v", res.Meta, err)
	}
	kept, bytes := r.srv.held.count()
	if inUse := mem.InUse(); kept != 2*len(sizes) || inUse < bytes {
		t.Errorf("%d answers kept, %d bytes; the memory budget holds %d", kept, bytes, inUse)
	}
	t.Logf("%d of %d answers fitted in %d characters, %d read back whole, %d by another key; %d kept, %d bytes on the memory budget",
		fitted, 2*len(sizes), limit, readBack, othersRead, kept, bytes)
	r.srv.held.close()
	if kept, _ := r.srv.held.count(); kept != 0 || mem.InUse() != 0 {
		t.Errorf("after close: %d kept, %d bytes on the budget", kept, mem.InUse())
	}
}

// TestKeptAnswersExpire: a kept answer goes when its time is up, its bytes
// back on the memory budget, and its link then answers as one never kept;
// with no room on the budget an answer is cut but not kept, and the
// notice says so.
func TestKeptAnswersExpire(t *testing.T) {
	mem := budget.New(64 << 20)
	r := newRig(t, func(c *Config) {
		c.ResultBudgets = ResultBudgets{Default: 3000}
		c.Budget = mem
		c.ResultKeep = 50 * time.Millisecond
	})
	small, big := testkit.IssuesAnswer(20), testkit.IssuesAnswer(1200)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/big" {
			w.Write(big)
			return
		}
		w.Write(small)
	}))
	t.Cleanup(up.Close)
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "i.json"), []byte(`{"id":"t.i","description":"Issues.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"p":{"type":"string"}}},"output":{"type":"object"},"limits":{"memMB":4,"cpuMs":5000},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/{p}"}}`), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := mcpSession(t, r.http.URL, r.keyA)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.i", Arguments: map[string]any{"p": "small"}})
	if err != nil || res.IsError {
		t.Fatal(textOf(res), err)
	}
	raw, _ := json.Marshal(res.Meta[TruncatedMeta])
	var note resultCut
	json.Unmarshal(raw, &note)
	if note.URI == "" {
		t.Fatalf("not kept: %s", raw)
	}
	testkit.WaitFor(t, "the kept answer to expire", func() bool { n, _ := r.srv.held.count(); return n == 0 })
	if mem.InUse() != 0 {
		t.Errorf("%d bytes still on the budget", mem.InUse())
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: note.URI}); err == nil {
		t.Error("an expired answer was read")
	}
	// The kept answers' share of the budget spent: cut, not kept.
	share := r.srv.held.shareOf(mem).Hold()
	if err := share.Take(ctx, r.srv.held.shareOf(mem).Size()); err != nil {
		t.Fatal(err)
	}
	defer share.Release()
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.i", Arguments: map[string]any{"p": "big"}})
	if err != nil || res.IsError {
		t.Fatal(textOf(res), err)
	}
	raw, _ = json.Marshal(res.Meta[TruncatedMeta])
	note = resultCut{}
	json.Unmarshal(raw, &note)
	last, _ := res.Content[len(res.Content)-1].(*mcp.TextContent)
	if note.URI != "" || note.NotKept == "" || last == nil || !strings.Contains(last.Text, "was not kept") {
		t.Errorf("over the share: %s, %v", raw, res.Content[len(res.Content)-1])
	}
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestRESTResultBudgetOnRequest: REST gives the whole answer unless the
// caller asks for the budget (?budget=model or a number); then the output
// is cut as MCP's and meta.truncated says where the whole is, which
// GET /v1/results/{id} gives back byte for byte to the same key only.
func TestRESTResultBudgetOnRequest(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ResultBudgets = ResultBudgets{Default: 5000} })
	answer := testkit.IssuesAnswer(300)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { w.Write(answer) }))
	t.Cleanup(up.Close)
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "i.json"), []byte(`{"id":"t.i","description":"Issues.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/i"}}`), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Output json.RawMessage
		Meta   struct{ Truncated *resultCut }
	}
	rp := r.do(t, r.keyA, "POST", "/v1/tools/t.i/invoke", `{}`)
	json.Unmarshal([]byte(rp.raw), &got)
	if rp.status != 200 || got.Meta.Truncated != nil || len(got.Output) != len(answer) {
		t.Fatalf("no budget asked: %d, %d bytes of %d, %v", rp.status, len(got.Output), len(answer), got.Meta.Truncated)
	}
	for _, q := range []string{"model", "7000"} {
		got.Meta.Truncated = nil
		rp = r.do(t, r.keyA, "POST", "/v1/tools/t.i/invoke?budget="+q, `{}`)
		json.Unmarshal([]byte(rp.raw), &got)
		c := got.Meta.Truncated
		if rp.status != 200 || c == nil || utf8.RuneCount(got.Output) > c.Budget || c.Path == "" || !json.Valid(got.Output) {
			t.Fatalf("budget=%s: %d %.300s", q, rp.status, rp.raw)
		}
		whole := r.do(t, r.keyA, "GET", c.Path, "")
		if whole.status != 200 || whole.raw != string(answer) {
			t.Errorf("budget=%s: the whole read back: %d, %d bytes of %d", q, whole.status, len(whole.raw), len(answer))
		}
		other := r.do(t, r.keyB, "GET", c.Path, "")
		if other.status != 404 {
			t.Errorf("budget=%s: another tenant's key read it: %d", q, other.status)
		}
	}
	if rp := r.do(t, r.keyA, "POST", "/v1/tools/t.i/invoke?budget=lots", `{}`); rp.status != 400 || !strings.Contains(rp.raw, "number of characters") {
		t.Errorf("budget=lots: %d %s", rp.status, rp.raw)
	}
}

// TestImageOverBudgetIsALink: an image whose bytes are over the budget is
// never cut: the result has no image block but the notice and the link,
// and resources/read gives the image's bytes back whole, on both paths.
func TestImageOverBudgetIsALink(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ResultBudgets = ResultBudgets{Default: MinResultBudget} })
	img := append([]byte("\x89PNG\r\n\x1a\n"), []byte(strings.Repeat("\xfe\x01", 3000))...)
	small := append([]byte("\x89PNG\r\n\x1a\n"), 1, 2, 3)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		if req.URL.Path == "/small" {
			w.Write(small)
			return
		}
		w.Write(img)
	}))
	t.Cleanup(up.Close)
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "p.json"), []byte(`{"id":"t.png","description":"A picture.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"p":{"type":"string"}}},"output":{},"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/{p}"}}`), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := mcpSession(t, r.http.URL, r.keyA)
	linked := 0
	for _, fast := range []bool{true, false} {
		r.srv.noFastPath.Store(!fast)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.png", Arguments: map[string]any{"p": "big"}})
		if err != nil || res.IsError {
			t.Fatal(textOf(res), err)
		}
		var link *mcp.ResourceLink
		images := 0
		for _, c := range res.Content {
			switch c := c.(type) {
			case *mcp.ImageContent:
				images++
			case *mcp.ResourceLink:
				link = c
			}
		}
		if images != 0 || link == nil || link.MIMEType != "image/png" || !strings.Contains(textOf(res), "is not included") {
			t.Errorf("fast %v: %d image blocks, link %v, text %q", fast, images, link, textOf(res))
			continue
		}
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
		if err != nil || len(rr.Contents) != 1 || string(rr.Contents[0].Blob) != string(img) || rr.Contents[0].MIMEType != "image/png" {
			t.Errorf("fast %v: read back %v", fast, err)
			continue
		}
		linked++
		// A small one stays an image block.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.png", Arguments: map[string]any{"p": "small"}})
		if err != nil || res.Meta[TruncatedMeta] != nil {
			t.Errorf("fast %v: a small image: %v %v", fast, res.Meta, err)
		}
	}
	if linked != 2 {
		t.Errorf("%d of 2 big images linked and read back", linked)
	}
}

// TestKeptAnswersReadOnAnyReplica: two replicas on one store; an answer cut
// on one is read back whole on the other, over MCP and REST, by the key
// that made the call only (another tenant's key: 0 reads). Without the
// store, the other replica reads nothing.
func TestKeptAnswersReadOnAnyReplica(t *testing.T) {
	answer := testkit.IssuesAnswer(200)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { w.Write(answer) }))
	t.Cleanup(up.Close)
	for _, shared := range []bool{true, false} {
		r := newRig(t, func(c *Config) {
			c.ResultBudgets = ResultBudgets{Default: 4000}
			if shared {
				c.Results = c.Store.(*testStore)
			}
		})
		os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "i.json"), []byte(`{"id":"t.i","description":"Issues.","version":"1.0.0","mutating":false,
			"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/i"}}`), 0o644)
		if err := r.srv.Reload(); err != nil {
			t.Fatal(err)
		}
		other, err := New(r.srv.cfg) // a second replica: the same store, a process of its own
		if err != nil {
			t.Fatal(err)
		}
		otherHTTP := httptest.NewServer(other.Handler())
		t.Cleanup(otherHTTP.Close)
		ctx := context.Background()
		res, err := mcpSession(t, r.http.URL, r.keyA).CallTool(ctx, &mcp.CallToolParams{Name: "t.i", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatal(textOf(res), err)
		}
		raw, _ := json.Marshal(res.Meta[TruncatedMeta])
		var note resultCut
		json.Unmarshal(raw, &note)
		read := 0
		var whole strings.Builder
		cs := mcpSession(t, otherHTTP.URL, r.keyA)
		for p := 1; p <= note.Pages; p++ {
			uri := note.URI
			if p > 1 {
				uri += "?page=" + strconv.Itoa(p)
			}
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				break
			}
			whole.WriteString(rr.Contents[0].Text)
		}
		if whole.String() == string(answer) {
			read++
		}
		rest := restGet(t, otherHTTP.URL+note.Path, r.keyA)
		if rest == string(answer) {
			read++
		}
		strangers := 0
		if restGet(t, otherHTTP.URL+note.Path, r.keyB) != "" {
			strangers++
		}
		if _, err := mcpSession(t, otherHTTP.URL, r.keyB).ReadResource(ctx, &mcp.ReadResourceParams{URI: note.URI}); err == nil {
			strangers++
		}
		if want := map[bool]int{true: 2, false: 0}[shared]; read != want || strangers != 0 {
			t.Errorf("shared store %v: read whole on the other replica %d of 2 ways (want %d), by another tenant's key %d", shared, read, want, strangers)
		}
	}
}

// restGet is the body of a 200 to GET url with key, else "".
func restGet(t *testing.T, url, key string) string {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return ""
	}
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// TestBudgetCountsEscapedLineSeparators: inside the outside-data boundary
// each line separator of an answer is written as a six-character escape;
// the budget counts the text so written. An answer of 600 U+2028 (1,800
// bytes, 600 runes, 3,600 characters framed) and one of 3,000 are both
// held to 2,000 characters, on both paths.
func TestBudgetCountsEscapedLineSeparators(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ResultBudgets = ResultBudgets{Default: MinResultBudget} })
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"s":"` + strings.Repeat("\u2028", n) + `"}`))
	}))
	t.Cleanup(up.Close)
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "sep.json"), []byte(`{"id":"t.sep","description":"Separators.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"n":{"type":"string"}}},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/{n}"}}`), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := mcpSession(t, r.http.URL, r.keyA)
	within := 0
	for _, fast := range []bool{true, false} {
		r.srv.noFastPath.Store(!fast)
		for _, n := range []string{"600", "3000"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.sep", Arguments: map[string]any{"n": n}})
			if err != nil || res.IsError {
				t.Fatal(textOf(res), err)
			}
			if chars := utf8.RuneCountInString(textOf(res)); chars > MinResultBudget || res.Meta[TruncatedMeta] == nil {
				t.Errorf("fast %v, %s separators: %d characters of text (budget %d), cut %v", fast, n, chars, MinResultBudget, res.Meta[TruncatedMeta] != nil)
				continue
			}
			within++
		}
	}
	if within != 4 {
		t.Errorf("%d of 4 answers within the budget", within)
	}
}
