package server

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleShowsBinaryAnswers: in Chromium, a tool whose upstream
// answers an image shows the image (decoded: 3×2 pixels, under the
// console's Content-Security-Policy) and offers it for download as
// output.png; a PDF is offered for download only; neither is dumped as
// base64 text.
func TestConsoleShowsBinaryAnswers(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true })
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	var pic bytes.Buffer
	png.Encode(&pic, img)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/pdf" {
			w.Header().Set("Content-Type", "application/pdf")
			w.Write([]byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"))
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(pic.Bytes())
	}))
	t.Cleanup(up.Close)
	for _, kind := range []string{"png", "pdf"} {
		os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, kind+".json"), []byte(`{"id":"t.`+kind+`","description":"Bytes.","version":"1.0.0","mutating":false,
			"input":{"type":"object"},"output":{},"spec":{"kind":"http","method":"GET","urlTemplate":"`+up.URL+`/`+kind+`"}}`), 0o644)
	}
	p, base := signedIn(t, r)
	p.do("run the image tool", chromedp.Navigate(base+"/ui/tools/t.png"), chromedp.WaitVisible(css("#run")),
		chromedp.Click(css("#run")), chromedp.WaitVisible(css("#output-download")))
	p.waitFor(`document.getElementById("output-image")?.complete === true`)
	w, h := eval[float64](p, `document.getElementById("output-image").naturalWidth`), eval[float64](p, `document.getElementById("output-image").naturalHeight`)
	name := eval[string](p, `document.getElementById("output-download").getAttribute("download")`)
	text := eval[bool](p, `document.getElementById("output") !== null`)
	if w != 3 || h != 2 || name != "output.png" || text {
		t.Errorf("image: %vx%v pixels, download %q, base64 shown as text %v", w, h, name, text)
	}
	p.shot("binary-image")
	p.do("run the PDF tool", chromedp.Navigate(base+"/ui/tools/t.pdf"), chromedp.WaitVisible(css("#run")),
		chromedp.Click(css("#run")), chromedp.WaitVisible(css("#output-download")))
	name = eval[string](p, `document.getElementById("output-download").getAttribute("download")`)
	imgShown := eval[bool](p, `document.getElementById("output-image") !== null`)
	if name != "output.pdf" || imgShown || p.text("#media") != "application/pdf, 15 bytes" {
		t.Errorf("pdf: download %q, image shown %v, %q", name, imgShown, p.text("#media"))
	}
}
