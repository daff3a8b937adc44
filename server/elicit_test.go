package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConnectFromInsideTheClient: a call that needs the person's missing
// connection, from a client that declared URL elicitation, is answered with
// URLElicitationRequiredError holding the connect flow's URL; once the
// person completed it, the retried call works. A client without the
// capability gets the error result it got before. This is the flow of
// clients before 2026-07-28 (TestConnectByMultiRoundTrip: from it).
func TestConnectFromInsideTheClient(t *testing.T) {
	r := newRig(t)
	r.provider.Scope = "mail.send"
	ctx := context.Background()
	withURL := mcp.NewClient(&mcp.Implementation{Name: "elicit", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
	})
	cs, err := withURL.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: keyTransport{key: r.keyA, person: "u1"}}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.mail", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("got %v, want URLElicitationRequired", err)
	}
	var data struct{ Elicitations []mcp.ElicitParams }
	json.Unmarshal(rpcErr.Data, &data)
	if len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" || !strings.HasPrefix(data.Elicitations[0].URL, r.provider.AuthURL()) || data.Elicitations[0].ElicitationID == "" {
		t.Fatalf("elicitations %+v", data.Elicitations)
	}
	// The person opens the URL: the provider approves and sends the browser
	// to the service's callback.
	resp, err := http.Get(data.Elicitations[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "Connected") {
		t.Fatalf("callback: %s", page)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.mail", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("the retried call: %+v %v", res, err)
	}
	// Without the capability: today's error, as a result.
	plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: keyTransport{key: r.keyA, person: "u2"}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	res, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "t.mail", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "connection-unavailable") {
		t.Fatalf("a client without URL elicitation: %+v %v", res, err)
	}
}
