package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
)

// Issue 45 point 9: the console separates an imported tool's summary from
// its description, puts required fields first, keeps the navigation on one
// row and the tenant in view at a phone's width, and never breaks the
// sign-in hint's command.

const importedLike = `{"id":"t.imported","description":"Create a note.\n\nCreates a note in the workspace. The text is kept as sent.","version":"1.0.0","mutating":false,
	"input":{"type":"object","properties":{"a_opt":{"type":"string"},"b_opt":{"type":"string"},"z_req":{"type":"string"},"c_opt":{"type":"integer"}},"required":["z_req"]},
	"output":{"type":"object"},"spec":{"kind":"http","method":"GET","urlTemplate":"https://api.example.com/notes/{z_req}{?a_opt,b_opt,c_opt}"}}`

// TestToolSummaryAndRequiredFirst: the row's summary is the first
// paragraph and the rest one detail; the one required field is first, the
// three optional ones after it in the schema's order.
func TestToolSummaryAndRequiredFirst(t *testing.T) {
	row := rowOf("t.imported", []byte(importedLike))
	if row.Summary != "Create a note." || len(row.Details) != 1 || !strings.HasPrefix(row.Details[0], "Creates a note") {
		t.Errorf("summary %q, %d details %q", row.Summary, len(row.Details), row.Details)
	}
	var names []string
	for _, f := range fieldsOf(gjson.Get(importedLike, "input")) {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "z_req,a_opt,b_opt,c_opt" {
		t.Errorf("fields %v; want z_req first, then a_opt, b_opt, c_opt", names)
	}
}

// TestConsoleAtAPhonesWidth: at 390 px the sign-in hint's command is on one
// line, the sections are one row with every link in it, the tenant is in
// view, and a tool page shows its summary apart from its description, the
// required field first.
func TestConsoleAtAPhonesWidth(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true })
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "imported.json"), []byte(importedLike), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	p := &page{t: t, ctx: browser(t), dir: screenshots(t)}
	base := r.http.URL
	p.do("sign-in page at 390 px", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(css("#key")))
	lines := eval[float64](p, `[...document.querySelectorAll(".hint code")].find(c => c.textContent.includes("keys create")).getClientRects().length`)
	if lines != 1 {
		t.Errorf("the hint's keys create command takes %.0f lines, want 1", lines)
	}
	p.shot("phone-login")
	p.do("sign in", chromedp.SendKeys(css("#key"), r.keyA+"\r"), chromedp.WaitVisible(css("#tools")))
	// One row: every link's middle within a few pixels of the first's
	// (the current section's underline makes its box taller); and every
	// link inside the window, none scrolled out of sight.
	rows := eval[float64](p, `new Set([...document.querySelectorAll("header nav a")].map(a => (r => Math.round((r.top + r.bottom) / 16))(a.getBoundingClientRect()))).size`)
	links := eval[float64](p, `document.querySelectorAll("header nav a").length`)
	inside := eval[float64](p, `[...document.querySelectorAll("header nav a")].filter(a => a.getBoundingClientRect().right <= window.innerWidth).length`)
	t.Logf("links right edges: %s", eval[string](p, `[...document.querySelectorAll("header nav a")].map(a => Math.round(a.getBoundingClientRect().right)).join(",")`))
	if rows != 1 || links < 6 || inside != links {
		t.Errorf("the %.0f section links take %.0f rows (want 1), %.0f of them inside the window", links, rows, inside)
	}
	visible := eval[bool](p, `(r => r.width > 0 && r.left >= 0 && r.right <= window.innerWidth)(document.getElementById("tenant").getBoundingClientRect())`)
	if !visible {
		t.Errorf("the tenant label is not in view at 390 px")
	}
	p.shot("phone-catalogue")
	p.do("tool page", chromedp.Navigate(base+"/ui/tools/t.imported"), chromedp.WaitVisible(css("#in-z_req")))
	if s := p.text("#summary"); s != "Create a note." {
		t.Errorf("summary %q", s)
	}
	if n := eval[float64](p, `document.querySelectorAll("p.desc").length`); n != 1 {
		t.Errorf("%.0f description paragraphs, want 1", n)
	}
	if first := eval[string](p, `document.querySelector("#run-form .field input, #run-form .field select, #run-form .field textarea").id`); first != "in-z_req" {
		t.Errorf("the first field is %s, want in-z_req", first)
	}
	p.shot("phone-tool")
}
