package httptest_test

import (
	"context"
	"net/http"

	"fmt"
	"github.com/httptools/httptools/fetch"
	"os"
	"path/filepath"

	toolstest "github.com/httptools/httptools/httptest"
)

// ExampleRun checks a manifest against its case file without any network:
// the fake upstream answers every host.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "pack")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "weather.json"), []byte(`{
	  "id": "acme.weather", "description": "Current weather.", "version": "1.0.0", "mutating": false,
	  "input": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
	  "output": {"type": "object"},
	  "spec": {"kind": "http", "method": "GET", "urlTemplate": "https://api.weather.example/v1/now{?city}",
	           "authorization": {"kind": "header", "headerName": "X-Key", "secretRef": {"envName": "production", "name": "WEATHER_KEY"}}}
	}`), 0o644)
	os.WriteFile(filepath.Join(dir, "weather.cases.json"), []byte(`[{
	  "name": "asks for one city",
	  "input": {"city": "São Paulo"},
	  "context": {"secrets": {"production/WEATHER_KEY": "test-key"}},
	  "request": {"method": "GET", "url": "https://api.weather.example/v1/now?city=S%C3%A3o%20Paulo", "headers": {"X-Key": "test-key"}},
	  "response": {"json": {"tempC": 24}},
	  "output": {"tempC": 24}
	}]`), 0o644)
	rep, err := toolstest.Run(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	passed, failed := rep.Counts()
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	// Output: 1 passed, 0 failed
}

// ExampleUpstream scripts answers and reads back what a client sent; its
// Client reaches it for any host name, with no network.
func ExampleUpstream() {
	up := toolstest.NewUpstream()
	defer up.Close()
	up.Script(toolstest.Response{Status: 201, JSON: []byte(`{"id":"x1"}`)})
	resp, err := up.Client().Do(context.Background(), &fetch.Request{
		Method: "POST", URL: "https://api.any-host.example/things", Header: http.Header{}, Body: []byte(`{"n":1}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := up.Requests()[0]
	fmt.Println(resp.Status, string(resp.Body))
	fmt.Println(r.Method, r.URL, string(r.Body))
	// Output:
	// 201 {"id":"x1"}
	// POST https://api.any-host.example/things {"n":1}
}
