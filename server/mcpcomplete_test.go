package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPCompletesEnumArguments: completion/complete over HTTP and stdio
// offers the enum values of a tool's argument that start with what was
// typed, nothing for an argument without an enum, and answers a tool the
// caller may not see as an unknown one.
func TestMCPCompletesEnumArguments(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Policies = c.Store.(PolicyStore) })
	os.WriteFile(filepath.Join(r.srv.cfg.ToolsDir, "pick.json"), []byte(`{"id":"t.pick","description":"Pick.","version":"1.0.0","mutating":false,
		"input":{"type":"object","properties":{"color":{"type":"string","enum":["red","Rose","green",7]},"note":{"type":"string"}}},"output":{"type":"object"},
		"spec":{"kind":"http","method":"GET","urlTemplate":"http://127.0.0.1:9/pick{?color}"}}`), 0o644)
	if err := r.srv.Reload(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stdio := r.srv.MCPToolsetServer("tenant-a", "", nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := stdio.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	sc, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sessions := map[string]*mcp.ClientSession{"http": mcpSession(t, r.http.URL, r.keyA), "stdio": sc}
	complete := func(cs *mcp.ClientSession, tool, arg, typed string) ([]string, error) {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: tool},
			Argument: mcp.CompleteParamsArgument{Name: arg, Value: typed}})
		if err != nil {
			return nil, err
		}
		return res.Completion.Values, nil
	}
	for name, cs := range sessions {
		if cs.InitializeResult().Capabilities.Completions == nil {
			t.Errorf("%s: completions not advertised", name)
		}
		for _, c := range []struct {
			arg, typed string
			want       []string
		}{
			{"color", "r", []string{"red", "Rose"}},
			{"color", "", []string{"red", "Rose", "green"}},
			{"color", "gr", []string{"green"}},
			{"color", "x", []string{}},
			{"note", "", []string{}},
			{"absent", "", []string{}},
		} {
			got, err := complete(cs, "t.pick", c.arg, c.typed)
			if err != nil || !slices.Equal(got, c.want) || got == nil {
				t.Errorf("%s: complete %s %q = %q, %v; want %q", name, c.arg, c.typed, got, err, c.want)
			}
		}
		if _, err := complete(cs, "t.nope", "color", ""); err == nil || !strings.Contains(err.Error(), `unknown tool "t.nope"`) {
			t.Errorf("%s: an unknown tool: %v", name, err)
		}
	}
	// Denied to tenant-a: unknown to its completions too, on both doors.
	if st := r.do(t, r.keyA, "PUT", "/v1/policy", `{"rules":[{"name":"no-pick","effect":"deny","tools":{"ids":["t.pick"]}}]}`); st.status != 200 {
		t.Fatalf("policy: %d %s", st.status, st.raw)
	}
	for name, cs := range sessions {
		if got, err := complete(cs, "t.pick", "color", ""); err == nil || !strings.Contains(err.Error(), `unknown tool "t.pick"`) {
			t.Errorf("%s: a denied tool completed %q, %v", name, got, err)
		}
	}
}
