package connections

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/httptools/httptools/synth"
	"golang.org/x/oauth2"
)

// App is one OAuth provider entry of apps.json.
type App struct {
	ID              string              `json:"-"`
	AuthURL         string              `json:"authURL"`
	TokenURL        string              `json:"tokenURL"`
	ClientID        string              `json:"clientID"`
	ClientSecretEnv string              `json:"clientSecretEnv"`
	AuthStyle       string              `json:"authStyle"` // "params" or "header", never guessed
	AuthParams      map[string]string   `json:"authParams,omitempty"`
	Permissions     map[string][]string `json:"permissions"` // permission key → the provider's scopes

	clientSecret string
}

// Apps are the configured apps by id.
type Apps map[string]*App

// LoadApps reads and checks an apps.json file. Client secrets are read from
// the environment variables the file names.
func LoadApps(path string) (Apps, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseApps(src, os.Getenv)
}

// ParseApps checks an apps.json document, reporting every problem at once
// with its field path (as a *synth.Error of code invalid-tool-definition).
func ParseApps(src []byte, getenv func(string) string) (Apps, error) {
	var doc struct {
		Apps map[string]json.RawMessage `json:"apps"`
	}
	if ps := synth.CheckJSON(src); ps != nil {
		return nil, appsError(ps)
	}
	var ps synth.Problems
	dec := json.NewDecoder(strings.NewReader(string(src)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, appsError([]synth.Problem{{Path: "", Message: "is not a valid apps document: " + err.Error()}})
	}
	if doc.Apps == nil {
		ps.Error("apps", "is required: an object of app id → app")
	}
	out := Apps{}
	for _, id := range slices.Sorted(maps.Keys(doc.Apps)) {
		base := synth.JoinPath("apps", id)
		a := &App{ID: id}
		d := json.NewDecoder(strings.NewReader(string(doc.Apps[id])))
		d.DisallowUnknownFields()
		if err := d.Decode(a); err != nil {
			ps.Error(base, "is not a valid app: "+err.Error())
			continue
		}
		for field, v := range map[string]string{"authURL": a.AuthURL, "tokenURL": a.TokenURL} {
			if u, err := url.Parse(v); v == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				ps.Error(base+"."+field, "must be an http(s) URL")
			}
		}
		if a.ClientID == "" {
			ps.Error(base+".clientID", "is required")
		}
		if a.ClientSecretEnv == "" {
			ps.Error(base+".clientSecretEnv", "is required: the name of the environment variable that holds the client secret")
		} else if a.clientSecret = getenv(a.ClientSecretEnv); a.clientSecret == "" {
			ps.Warn(base+".clientSecretEnv", fmt.Sprintf("%s is not set: token requests will send no client secret", a.ClientSecretEnv))
		}
		if a.AuthStyle != "params" && a.AuthStyle != "header" {
			ps.Error(base+".authStyle", fmt.Sprintf(`must be "params" or "header" (how the client authenticates at the token endpoint); got %q`, a.AuthStyle))
		}
		if len(a.Permissions) == 0 {
			ps.Error(base+".permissions", "is required: map each permission key a tool may declare to the provider's scopes")
		}
		for k, scopes := range a.Permissions {
			if k == "" || len(scopes) == 0 {
				ps.Error(synth.JoinPath(base+".permissions", k), "must map a permission key to at least one scope")
			}
		}
		out[id] = a
	}
	if ps.HasErrors() {
		return nil, appsError(ps.List())
	}
	return out, nil
}

func appsError(ps []synth.Problem) error {
	msgs := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Severity == synth.SeverityError {
			msgs = append(msgs, p.String())
		}
	}
	return &synth.Error{Code: synth.CodeInvalidToolDefinition, Problems: ps, Message: "invalid apps.json: " + strings.Join(msgs, "; ")}
}

// CheckManifest reports the manifest's connection needs that name an app
// apps.json lacks, or a permission key the app does not define.
func (as Apps) CheckManifest(m *synth.Manifest) []synth.Problem {
	if m.NeedsSpec == nil {
		return nil
	}
	var ps synth.Problems
	for _, name := range slices.Sorted(maps.Keys(m.NeedsSpec.Connections)) {
		need := m.NeedsSpec.Connections[name]
		path := synth.JoinPath("needsSpec.connections", name)
		if IsDiscovered(need.App) {
			if u, err := url.Parse(strings.TrimPrefix(need.App, DiscoveredPrefix)); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				ps.Error(path+".app", fmt.Sprintf("app %q: a discovered app is %s and the remote MCP server's URL, such as mcp:https://mcp.example.com/mcp", need.App, DiscoveredPrefix))
			}
			continue // its permissions are the scopes its server names
		}
		app, ok := as[need.App]
		if !ok {
			ps.Error(path+".app", fmt.Sprintf("app %q is not configured in apps.json (configured: %s)", need.App, strings.Join(slices.Sorted(maps.Keys(as)), ", ")))
			continue
		}
		for i, p := range need.Permissions {
			if _, ok := app.Permissions[p]; !ok {
				ps.Error(synth.JoinPath(path+".permissions", i), fmt.Sprintf("app %q defines no permission %q (defined: %s)", need.App, p, strings.Join(slices.Sorted(maps.Keys(app.Permissions)), ", ")))
			}
		}
	}
	return ps.List()
}

// scopes returns the provider scopes of the given permission keys, in order,
// de-duplicated; all of the app's when keys is nil.
func (a *App) scopes(keys []string) []string {
	if keys == nil {
		keys = slices.Sorted(maps.Keys(a.Permissions))
	}
	var out []string
	for _, k := range keys {
		for _, s := range a.Permissions[k] {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// grantedPermissions maps granted scopes back to permission keys: a key is
// granted when all of its scopes are.
func (a *App) grantedPermissions(scopes []string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a.Permissions)) {
		all := true
		for _, s := range a.Permissions[k] {
			all = all && slices.Contains(scopes, s)
		}
		if all {
			out = append(out, k)
		}
	}
	return out
}

// oauthConfig is the x/oauth2 configuration of the app.
func (a *App) oauthConfig(redirectURL string, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if a.AuthStyle == "header" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{
		ClientID:     a.ClientID,
		ClientSecret: a.clientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: a.AuthURL, TokenURL: a.TokenURL, AuthStyle: style},
		RedirectURL:  redirectURL,
		Scopes:       scopes,
	}
}
