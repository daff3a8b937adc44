package main

import (
	"strings"
	"testing"
)

// TestImportSaysWhatToStore (issue 43, class 9 and point 7): import's
// summary names each secret and connection the tools need, once, with
// the command that stores it; --auth-scheme imports the operations whose
// documented security a tool cannot send, warning how many do not offer
// the scheme. Before: 3 of Cloudflare's 9 imported, and nothing said
// which secret to store.
func TestImportSaysWhatToStore(t *testing.T) {
	dir := t.TempDir()
	cf := "../../openapi/testdata/classes/cloudflare-api-email-key.json"
	_, errOut, rc := runCLI(t, "import", "openapi", cf, "--out", dir, "--auth-scheme", "api_token", "--check")
	if rc != 0 || !strings.Contains(errOut, "9 operations: 9 imported, 0 skipped") || !strings.Contains(errOut, "check: 9 tools checked, 0 flagged") ||
		!strings.Contains(errOut, "--auth-scheme api_token: 6 operations do not offer it") {
		t.Fatalf("rc %d:\n%s", rc, errOut)
	}
	want := `needs: secret production/API_TOKEN (9 tools): curl -H "Authorization: Bearer $K" -X PUT localhost:8080/v1/secrets/production/API_TOKEN -d '{"value":"…"}'   (a local call or serve on SQLite: HTTPTOOLS_SECRET_PRODUCTION_API_TOKEN=…)`
	if n := strings.Count(errOut, "needs: "); n != 1 || !strings.Contains(errOut, want+"\n") {
		t.Errorf("%d needs lines, want 1:\n%s", n, errOut)
	}
	_, errOut, rc = runCLI(t, "import", "openapi", cf, "--out", t.TempDir())
	if rc != 0 || !strings.Contains(errOut, "9 operations: 3 imported, 6 skipped") || !strings.Contains(errOut, "--auth-scheme sends it") {
		t.Errorf("without the flag: rc %d:\n%s", rc, errOut)
	}
	_, errOut, rc = runCLI(t, "import", "openapi", cf, "--auth-scheme", "api_tokn")
	if rc != 1 || !strings.Contains(errOut, "--auth-scheme api_tokn is not a security scheme of the document: name one of components.securitySchemes a tool can send: api_email, api_key, api_token, user_service_key") {
		t.Errorf("a misspelt scheme: rc %d:\n%s", rc, errOut)
	}
	_, errOut, _ = runCLI(t, "import", "openapi", "../../openapi/testdata/classes/google-tasks-two-oauth.yaml", "--out", t.TempDir())
	if !strings.Contains(errOut, `needs: connection oauth2 of app googleapis-tasks (4 tools; scopes https://www.googleapis.com/auth/tasks): app "googleapis-tasks" in serve --apps FILE, then curl -H "Authorization: Bearer $K" -X POST localhost:8080/v1/connections/googleapis-tasks/authorize`) {
		t.Errorf("google:\n%s", errOut)
	}
}
