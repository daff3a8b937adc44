package server

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEveryFrontDoorIsOneCall: REST, MCP (the SDK and its fast path) and
// the console run a call through the service's one call, so one call
// comes out the same at each: the same upstream requests, the same
// output, the same code, reason and message for each refusal.
func TestEveryFrontDoorIsOneCall(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true })
	person, _, _ := r.store.CreateAPIKey(context.Background(), "tenant-a", auth.RolePerson, "u1")
	sdk := mcpSession(t, r.http.URL, r.keyA)
	personSDK := mcpSession(t, r.http.URL, person)

	type outcome struct{ ok, code, msg string }
	rest := func(key, tool, input, ctxJSON string) outcome {
		body := `{"input":` + input + `,"context":` + ctxJSON + `}`
		rp := r.do(t, key, "POST", "/v1/tools/"+tool+"/invoke", body)
		if rp.status == http.StatusOK {
			out, _ := json.Marshal(rp.body["output"])
			return outcome{ok: string(out)}
		}
		e, _ := rp.body["error"].(map[string]any)
		return outcome{code: e["code"].(string), msg: e["message"].(string)}
	}
	viaMCP := func(cs *mcp.ClientSession, tool, input string) outcome {
		var args map[string]any
		json.Unmarshal([]byte(input), &args)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("MCP %s: %v", tool, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError {
			text = unframe(t, text)
			var v any
			json.Unmarshal([]byte(text), &v)
			out, _ := json.Marshal(v)
			return outcome{ok: string(out)}
		}
		code, msg, _ := strings.Cut(text, ": ")
		return outcome{code: code, msg: msg}
	}
	fast := func(key, tool, input string) outcome {
		b := []byte(fastCall(t, r, key, tool, input))
		var rpc struct {
			Result mcp.CallToolResult
		}
		if err := json.Unmarshal(b, &rpc); err != nil {
			t.Fatalf("fast path: %s", b)
		}
		var tc struct{ Text string }
		raw, _ := json.Marshal(rpc.Result.Content[0])
		json.Unmarshal(raw, &tc)
		if !rpc.Result.IsError {
			var v any
			json.Unmarshal([]byte(unframe(t, tc.Text)), &v)
			out, _ := json.Marshal(v)
			return outcome{ok: string(out)}
		}
		code, msg, _ := strings.Cut(tc.Text, ": ")
		return outcome{code: code, msg: msg}
	}
	field := func(page, id string) string {
		m := regexp.MustCompile(`id="` + id + `"[^>]*>([^<]*)<`).FindStringSubmatch(page)
		if m == nil {
			return ""
		}
		return html.UnescapeString(m[1])
	}
	console := func(key, tool, input, person string) outcome {
		page := consolePage(t, r, key, "POST", "/ui/tools/"+tool, url.Values{"action": {"run"}, "_json": {input}, "person": {person}})
		if out := field(page, "output"); out != "" {
			var v any
			json.Unmarshal([]byte(out), &v)
			o, _ := json.Marshal(v)
			return outcome{ok: string(o)}
		}
		return outcome{code: field(page, "error-code"), msg: field(page, "error-message")}
	}

	for _, tc := range []struct {
		name, tool, input string
		want              string // the code, or "" for an output
	}{
		{"an answer", "t.echo", `{"id":"a-1"}`, ""},
		{"input refused", "t.echo", `{"id":7}`, "input-validation-failed"},
		{"no secret", "t.secret", `{}`, "precondition-failed"},
		{"no connection", "t.mail", `{}`, "precondition-failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.upCalls.Load()
			doors := map[string]outcome{
				"REST":    rest(r.keyA, tc.tool, tc.input, `{"person":"u1"}`),
				"MCP":     viaMCP(personSDK, tc.tool, tc.input),
				"fast":    fast(person, tc.tool, tc.input),
				"console": console(r.keyA, tc.tool, tc.input, "u1"),
			}
			want := doors["REST"]
			if want.code != tc.want {
				t.Fatalf("REST: %+v, want code %q", want, tc.want)
			}
			for door, got := range doors {
				if got != want {
					t.Errorf("%s: %+v\nREST: %+v", door, got, want)
				}
			}
			sent := int64(0)
			if tc.want == "" {
				sent = 4
			}
			if n := r.upCalls.Load() - before; n != sent {
				t.Errorf("%d upstream requests for 4 calls, want %d", n, sent)
			}
		})
	}

	// The console says an answer is outside data, as MCP's _meta and REST's
	// meta do.
	form := url.Values{"action": {"run"}, "_json": {`{"id":"o-1"}`}}
	req, _ := http.NewRequest("POST", r.http.URL+"/ui/tools/t.echo", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: uiCookie, Value: sessionOf(t, r, r.keyA)})
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `id="outside-data"`) {
			t.Errorf("the console does not say the answer is outside data")
		}
	}

	// A person rule is the service's: a person key acting for another
	// person is refused the same by REST and the console.
	restOut := rest(person, "t.echo", `{"id":"x"}`, `{"person":"u2"}`)
	consoleOut := console(person, "t.echo", `{"id":"x"}`, "u2")
	if restOut.code != "forbidden" || consoleOut != restOut {
		t.Errorf("acting for another person: REST %+v, console %+v", restOut, consoleOut)
	}
	_ = sdk
}
