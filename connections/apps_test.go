package connections

import (
	"errors"
	"strings"
	"testing"

	"github.com/httptools/httptools/synth"
)

func TestParseAppsReportsEveryProblem(t *testing.T) {
	_, err := ParseApps([]byte(`{"apps":{
		"github":{"authURL":"https://github.com/login/oauth/authorize","tokenURL":"ftp://x","clientID":"","clientSecretEnv":"GH","authStyle":"auto","permissions":{}},
		"google":{"authURL":"https://accounts.google.com/o/oauth2/v2/auth","tokenURL":"https://oauth2.googleapis.com/token","clientID":"c","clientSecretEnv":"G","authStyle":"header","permissions":{"gmail.send":[]}},
		"slack":{"authURL":"https://slack.com/oauth/v2/authorize","tokenURL":"https://slack.com/api/oauth.v2.access","clientID":"c","clientSecretEnv":"S","authStyle":"params","permissions":{"chat.write":["chat:write"]},"colour":"red"}}}`),
		func(string) string { return "x" })
	var e *synth.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	want := map[string]string{
		"apps.github.tokenURL":                    "http(s) URL",
		"apps.github.clientID":                    "is required",
		"apps.github.authStyle":                   `"params" or "header"`,
		"apps.github.permissions":                 "is required",
		"apps.google.permissions[\"gmail.send\"]": "at least one scope",
		"apps.slack":                              "unknown field",
	}
	got := map[string]string{}
	for _, p := range e.Problems {
		got[p.Path] = p.Message
	}
	for path, frag := range want {
		if !strings.Contains(got[path], frag) {
			t.Errorf("%s: got %q, want it to say %q (all: %v)", path, got[path], frag, got)
		}
	}
}

func TestAppsCheckManifest(t *testing.T) {
	apps, err := ParseApps([]byte(`{"apps":{"google":{"authURL":"https://a.test/auth","tokenURL":"https://a.test/token","clientID":"c","clientSecretEnv":"G","authStyle":"params",
		"permissions":{"gmail.send":["s1"],"gmail.read":["s2"]}}}}`), func(string) string { return "x" })
	if err != nil {
		t.Fatal(err)
	}
	m := &synth.Manifest{NeedsSpec: &synth.NeedsSpec{Connections: map[string]synth.ConnectionNeed{
		"mail":  {App: "google", Permissions: []string{"gmail.send", "gmail.delete"}, As: "person"},
		"issue": {App: "github", Permissions: []string{"repo"}, As: "company"},
	}}}
	ps := apps.CheckManifest(m)
	if len(ps) != 2 || ps[0].Path != "needsSpec.connections.issue.app" || ps[1].Path != "needsSpec.connections.mail.permissions[1]" ||
		!strings.Contains(ps[1].Message, `no permission "gmail.delete"`) {
		t.Errorf("problems %v", ps)
	}
	if got := apps["google"].grantedPermissions([]string{"s1"}); strings.Join(got, ",") != "gmail.send" {
		t.Errorf("granted %v", got)
	}
}

// FuzzParseApps: any apps document parses or fails with an error.
func FuzzParseApps(f *testing.F) {
	f.Add([]byte(`{"apps":{"github":{"authURL":"https://github.com/login/oauth/authorize","tokenURL":"https://github.com/login/oauth/access_token","clientID":"Iv1.0123","clientSecretEnv":"GITHUB_CLIENT_SECRET","authStyle":"params","authParams":{"prompt":"consent"},"permissions":{"issues.write":["repo"]}}}}`))
	f.Add([]byte(`{"apps":{}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		apps, err := ParseApps(src, func(string) string { return "x" })
		if err == nil {
			for _, a := range apps {
				if a.AuthStyle != "params" && a.AuthStyle != "header" {
					t.Fatalf("accepted auth style %q", a.AuthStyle)
				}
			}
		}
	})
}
