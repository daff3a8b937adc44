package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/httptools/httptools/auth"
	_ "github.com/httptools/httptools/httpspec" // the "http" kind
	"github.com/httptools/httptools/policy"
	"github.com/httptools/httptools/server"
	"github.com/httptools/httptools/synth"
)

const policyHelp = `usage: httptools policy check --policy FILE --tools DIR [--tenant-policy FILE]

Check a tool policy offline and print what each subject sees of a tools folder: every key role, and every
key id and person the rules name. --policy is the policy all tenants are under (serve --policy); --tenant-policy
one tenant's own (PUT /v1/policy). Deny wins across both. Exit 1 when a policy has a problem (each printed with
its field path), 2 on a usage error.
`

func policyCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" || wantsHelp(args) {
		if wantsHelp(args) {
			fmt.Fprint(stdout, policyHelp)
			return 0
		}
		fmt.Fprint(stderr, policyHelp)
		return 2
	}
	// The shared command type, for its one-line wrong-flag message; the
	// help stays policyHelp, printed above.
	fs := newCommand("policy check", "policy check --policy FILE --tools DIR [--tenant-policy FILE]", "")
	all := fs.String("policy", "", "the policy all tenants are under")
	own := fs.String("tenant-policy", "", "one tenant's policy")
	tools := fs.String("tools", "", "the tools folder")
	if _, rc, ok := fs.parse(args[1:], io.Discard, stderr); !ok {
		return rc
	}
	if *tools == "" || (*all == "" && *own == "") {
		fmt.Fprint(stderr, policyHelp)
		return 2
	}
	policies, rc := readPolicies([]string{*all, *own}, stdout, stderr)
	if rc != 0 {
		return rc
	}
	ts, err := server.LoadTools(*tools, &synth.Loader{}, nil)
	if err != nil {
		fmt.Fprintln(stderr, "httptools policy:", err)
		return 1
	}
	for _, s := range policySubjects(policies) {
		printSightings(stdout, s, ts, policies)
	}
	return 0
}

// readPolicies parses each named policy file (empty names skipped). On a
// problem it prints it and returns nil with the exit code: 2 for an
// unreadable file (usage), 1 for a policy with problems.
func readPolicies(files []string, stdout, stderr io.Writer) ([]*policy.Policy, int) {
	var policies []*policy.Policy
	for _, file := range files {
		if file == "" {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(stderr, "httptools policy:", unwrapPath(err))
			return nil, 2
		}
		p, err := policy.Parse(src)
		if err != nil {
			if pe, ok := err.(*policy.Error); ok {
				for _, pr := range pe.Problems {
					fmt.Fprintf(stdout, "%s: %s\n", file, pr)
				}
				return nil, 1
			}
			fmt.Fprintf(stdout, "%s: %v\n", file, err)
			return nil, 1
		}
		policies = append(policies, p)
	}
	return policies, 0
}

// policySubject is one line of the report: a label and who it stands for.
type policySubject struct {
	name string
	who  policy.Subject
}

// policySubjects lists every key role, then every key id and person the
// rules name, sorted and once each, so the report covers whoever a rule
// could single out.
func policySubjects(policies []*policy.Policy) []policySubject {
	subjects := []policySubject{{"role admin", policy.Subject{Role: auth.RoleAdmin}}, {"role service", policy.Subject{Role: auth.RoleService}}, {"role person", policy.Subject{Role: auth.RolePerson}}}
	var keys, persons []string
	for _, p := range policies {
		for _, r := range p.Rules {
			keys = append(keys, r.Subjects.Keys...)
			persons = append(persons, r.Subjects.Persons...)
		}
	}
	slices.Sort(keys)
	slices.Sort(persons)
	for _, k := range slices.Compact(keys) {
		subjects = append(subjects, policySubject{"key " + k + " (a service key)", policy.Subject{Role: auth.RoleService, Key: k}})
	}
	for _, p := range slices.Compact(persons) {
		subjects = append(subjects, policySubject{"person " + p + " (their own key)", policy.Subject{Role: auth.RolePerson, Person: p}})
	}
	return subjects
}

// printSightings prints how many tools one subject sees, then each tool
// with + (allowed) or - and the rule that denies it.
func printSightings(stdout io.Writer, s policySubject, ts *server.Toolset, policies []*policy.Policy) {
	var lines []string
	seen := 0
	for _, id := range ts.IDs() {
		tool, _ := ts.Tool(id)
		d := policy.Decide(server.ToolFacts(tool), s.who, policies...)
		if d.Allow {
			seen++
			lines = append(lines, fmt.Sprintf("  + %s", id))
		} else {
			lines = append(lines, fmt.Sprintf("  - %s (denied by %s)", id, d.Rule))
		}
	}
	fmt.Fprintf(stdout, "%s: sees %d of %s\n", s.name, seen, plural(len(ts.IDs()), "tool"))
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
}
