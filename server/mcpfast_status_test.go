package server

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestModernStatusIsTheSDKs: the status the fast path gives an error is
// the one the SDK's handler gave the same code (SEP-2575's, from
// 2026-07-28), and 200 before that version.
func TestModernStatusIsTheSDKs(t *testing.T) {
	for _, c := range []struct {
		code int64
		want int
	}{
		{jsonrpc.CodeMethodNotFound, http.StatusNotFound},
		{jsonrpc.CodeInvalidParams, http.StatusBadRequest},
		{mcp.CodeUnsupportedProtocolVersion, http.StatusBadRequest},
		{mcp.CodeMissingRequiredClientCapabilities, http.StatusBadRequest},
		{jsonrpc.CodeInternalError, http.StatusOK},
		{mcp.CodeURLElicitationRequired, http.StatusOK},
	} {
		if got := modernStatus(modernVersion, c.code); got != c.want {
			t.Errorf("code %d: status %d, want %d", c.code, got, c.want)
		}
		if got := modernStatus("2025-11-25", c.code); got != http.StatusOK {
			t.Errorf("code %d before %s: status %d, want 200", c.code, modernVersion, got)
		}
	}
}
