package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/httptools/httptools/httpspec"

	toolstest "github.com/httptools/httptools/httptest"
	"github.com/httptools/httptools/synth"
)

var exampleBlock = regexp.MustCompile("<!-- example: (\\S+) -->\n```json\n((?s).*?)\n```")

// TestAuthoringGuide keeps docs/authoring.md true: every example block is
// byte for byte the file it names, every example file is shown, every
// example validates without errors and passes its cases, and every error
// reason is explained.
func TestAuthoringGuide(t *testing.T) {
	t.Chdir("../..")
	guide, err := os.ReadFile("docs/authoring.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, m := range exampleBlock.FindAllStringSubmatch(string(guide), -1) {
		file, err := os.ReadFile(m[1])
		if err != nil {
			t.Errorf("the guide shows %s, which does not exist", m[1])
			continue
		}
		if strings.TrimRight(string(file), "\n") != m[2] {
			t.Errorf("the guide's copy of %s differs from the file", m[1])
		}
		shown[m[1]] = true
	}
	files, _ := filepath.Glob("docs/examples/*.json")
	if len(files) < 14 {
		t.Fatalf("only %d example files", len(files))
	}
	for _, f := range files {
		if !shown[f] && !strings.HasSuffix(f, ".cases.json") {
			t.Errorf("%s is not shown in the guide", f)
		}
	}
	out, _, code := runCLI(t, "validate", "docs/examples")
	if code != 0 {
		t.Errorf("validate docs/examples: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.Contains(line, "warning: limits.cpuMs") && !strings.Contains(line, "text-response.json: note: output:") { // the warning and the MCP note the guide explains
			t.Errorf("validate docs/examples: %s", line)
		}
	}
	rep, err := toolstest.Run("docs/examples")
	if err != nil {
		t.Fatal(err)
	}
	if p, f := rep.Counts(); f != 0 || p < 10 {
		t.Errorf("docs/examples cases: %d passed, %d failed", p, f)
	}
	for _, reason := range []string{
		synth.ReasonSecretUnavailable, synth.ReasonConnectionUnavailable, synth.ReasonConnectionNeedsReauth,
		synth.ReasonConnectionPermissionMissing, synth.ReasonApprovalRequired, httpspec.ReasonEgressDenied,
		httpspec.ReasonUpstreamStatus, synth.ReasonResponseNotJSON, httpspec.ReasonResponseNotText, httpspec.ReasonResponseTooLarge,
		synth.ReasonTimeout, synth.ReasonCanceled, httpspec.ReasonInvalidURL, httpspec.ReasonInvalidHeader,
		httpspec.ReasonMissingValue, httpspec.ReasonNotPrimitive, httpspec.ReasonFetchFailed, httpspec.ReasonTooManyRedirects,
		synth.ReasonInputInvalid, synth.ReasonStoreUnavailable, httpspec.ReasonResponseTruncated,
		synth.ReasonConnectionRefreshing, synth.ReasonProviderUnavailable,
		string(synth.CodeInputValidationFailed), string(synth.CodeOutputValidationFailed), string(synth.CodeInvalidSchema),
		string(synth.CodeInvalidToolDefinition),
	} {
		if !strings.Contains(string(guide), "`"+reason+"`") && !strings.Contains(string(guide), "/ `"+reason) {
			t.Errorf("the guide does not explain %s", reason)
		}
	}
}
