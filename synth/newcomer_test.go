package synth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
)

// Issue 45, points 3 and 8: validate refuses a tool that can never
// succeed, and its advice, followed, passes.

// TestValidateSaysTheWholeTruth: each manifest is refused with an error at
// the path, whose message holds the advice.
func TestValidateSaysTheWholeTruth(t *testing.T) {
	for _, tc := range []struct{ name, patch, path, msg string }{
		{"placeholder the input does not declare", `{"spec": {"urlTemplate": "https://api.acme.test/items/{idd}"}}`,
			"spec.urlTemplate", `every call fails with missing-value: declare "idd" in input.properties and input.required, or fix the placeholder's spelling (did you mean "id"?)`},
		{"closed input without properties", `{"input": {"properties": null, "required": null, "additionalProperties": false}, "spec": {"urlTemplate": "https://api.acme.test/items/{id}"}}`,
			"spec.urlTemplate", "every call fails with missing-value"},
		{"misspelt spec field", `{"spec": {"urlTempate": "https://api.acme.test/items/{id}"}}`,
			"spec.urlTempate", `did you mean "urlTemplate"?`},
		{"misspelt top field", `{"mutatng": true}`, "mutatng", `did you mean "mutating"?`},
		{"misspelt nested field", `{"spec": {"successStatus": {"min": 200, "mx": 299}}}`, "spec.successStatus.mx", `did you mean "max"?`},
		{"range upside down", `{"spec": {"successStatus": {"min": 299, "max": 200}}}`, "spec.successStatus", "swap them (min 200, max 299)"},
		{"max not a status", `{"spec": {"successStatus": {"min": 201, "max": 20}}}`, "spec.successStatus", "set max to 201 for 201 alone, or to 299 for any 2xx from 201"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := synth.Load(patch(t, tc.patch))
			var e *synth.Error
			if !errors.As(err, &e) {
				t.Fatalf("loaded: %v", err)
			}
			for _, p := range e.Problems {
				if p.Severity == synth.SeverityError && p.Path == tc.path && strings.Contains(p.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no error at %q containing %q; got:\n%s", tc.path, tc.msg, list(e.Problems))
		})
	}
}

// TestAdviceFollowedPasses: the ranges the advice names load.
func TestAdviceFollowedPasses(t *testing.T) {
	for _, p := range []string{
		`{"spec": {"successStatus": {"min": 200, "max": 299}}}`,
		`{"spec": {"successStatus": {"min": 201, "max": 201}}}`,
		`{"spec": {"successStatus": {"min": 201, "max": 299}}}`,
	} {
		if _, err := synth.Load(patch(t, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestClosest: a slip is found; a different word is not.
func TestClosest(t *testing.T) {
	known := []string{"urlTemplate", "method", "headers", "max", "min"}
	for name, want := range map[string]string{"urlTempate": "urlTemplate", "URLTEMPLATE": "urlTemplate", "metod": "method", "mx": "max", "colour": "", "x": "", "": ""} {
		if got := synth.Closest(name, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
}
