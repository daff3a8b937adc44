package policy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/httptools/httptools/policy"
)

var (
	issue  = policy.Tool{ID: "github.get-issue", Tags: []string{"code"}, Effects: []policy.Effect{{"reads", "external:api.github.com"}}, Auth: "bearer", Hosts: []string{"api.github.com"}}
	remove = policy.Tool{ID: "github.delete-repo", Mutating: true, Effects: []policy.Effect{{"deletes", "external:api.github.com"}}, Auth: "bearer", Hosts: []string{"api.github.com"}}
	mail   = policy.Tool{ID: "gmail.send", Mutating: true, Tags: []string{"mail"}, Effects: []policy.Effect{{"sensitive-data-egress", "external:gmail.googleapis.com"}}, Auth: "connection", Hosts: []string{"gmail.googleapis.com"}}
)

func mustParse(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDecide: each selector, deny winning over allow in one policy and
// across two, a default of deny, and the rule that decided named.
func TestDecide(t *testing.T) {
	tenant := mustParse(t, `{"rules": [
	  {"name": "no-deletes", "effect": "deny", "tools": {"effects": [{"kind": "deletes"}]}},
	  {"name": "people-no-mail", "effect": "deny", "tools": {"tags": ["mail"]}, "subjects": {"roles": ["person"]}},
	  {"name": "github-for-all", "effect": "allow", "tools": {"ids": ["github.*"]}},
	  {"name": "u9-no-connections", "effect": "deny", "tools": {"auth": ["connection"]}, "subjects": {"persons": ["u9"]}},
	  {"name": "no-google-writes", "effect": "deny", "tools": {"hosts": ["*.googleapis.com"], "mutating": true}, "subjects": {"keys": ["key_b"]}}
	]}`)
	all := mustParse(t, `{"default": "allow", "rules": [{"name": "egress-admins-only", "effect": "deny", "tools": {"effects": [{"kind": "sensitive-data-egress", "resource": "external:*.googleapis.com"}]}, "subjects": {"roles": ["service", "person"]}}]}`)
	closed := mustParse(t, `{"default": "deny", "rules": [{"name": "reads", "effect": "allow", "tools": {"mutating": false}}]}`)
	admin, service, person := policy.Subject{Role: "admin", Key: "key_a"}, policy.Subject{Role: "service", Key: "key_b"}, policy.Subject{Role: "person", Key: "key_c", Person: "u1"}
	for _, tc := range []struct {
		tool     policy.Tool
		who      policy.Subject
		policies []*policy.Policy
		want     string
	}{
		{issue, admin, []*policy.Policy{tenant}, "allow github-for-all"},
		{remove, admin, []*policy.Policy{tenant}, "deny no-deletes"}, // deny wins over github-for-all
		{mail, person, []*policy.Policy{tenant}, "deny people-no-mail"},
		{mail, admin, []*policy.Policy{tenant}, "allow default"},
		{mail, policy.Subject{Role: "service", Person: "u9"}, []*policy.Policy{tenant}, "deny u9-no-connections"},
		{mail, service, []*policy.Policy{tenant}, "deny no-google-writes"},
		{mail, admin, []*policy.Policy{all, tenant}, "allow default"},
		{mail, policy.Subject{Role: "service", Key: "key_z"}, []*policy.Policy{all, tenant}, "deny egress-admins-only"}, // across policies
		{issue, person, []*policy.Policy{closed}, "allow reads"},
		{mail, admin, []*policy.Policy{closed}, "deny default"},
		{mail, admin, nil, "allow default"},
	} {
		d := policy.Decide(tc.tool, tc.who, tc.policies...)
		got := map[bool]string{true: "allow", false: "deny"}[d.Allow] + " " + d.Rule
		if got != tc.want {
			t.Errorf("%s for %+v: %s, want %s", tc.tool.ID, tc.who, got, tc.want)
		}
	}
}

// TestParseNamesEveryProblem: a bad document is refused with every problem
// and its field path.
func TestParseNamesEveryProblem(t *testing.T) {
	_, err := policy.Parse([]byte(`{"default": "maybe", "rules": [
	  {"name": "a", "effect": "permit", "tools": {"ids": ["[x"], "auth": ["oauth"], "effects": [{"kind": "eats"}]}, "subjects": {"roles": ["root"]}},
	  {"name": "a", "effect": "deny"}]}`))
	var pe *policy.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%v", err)
	}
	var paths []string
	for _, p := range pe.Problems {
		paths = append(paths, p.Path)
	}
	want := "default rules[0].effect rules[0].tools.ids[0] rules[0].tools.auth[0] rules[0].tools.effects[0].kind rules[0].subjects.roles[0] rules[1].name"
	if strings.Join(paths, " ") != want {
		t.Errorf("paths %v\nwant %s", paths, want)
	}
	if _, err := policy.Parse([]byte(`{"rules": [], "colour": 1}`)); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("an unknown member: %v", err)
	}
}

// FuzzParse: any document parses or is refused; never a panic, and a
// parsed one decides.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"default":"deny","rules":[{"effect":"allow","tools":{"ids":["a.*"],"hosts":["*.x"]}}]}`))
	f.Add([]byte(`{"rules":[{"effect":"deny","tools":{"effects":[{"kind":"reads","resource":"external:[a-"}]}}]}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := policy.Parse(src)
		if err != nil {
			return
		}
		policy.Decide(issue, policy.Subject{Role: "person"}, p)
	})
}

func ExampleDecide() {
	p, _ := policy.Parse([]byte(`{"rules": [
	  {"name": "no-deletes", "effect": "deny", "tools": {"effects": [{"kind": "deletes"}]}},
	  {"name": "github", "effect": "allow", "tools": {"ids": ["github.*"]}}]}`))
	for _, id := range []string{"github.get-issue", "github.delete-repo"} {
		tool := policy.Tool{ID: id}
		if id == "github.delete-repo" {
			tool.Effects = []policy.Effect{{Kind: "deletes"}}
		}
		d := policy.Decide(tool, policy.Subject{Role: "service"}, p)
		fmt.Println(id, d.Allow, d.Rule)
	}
	// Output:
	// github.get-issue true github
	// github.delete-repo false no-deletes
}

// TestToolsets: a toolset selects with a rule's selectors; a tenant's own
// definition (given last) redefines a name; a bad name or selector is a
// problem with its path.
func TestToolsets(t *testing.T) {
	all := mustParse(t, `{"rules":[],"toolsets":{"github":{"ids":["github.*"]},"readers":{"mutating":false}}}`)
	own := mustParse(t, `{"rules":[],"toolsets":{"readers":{"tags":["code"]}}}`)
	gh, ok := policy.Toolset("github", all, own)
	if !ok || !gh.Selects(issue) || !gh.Selects(remove) || gh.Selects(mail) {
		t.Errorf("github toolset: %v", ok)
	}
	rd, _ := policy.Toolset("readers", all, own)
	if !rd.Selects(issue) || rd.Selects(mail) {
		t.Error("readers: the tenant's definition does not win")
	}
	if _, ok := policy.Toolset("none", all, own); ok {
		t.Error("an undefined toolset was found")
	}
	_, err := policy.Parse([]byte(`{"rules":[],"toolsets":{"Bad Name":{},"ok":{"auth":["oauth"],"effects":[{"resource":"[x"}]}}}`))
	if err == nil || !strings.Contains(err.Error(), "toolsets.Bad Name") || !strings.Contains(err.Error(), "toolsets.ok.auth[0]") || !strings.Contains(err.Error(), "toolsets.ok.effects[0].resource") {
		t.Errorf("bad toolsets: %v", err)
	}
}
