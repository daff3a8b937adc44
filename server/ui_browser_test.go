package server

import (
	"context"
	"fmt"
	"github.com/httptools/httptools/internal/testkit"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/httptools/httptools/synth"
)

// browser starts Debian's chromium, headless, for one test. Without it the
// test is skipped, unless HTTPTOOLS_TEST_BROWSER=required (as in .ci/run,
// which installs it).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("HTTPTOOLS_TEST_BROWSER") == "required" {
			t.Fatal("chromium is not installed (apt-get install -y chromium)")
		}
		t.Skip("no chromium: apt-get install -y chromium to run the console in a browser")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// screenshots is where the console's screenshots go: $HTTPTOOLS_SCREENSHOTS,
// else a fresh temporary folder (named in the test log; never committed).
func screenshots(t *testing.T) string {
	dir := os.Getenv("HTTPTOOLS_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "httptools-console-"); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(dir, 0o755)
	t.Logf("screenshots in %s", dir)
	return dir
}

// page drives one browser tab for a test, failing it with the page's
// HTML on the first error.
// signedIn loads r's tools again (a test wrote its manifests), opens the
// console in chromium and signs in with key A: the page and the console's
// base URL.
func signedIn(t *testing.T, r *rig) (*page, string) {
	t.Helper()
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	p := &page{t: t, ctx: browser(t), dir: screenshots(t)}
	base := r.http.URL
	p.do("sign in", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(css("#key")),
		chromedp.SendKeys(css("#key"), r.keyA+"\r"), chromedp.WaitVisible(css("#tools")))
	return p, base
}

type page struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func (p *page) fail(what string, err error) {
	p.t.Helper()
	html, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	p.t.Fatalf("%s: %v\n%.2000s", what, err, html)
}

// do runs steps.
func (p *page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.fail(what, err)
	}
}

// text is the visible text of the first element sel matches. It is read
// by script, not through chromedp's node cache, which can still hold the
// page before a navigation ("No node with given id found").
func (p *page) text(sel string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`)?.innerText ?? "")`))
	if err != nil {
		p.fail("text of "+sel, err)
	}
	return strings.TrimSpace(v)
}

func (p *page) html() string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		p.fail("html", err)
	}
	return v
}

func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.fail(expr, err)
	}
	return v
}

