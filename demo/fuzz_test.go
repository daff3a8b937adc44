package demo_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/httptools/httptools/demo"
)

// FuzzAPI: no request makes the demo API panic or answer a 5xx other than
// 507 (full).
func FuzzAPI(f *testing.F) {
	f.Add("GET", "/hello?name=Ada", []byte(nil))
	f.Add("POST", "/notes", []byte(`{"text":"x"}`))
	f.Add("POST", "/notes", []byte(`{"text":`))
	f.Add("GET", "/notes", []byte(nil))
	api := demo.NewAPI()
	f.Fuzz(func(t *testing.T, method, target string, body []byte) {
		req, err := http.NewRequest(method, "http://"+demo.Host+"/", bytes.NewReader(body))
		if err != nil {
			return
		}
		if u, err := req.URL.Parse(target); err == nil {
			req.URL = u
		}
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		if w.Code >= 500 && w.Code != http.StatusInsufficientStorage {
			t.Errorf("%s %q: %d", method, target, w.Code)
		}
		demo.IsDemo(target)
	})
}
