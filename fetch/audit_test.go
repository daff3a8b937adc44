package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/httptools/httptools/internal/jsonlog"
	"github.com/httptools/httptools/internal/preformat"
)

// The service's log handler is written to from a slice (attrsWriter):
// the build fails if its method's shape drifts from what audit asks.
var _ attrsWriter = (*jsonlog.Handler)(nil)

type answer200 struct{}

func (answer200) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
		Header: http.Header{}, ContentLength: 2, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

// TestAuditRecordsPastTheCache: the audit record's preformatted attributes
// belong to each call's own tool, method, host and decision, past the
// bound of kept sets (which starts again instead of growing), and for a
// denial after an allowed call of the same tool.
func TestAuditRecordsPastTheCache(t *testing.T) {
	var logs bytes.Buffer
	c := NewClient(Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		WrapTransport: func(http.RoundTripper) http.RoundTripper { return answer200{} }})
	n := preformat.Max + 50
	for i := range n {
		req := &Request{Method: "GET", URL: fmt.Sprintf("http://h%d.example/x", i), Tool: fmt.Sprintf("t.%d", i), Tenant: "acme", SuccessMin: 200, SuccessMax: 299}
		if _, err := c.Do(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if k := c.audits.Len(); k > preformat.Max {
		t.Errorf("%d attribute sets kept, over the bound %d", k, preformat.Max)
	}
	// The last tool again, refused by its allowlist: decision denied, not
	// the allowed set its earlier call left.
	last := n - 1
	if _, err := c.Do(context.Background(), &Request{Method: "GET", URL: fmt.Sprintf("http://h%d.example/x", last), Tool: fmt.Sprintf("t.%d", last), Tenant: "acme",
		Restricted: true, Allowlist: []string{"other.example"}, SuccessMin: 200, SuccessMax: 299}); err == nil {
		t.Fatal("the allowlist let the call through")
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != n+1 {
		t.Fatalf("%d records, want %d", len(lines), n+1)
	}
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		tool, host, decision := fmt.Sprintf("t.%d", i), fmt.Sprintf("h%d.example", i), "allowed"
		if i == n {
			tool, host, decision = fmt.Sprintf("t.%d", n-1), fmt.Sprintf("h%d.example", n-1), "denied"
		}
		if rec["tool"] != tool || rec["host"] != host || rec["method"] != "GET" || rec["decision"] != decision || rec["tenant"] != "acme" {
			t.Fatalf("record %d: %v, want tool %s, host %s, decision %s", i, rec, tool, host, decision)
		}
	}
}
