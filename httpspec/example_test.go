package httpspec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// Example loads a manifest, synthesizes it with a client that may reach the
// loopback test server, and invokes it.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"number": 9007199254740993, "path": %q, "sent": %s}`, r.URL.Path, body)
	}))
	defer api.Close()

	manifest := `{
	  "id": "github.create-issue",
	  "description": "Open an issue.",
	  "version": "1.0.0",
	  "input": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"},
	            "title": {"type": "string"}}, "required": ["owner", "repo", "title"]},
	  "output": {"type": "object", "required": ["number"]},
	  "effects": [{"kind": "network", "resource": "external:127.0.0.1"}],
	  "spec": {
	    "kind": "http", "method": "POST",
	    "urlTemplate": "` + api.URL + `/repos/{owner}/{repo}/issues",
	    "authorization": {"kind": "bearer", "secretRef": {"envName": "production", "name": "GITHUB_TOKEN"}}
	  }
	}`
	// The SSRF guard refuses loopback addresses such as the test server's;
	// an operator opens a range by building the client that way.
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(fetch.NewClient(fetch.Config{
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})))
	loader := synth.Loader{Registry: reg}
	tool, err := loader.Load([]byte(manifest))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range tool.Warnings() {
		fmt.Println(w)
	}

	tc := synth.CallContext{Tenant: "acme", Secrets: auth.Map{"production/GITHUB_TOKEN": "t0ken"}}
	res, err := tool.Invoke(context.Background(), tc, json.RawMessage(`{"owner": "octo", "repo": "hello", "title": "It broke"}`), synth.InvokeOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Attempts, string(res.Output))

	// Errors are typed: branch on Code and Reason.
	_, err = tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{"owner": "octo", "repo": "hello", "title": "x"}`), synth.InvokeOptions{})
	var e *synth.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Reason)
		fmt.Println(strings.SplitN(e.Message, ":", 3)[0])
	}
	// Output:
	// 201 1 {"number": 9007199254740993, "path": "/repos/octo/hello/issues", "sent": {"title":"It broke"}}
	// precondition-failed secret-unavailable
	// Tool "github.create-issue" was not run
}
