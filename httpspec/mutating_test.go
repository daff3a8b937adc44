package httpspec_test

import (
	"strings"
	"testing"

	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// TestRefusedStatusOfAMutatingTool (issue 45 point 4): a POST the API
// answered 201 while the tool accepts only 200 says the upstream has most
// likely acted, keeping the error's code and reason; a 500 says it may
// have; a read-only tool's error says neither.
func TestRefusedStatusOfAMutatingTool(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		mutating bool
		want     string // in the message; "" for no warning
	}{
		{"created", 201, true, "has most likely acted"},
		{"server error", 500, true, "may have acted"},
		{"read only", 201, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, reply(tc.status, `{"id":"n_1"}`))
			src := `{"id":"t.tool","description":"d","version":"1.0.0","mutating":` + map[bool]string{true: "true", false: "false"}[tc.mutating] +
				`,"input":{"type":"object"},"output":{},"spec":{"kind":"http","method":"POST","urlTemplate":"` + up.URL +
				`/notes","successStatus":{"min":200,"max":200}}}`
			tool, err := loopbackLoader.Load([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			_, e := invoke(t, tool, synth.CallContext{Approved: true}, `{}`)
			if e == nil || e.Code != synth.CodeHandlerError || e.Reason != httpspec.ReasonUpstreamStatus || e.Status != tc.status {
				t.Fatalf("got %+v", e)
			}
			acted := strings.Contains(e.Message, "acted")
			if tc.want != "" && !strings.Contains(e.Message, tc.want) || tc.want == "" && acted {
				t.Errorf("message %q; want %q in it", e.Message, tc.want)
			}
			if n := up.count(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}
