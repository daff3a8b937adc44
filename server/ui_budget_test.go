package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleShowsTheModelsCutOfABigAnswer: in Chromium, a tool whose
// answer (2,000 items, about 60 KB) is far over its tenant's result budget
// of 3,000 characters shows the whole answer (2,000 items), and, as the
// model reads it, the cut text and its notice within the 3,000 characters,
// the notice naming the items kept of 2,000 and the page the count left
// out, and a link that opens the kept whole: the same bytes as the
// upstream's. One upstream call.
func TestConsoleShowsTheModelsCutOfABigAnswer(t *testing.T) {
	const budget, items = 3000, 2000
	r := newRig(t, func(c *Config) {
		c.UI = true
		c.ResultBudgets = ResultBudgets{Tenants: map[string]int{"tenant-a": budget}}
	})
	var whole strings.Builder
	whole.WriteString(`{"items":[`)
	for i := range items {
		if i > 0 {
			whole.WriteString(",")
		}
		fmt.Fprintf(&whole, `{"n":%d,"name":"widget %d"}`, i, i)
	}
	whole.WriteString(`]}`)
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(whole.String()))
	}))
	t.Cleanup(up.Close)
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "big.json"), []byte(`{"id":"t.big","description":"Lists every widget.","version":"1.0.0","mutating":false,
		"input":{"type":"object"},"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/widgets"}}`), 0o644)
	p, base := signedIn(t, r)
	p.do("run the big tool", chromedp.Navigate(base+"/ui/tools/t.big"), chromedp.WaitVisible(css("#run")),
		chromedp.Click(css("#run")), chromedp.WaitVisible(css("#output")))

	// A person's view: the whole answer.
	if n := eval[float64](p, `JSON.parse(document.getElementById("output").textContent).items.length`); n != items {
		t.Errorf("the console shows %v items of the answer, want all %d", n, items)
	}
	// The model's: cut to the budget, with its notice.
	p.do("open the model's view", chromedp.Click(css("#model-view summary")), chromedp.WaitVisible(css("#model-text")))
	chars := eval[float64](p, `[...document.getElementById("model-text").textContent].length + [...document.getElementById("model-notice").textContent].length`)
	kept := int(eval[float64](p, `JSON.parse(document.getElementById("model-text").textContent.split("\n").slice(1, -1).join("\n")).items.length`))
	notice, leftOut := p.text("#model-notice"), p.text("#model-left-out")
	if chars > budget || kept < 1 || kept >= items {
		t.Errorf("the model's view is %v characters (budget %d) keeping %d of %d items", chars, budget, kept, items)
	}
	if want := fmt.Sprintf("keeps %d of its %d items", kept, items); !strings.Contains(notice, want) || leftOut != fmt.Sprintf("%d items left out", items-kept) {
		t.Errorf("notice %q (want %q), left out %q (want %d)", notice, want, leftOut, items-kept)
	}

	// The link opens the kept whole: the upstream's bytes.
	href := eval[string](p, `document.getElementById("model-whole").getAttribute("href")`)
	if link := p.text("#model-whole"); link != fmt.Sprintf("The whole answer (%d bytes)", whole.Len()) {
		t.Errorf("the link reads %q", link)
	}
	p.do("open the whole", chromedp.Click(css("#model-whole")))
	p.waitFor(`location.pathname === ` + strconv.Quote(href) + ` && document.readyState === "complete"`)
	got := eval[string](p, `document.querySelector("pre")?.textContent ?? document.body.textContent`)
	size := eval[float64](p, `performance.getEntriesByType("navigation")[0].decodedBodySize`)
	ct := eval[string](p, `document.contentType`)
	if got != whole.String() || int(size) != whole.Len() || ct != "application/json" {
		t.Errorf("the whole answer: %d bytes shown, %v opened as %s; the upstream's are %d (equal %v)", len(got), size, ct, whole.Len(), got == whole.String())
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d upstream calls, want 1", n)
	}
}

// TestConsoleFindsAToolInALargeCatalogue: in Chromium, a tenant seeing 303
// tools (300 generated, past an MCP discovery threshold of 100) gets them
// all listed (303 rows, "303 of 303"); typing "archived" shows the 30 whose
// description says so; "invoicenumber", a parameter's name, finds the one
// tool that has it, in the page and with ?q= on the server; its run makes
// one upstream call.
func TestConsoleFindsAToolInALargeCatalogue(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true; c.MCPDiscoveryThreshold = 100 })
	var calls atomic.Int64
	var path atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls.Add(1)
		path.Store(req.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(up.Close)
	for i := range 300 {
		desc, prop, url := fmt.Sprintf("Lists the widgets of warehouse %03d.", i), "page", fmt.Sprintf("%s/w/%03d", up.URL, i)
		if i%10 == 0 {
			desc = fmt.Sprintf("Lists the archived widgets of warehouse %03d.", i)
		}
		if i == 123 {
			prop, url = "invoiceNumber", url+"/{invoiceNumber}"
		}
		m := fmt.Sprintf(`{"id":"gen.widgets-%03d","description":%q,"version":"1.0.0","mutating":false,
			"input":{"type":"object","properties":{%q:{"type":"string"}},"required":[%q]},"output":{"type":"object"},
			"spec":{"kind":"http","method":"GET","urlTemplate":%q}}`, i, desc, prop, prop, url)
		os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, fmt.Sprintf("gen-%03d.json", i)), []byte(m), 0o644)
	}
	p, base := signedIn(t, r)
	const rows, shown = `document.querySelectorAll("#tools tbody tr").length`, `[...document.querySelectorAll("#tools tbody tr:not([hidden]) a")].map(a => a.textContent)`
	if n, count := eval[float64](p, rows), p.text("#count"); n != 303 || count != "303" {
		t.Fatalf("listed %v rows, count %q; want 303", n, count)
	}
	p.do("type a search", chromedp.SendKeys(css("#q"), "archived"))
	if n, count := len(eval[[]string](p, shown)), p.text("#count"); n != 30 || count != "30" {
		t.Errorf("\"archived\": %d shown, count %q; want 30", n, count)
	}
	eval[bool](p, `(q => { q.value = ""; return q.dispatchEvent(new Event("input")) })(document.getElementById("q"))`)
	p.do("search by a parameter", chromedp.SendKeys(css("#q"), "invoicenumber"))
	if got := strings.Join(eval[[]string](p, shown), ","); got != "gen.widgets-123" {
		t.Errorf("\"invoicenumber\" shows %q, want gen.widgets-123", got)
	}
	p.do("search on the server", chromedp.Navigate(base+"/ui/?q=invoiceNumber"), chromedp.WaitVisible(css("#tools")))
	if n := eval[float64](p, rows); n != 1 || !strings.HasPrefix(p.text("#count"), "1") {
		t.Errorf("?q=invoiceNumber: %v rows, count %q", n, p.text("#count"))
	}
	p.do("run it", chromedp.Click(css(`a[href="/ui/tools/gen.widgets-123"]`)), chromedp.WaitVisible(css("#in-invoiceNumber")),
		chromedp.SendKeys(css("#in-invoiceNumber"), "INV-7"), chromedp.Click(css("#run")), chromedp.WaitVisible(css("#output")))
	if n, pth := calls.Load(), path.Load(); n != 1 || pth != "/w/123/INV-7" {
		t.Errorf("%d upstream calls (want 1), last to %v", n, pth)
	}
}
