package server

import (
	"context"
	"github.com/tidwall/gjson"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP status of a JSON-RPC error the fast path answers. From
// 2026-07-28 (SEP-2575) the SDK's handler answers some error codes with
// an HTTP error status (method not found 404; invalid params, an
// unsupported version, missing capabilities 400) and the rest with 200.
// It exports no such mapping, so the fast path does not copy one: it asks
// an SDK handler built as the HTTP door's (stateless, JSON answers) what
// status it gives each code, once per code (a fast path's error codes are
// few: its own), and answers with that.

// errorStatuses are the statuses the SDK gave each error code asked of it.
var errorStatuses sync.Map // int64 → int

// modernStatus is the HTTP status of a JSON-RPC error of code answered
// under protocol version: 200 before 2026-07-28, the SDK's status of the
// code from it (200 when the SDK could not be asked).
func modernStatus(version string, code int64) int {
	if version < modernVersion {
		return http.StatusOK // before SEP-2575, every answer of a request read whole
	}
	if st, ok := errorStatuses.Load(code); ok {
		return st.(int)
	}
	st := sdkErrorStatus(code)
	errorStatuses.Store(code, st)
	return st
}

// statusProbe is an SDK server whose every tools/call answers the JSON-RPC
// error of the code its arguments name, behind a handler of the HTTP
// door's options.
var statusProbe = sync.OnceValue(func() http.Handler {
	srv := mcp.NewServer(mcpImplementation(), nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if method != "tools/call" || !ok {
				return next(ctx, method, req)
			}
			code, _ := strconv.ParseInt(p.Name, 10, 64)
			return nil, &jsonrpc.Error{Code: code, Message: "probe"}
		}
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
})

// sdkErrorStatus asks statusProbe the status of an error of code answered
// to a 2026-07-28 tools/call.
func sdkErrorStatus(code int64) int {
	name := strconv.FormatInt(code, 10)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","_meta":{"` +
		mcp.MetaKeyProtocolVersion + `":"` + modernVersion + `","` + mcp.MetaKeyClientCapabilities + `":{}}}}`
	req, err := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	if err != nil {
		return http.StatusOK
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", modernVersion)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", name)
	rec := &recorder{header: http.Header{}}
	statusProbe().ServeHTTP(rec, req)
	if rec.status == 0 {
		return http.StatusOK
	}
	// Only an answer that is the error of that code says its status: a
	// refusal of the probe itself (its transport) says nothing of it.
	if got := gjson.GetBytes(rec.body.Bytes(), "error.code"); !got.Exists() || got.Int() != code {
		return http.StatusOK
	}
	return rec.status
}