// waitFor waits until the expression is true on the page, across a
// navigation (an element of the page before may match a selector too).
func (p *page) waitFor(expr string) {
	p.t.Helper()
	var err error
	for deadline := time.Now().Add(testkit.WaitLimit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var ok bool
		if ok, err = chromedp.Run(p.ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
	}
	p.fail("waiting for "+expr, err)
}

// shot writes a screenshot of the whole page.
func (p *page) shot(name string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.fail("screenshot "+name, err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// TestConsoleInABrowser drives the console in chromium as a person would:
// sign in, search the catalogue, fill a tool's form, dry-run and run it
// against a local upstream and read the output; connect an account through
// the fake OAuth provider and revoke it; set a secret and delete it; by
// keyboard where a person would type, and at a phone's width. No key,
// secret or token is ever in a page or readable by its script.
func TestConsoleInABrowser(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true })
	p := &page{t: t, ctx: browser(t), dir: screenshots(t)}
	base := r.http.URL

	// Sign in: /ui/ sends an unknown visitor to the sign-in page.
	p.do("sign in page", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(css("#key")))
	p.shot("1-sign-in")
	p.do("sign in", chromedp.SendKeys(css("#key"), r.keyA+"\r"), chromedp.WaitVisible(css("#tools")))
	if who, cookies := p.text("#tenant"), eval[string](p, "document.cookie"); who != "tenant-a" || cookies != "" {
		t.Errorf("signed in as %q; the page's script reads cookies %q", who, cookies)
	}

	// The catalogue: three tools; typing filters them live.
	const shown = `[...document.querySelectorAll("#tools tbody tr:not([hidden]) a")].map(a => a.textContent).join(",")`
	if got := eval[string](p, shown); got != "t.echo,t.mail,t.secret" {
		t.Errorf("listed %q", got)
	}
	p.do("type a search", chromedp.SendKeys(css("#q"), "mutating"))
	if got, count := eval[string](p, shown), p.text("#count"); got != "t.mail" || count != "1" {
		t.Errorf("search \"mutating\": %q shown, count %q; want t.mail", got, count)
	}
	p.shot("2-catalogue-search")
	eval[bool](p, `(q => { q.value = ""; return q.dispatchEvent(new Event("input")) })(document.getElementById("q"))`)
	p.do("search by another word", chromedp.SendKeys(css("#q"), "echo"))
	if got := eval[string](p, shown); got != "t.echo" {
		t.Errorf("search \"echo\" shows %q", got)
	}

	// A tool's page: the form from its input schema; a dry run, then a run.
	p.do("open a tool", chromedp.Click(css(`a[href="/ui/tools/t.echo"]`)), chromedp.WaitVisible(css("#in-id")),
		chromedp.SendKeys(css("#in-id"), "a b"), chromedp.Click(css("#dry-run")), chromedp.WaitVisible(css("#curl")))
	if curl := p.text("#curl"); !strings.HasPrefix(curl, "curl 'http://127.0.0.1:") || !strings.Contains(curl, "/items/a%20b'") || r.upCalls.Load() != 0 {
		t.Errorf("dry run: %q, %d upstream calls (want 0)", curl, r.upCalls.Load())
	}
	p.shot("3-tool-dry-run")
	p.do("run", chromedp.Click(css("#run")), chromedp.WaitVisible(css("#output"))) // the form kept the value
	if out, status, attempts := p.text("#output"), p.text("#status"), p.text("#attempts"); !strings.Contains(out, `"path": "/items/a b"`) ||
		status != "200" || attempts != "1" || r.upCalls.Load() != 1 {
		t.Errorf("run: status %s, attempts %s, %d upstream calls, output %s", status, attempts, r.upCalls.Load(), out)
	}
	p.shot("4-tool-run")
	p.do("a run that fails", chromedp.Navigate(base+"/ui/tools/t.secret"), chromedp.WaitVisible(css("#run")),
		chromedp.Click(css("#run")), chromedp.WaitVisible(css("#error-code")))
	if code, reason := p.text("#error-code"), p.text("#error-reason"); code != "precondition-failed" || reason != "secret-unavailable" {
		t.Errorf("error shown as %s / %s", code, reason)
	}
	p.shot("5-tool-error")

	// Connections: connect person u1's account through the fake provider,
	// back to the list, then revoke it.
	p.do("connect", chromedp.Navigate(base+"/ui/connections"), chromedp.WaitVisible(css("#connect")),
		chromedp.SetValue(css("#as"), "person"), chromedp.SendKeys(css("#connect-person"), "u1"),
		chromedp.Click(css("#connect")), chromedp.WaitVisible(css("#outcome")))
	if got, title := p.text("#outcome"), eval[string](p, "document.title"); !strings.HasPrefix(got, "Connected: the google account of person u1") || title != "Connected · httptools" {
		t.Errorf("callback page: %q, title %q", got, title)
	}
	p.shot("6-connected")
	p.do("back to the list", chromedp.Click(css("#back")), chromedp.WaitVisible(css("#connections")))
	if got := eval[string](p, `[...document.querySelectorAll("#connections tbody tr[id] .status")].map(td => td.textContent.trim()).join(",")`); got != "active" {
		t.Errorf("connection statuses %q, want active", got)
	}
	p.shot("7-connections")
	p.do("revoke", chromedp.Click(css("#connections button.danger")), chromedp.WaitVisible(css("#notice")))
	if notice, st := p.text("#notice"), eval[string](p, `[...document.querySelectorAll("#connections tbody tr[id] .status")].map(td => td.textContent.trim()).join(",")`); !strings.Contains(notice, "revoked") || st != "revoked" {
		t.Errorf("after revoke: notice %q, statuses %q", notice, st)
	}
	p.shot("7b-revoked")

	// Secrets: set one; its name is listed, its value never shown; delete it.
	const value = "s3cr3t-value-never-shown"
	p.do("set a secret", chromedp.Navigate(base+"/ui/secrets"), chromedp.WaitVisible(css("#secret-name")),
		chromedp.SendKeys(css("#secret-name"), "TOKEN"), chromedp.SendKeys(css("#secret-value"), value+"\r"),
		chromedp.WaitVisible(css("#notice")))
	got, _ := r.store.Secret(context.Background(), "tenant-a", synth.SecretRef{EnvName: "production", Name: "TOKEN"})
	if list := p.text("#secrets tbody"); !strings.Contains(list, "TOKEN") || strings.Contains(p.html(), value) || got != value {
		t.Errorf("secrets list %q; stored %q; the page holds the value: %v", list, got, strings.Contains(p.html(), value))
	}
	p.shot("8-secrets")
	p.do("delete the secret", chromedp.Click(css("#secrets button.danger")))
	p.waitFor(`(document.getElementById("notice")?.textContent || "").includes("deleted")`)
	if list := p.text("#secrets tbody"); !strings.Contains(list, "No secrets yet") {
		t.Errorf("after delete: %q", list)
	}

	// Keyboard: the first Tab reaches the skip link; at a phone's width
	// nothing scrolls sideways.
	p.do("phone width", chromedp.EmulateViewport(375, 800, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(css("#tools")), chromedp.KeyEvent("\t"))
	if f, over := eval[string](p, "document.activeElement.textContent"), eval[bool](p, "document.documentElement.scrollWidth > window.innerWidth"); f != "Skip to content" || over {
		t.Errorf("first Tab focuses %q; sideways scroll at 375px: %v", f, over)
	}
	p.shot("9-phone-catalogue")
	p.do("phone tool page", chromedp.Navigate(base+"/ui/tools/t.echo"), chromedp.WaitVisible(css("#in-id")))
	if over := eval[bool](p, "document.documentElement.scrollWidth > window.innerWidth"); over {
		t.Error("the tool page scrolls sideways at 375px")
	}
	p.shot("10-phone-tool")

	// No page ever held the key.
	for _, path := range []string{"/ui/", "/ui/tools/t.echo", "/ui/connections", "/ui/secrets"} {
		p.do("read "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(css("main")))
		if strings.Contains(p.html(), r.keyA) {
			t.Errorf("%s holds the API key", path)
		}
	}
}

// TestConsoleResultInView: after Run and after Dry run the page opens at
// the result, at a desktop's size and a phone's, so that a click never
// looks like nothing happened; the pages have an icon, and a tool id is
// not broken at its hyphens. Screenshots of each are named in the log.
func TestConsoleResultInView(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true })
	// A tool of many fields, as imported ones have: its form is longer
	// than a window, and its result below it.
	up := strings.TrimSuffix(gjsonURL(t, r), "/")
	var props []string
	for i := range 12 {
		props = append(props, fmt.Sprintf(`"field_%02d":{"type":"string","description":"The %d-th field, described at some length as APIs describe theirs."}`, i, i))
	}
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "long.json"), []byte(`{"id":"t.search-all-the-things","description":"Search with many fields.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"id":{"type":"string"},`+strings.Join(props, ",")+`}},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"`+up+`/items/{id}"}}`), 0o644)
	p, base := signedIn(t, r)
	if icon := eval[string](p, `document.querySelector('link[rel="icon"]')?.href ?? ""`); !strings.HasPrefix(icon, "data:image/svg+xml") {
		t.Errorf("no icon: %q", icon)
	}
	const inView = `(r => r.top >= 0 && r.top < window.innerHeight)(document.getElementById("result").getBoundingClientRect())`
	for _, vp := range []struct {
		w, h   int64
		mobile bool
	}{{1280, 800, false}, {390, 844, true}} {
		size := strconv.FormatInt(vp.w, 10) + "x" + strconv.FormatInt(vp.h, 10)
		emulate := chromedp.EmulateViewport(vp.w, vp.h)
		if vp.mobile {
			emulate = chromedp.EmulateViewport(vp.w, vp.h, chromedp.EmulateMobile)
		}
		for _, action := range []string{"run", "dry-run"} {
			want := map[string]string{"run": "#output", "dry-run": "#curl"}[action]
			p.do(action+" at "+size, emulate, chromedp.Navigate(base+"/ui/tools/t.search-all-the-things"), chromedp.WaitVisible(css("#in-id")),
				chromedp.SendKeys(css("#in-id"), "x"), chromedp.Click(css("#"+action)), chromedp.WaitVisible(css(want)))
			p.waitFor(inView)
			if top := eval[float64](p, `document.getElementById("result").getBoundingClientRect().top`); top < 0 || top >= float64(vp.h) {
				t.Errorf("%s at %s: the result is at %.0f px, outside the %d px window", action, size, top, vp.h)
			}
			png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(p.dir, "result-"+action+"-"+size+".png")
			os.WriteFile(name, png, 0o644)
			t.Logf("screenshot %s", name)
		}
		// The tool's heading is one line: its id not broken at a hyphen.
		if lines := eval[float64](p, `(h => Math.round(h.getBoundingClientRect().height / parseFloat(getComputedStyle(h).lineHeight)))(document.querySelector("h1"))`); lines > 1 {
			t.Errorf("at %s the tool id heading takes %.0f lines", size, lines)
		}
	}
}
