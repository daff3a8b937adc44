package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections/sqlstore"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/server"
	"github.com/httptools/httptools/synth"
)

// Serve a folder of manifests over REST (and MCP at /mcp) for the tenants
// of API keys.
func Example() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"issue":%q}`, strings.TrimPrefix(r.URL.Path, "/issues/"))
	}))
	defer upstream.Close()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "get-issue.json"), []byte(`{"id":"demo.get-issue","description":"Reads an issue.","version":"1.0.0","mutating":false,
	  "input":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},"output":{"type":"object"},
	  "spec":{"kind":"http","method":"GET","urlTemplate":"`+upstream.URL+`/issues/{n}"}}`), 0o644)

	ctx := context.Background()
	keyring, _ := sqlstore.NewKeyring(make([]byte, 32))
	store, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(dir, "store.db"), keyring, sqlstore.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	reg := &synth.Registry{}
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(fetch.NewClient(fetch.Config{
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, // the example's upstream
	})))
	srv, err := server.New(server.Config{Store: store, Keys: store, ToolsDir: dir, Loader: &synth.Loader{Registry: reg}})
	if err != nil {
		fmt.Println(err)
		return
	}
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	key, _, _ := store.CreateAPIKey(ctx, "acme", auth.RoleService, "")

	req, _ := http.NewRequest("POST", api.URL+"/v1/tools/demo.get-issue/invoke", strings.NewReader(`{"input":{"n":42}}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, strings.Contains(string(b), `"output":{"issue":"42"}`))
	// Output:
	// 200 true
}
