package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Issue 45, points 6 and 7: a wrong flag is one line that says what to
// type, and every help text and README command line agrees with the
// flags the command defines.

// commands are every command that takes flags, as typed.
var commands = [][]string{
	{"validate"}, {"call"}, {"test"}, {"import", "openapi"}, {"import", "mcp"}, {"serve"}, {"mcp"},
	{"keys", "create"}, {"keys", "list"}, {"keys", "revoke"}, {"policy", "check"},
}

// TestWrongFlagIsOneLine: on every command a flag it does not take is one
// line on stderr, spelt with two dashes, pointing at --help, exit 2; a
// near miss names the flag meant.
func TestWrongFlagIsOneLine(t *testing.T) {
	for _, cmd := range commands {
		args := append(slices.Clone(cmd), "--bogus-flag")
		out, errOut, code := runCLI(t, args...)
		name := strings.Join(cmd, " ")
		want := "httptools " + name + ": unknown flag --bogus-flag (httptools " + name + " --help lists every flag)\n"
		if code != 2 || out != "" || errOut != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", args, code, out, errOut, want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--tool", "fixtures/tools"}, "httptools serve: unknown flag --tool; did you mean --tools? (httptools serve --help lists every flag)\n"},
		{[]string{"mcp", "-tool", "x"}, "httptools mcp: unknown flag --tool; did you mean --tools? (httptools mcp --help lists every flag)\n"},
		{[]string{"keys", "create", "--tennant", "acme"}, "httptools keys create: unknown flag --tennant; did you mean --tenant? (httptools keys create --help lists every flag)\n"},
		{[]string{"serve", "--tools"}, "httptools serve: flag --tools needs a value (--tools VALUE or --tools=VALUE) (httptools serve --help lists every flag)\n"},
		{[]string{"call", "x.json", "--dry-run=maybe"}, `httptools call: invalid boolean value "maybe" for --dry-run: parse error (httptools call --help lists every flag)` + "\n"},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != 2 || out != "" || errOut != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

var flagName = regexp.MustCompile(`--([a-z][-a-z0-9]*)`)

// flagsOf runs CMD --help and returns its usage line and the flags its
// list defines.
func flagsOf(t *testing.T, cmd []string) (usage string, flags map[string]bool) {
	t.Helper()
	out, _, code := runCLI(t, append(slices.Clone(cmd), "--help")...)
	if code != 0 {
		t.Fatalf("%v --help: exit %d", cmd, code)
	}
	usage, _, _ = strings.Cut(out, "\n")
	flags = map[string]bool{"help": true}
	for _, line := range strings.Split(out, "\n") {
		if m := regexp.MustCompile(`^  --([a-z][-a-z0-9]*)`).FindStringSubmatch(line); m != nil {
			flags[m[1]] = true
		}
	}
	if cmd[0] == "policy" { // its help is its own text: the usage line names its three flags
		for _, m := range flagName.FindAllStringSubmatch(usage, -1) {
			flags[m[1]] = true
		}
	}
	return usage, flags
}

// TestHelpNamesEveryFlag: a command's usage line names each of its flags
// (or ends "[flags]", leaving the rest to the list), and names no flag
// the command lacks.
func TestHelpNamesEveryFlag(t *testing.T) {
	for _, cmd := range commands {
		usage, flags := flagsOf(t, cmd)
		named := map[string]bool{}
		for _, m := range flagName.FindAllStringSubmatch(usage, -1) {
			named[m[1]] = true
			if !flags[m[1]] {
				t.Errorf("%v: the usage line names --%s, which the command does not take: %s", cmd, m[1], usage)
			}
		}
		if strings.HasSuffix(usage, "[flags]") {
			continue
		}
		for f := range flags {
			if f != "help" && !named[f] {
				t.Errorf("%v: the usage line omits --%s: %s", cmd, f, usage)
			}
		}
	}
}

// TestTopLevelHelpAgrees: each command's entry in httptools --help names
// only flags the command takes, and every flag its own usage line names.
func TestTopLevelHelpAgrees(t *testing.T) {
	top, _, _ := runCLI(t, "--help")
	entries := map[string]string{} // "keys create" → its lines
	key := ""
	for _, line := range strings.Split(top, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "httptools "); ok {
			w := strings.Fields(rest)
			key = w[0]
			if len(w) > 1 && (w[0] == "keys" || w[0] == "import" || w[0] == "policy") {
				key += " " + w[1]
			}
		} else if strings.TrimSpace(line) == "" || !strings.HasPrefix(line, "        ") {
			if !strings.HasPrefix(line, "      ") {
				key = ""
			}
			continue // a description: it may mention other commands' flags
		}
		if key != "" {
			entries[key] += " " + line
		}
	}
	for _, cmd := range commands {
		name := strings.Join(cmd, " ")
		entry, ok := entries[name]
		if !ok {
			t.Errorf("httptools --help has no entry for %s", name)
			continue
		}
		usage, flags := flagsOf(t, cmd)
		for _, m := range flagName.FindAllStringSubmatch(entry, -1) {
			if !flags[m[1]] {
				t.Errorf("httptools --help: %s names --%s, which it does not take", name, m[1])
			}
		}
		for _, m := range flagName.FindAllStringSubmatch(usage, -1) {
			if !namesFlag(entry, m[1]) {
				t.Errorf("httptools --help: %s omits --%s, which its own usage line names", name, m[1])
			}
		}
	}
}

// TestReadmeCommandsUseRealFlags: every httptools command line in the
// README (code blocks and inline code) uses flags its command takes.
func TestReadmeCommandsUseRealFlags(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]map[string]bool{}
	usages := map[string]string{}
	for _, cmd := range commands {
		name := strings.Join(cmd, " ")
		usages[name], known[name] = flagsOf(t, cmd)
	}
	text := strings.ReplaceAll(string(src), "\\\n", " ") // continuation lines join their command
	invocation := regexp.MustCompile("(?:^|[\\s`(])(?:httptools|go run \\./cmd/httptools)\\s+([a-z]+)(?:\\s+([a-z]+))?([^`\\n|#]*)")
	checked := 0
	for _, m := range invocation.FindAllStringSubmatch(text, -1) {
		name, rest := m[1], m[3]
		if m[2] != "" && (name == "keys" || name == "import" || name == "policy") {
			name += " " + m[2]
		} else if m[2] != "" {
			rest = m[2] + rest
		}
		flags, ok := known[name]
		if !ok {
			continue // a command without flags, or prose ("httptools turns…")
		}
		checked++
		for _, f := range flagName.FindAllStringSubmatch(rest, -1) {
			if !flags[f[1]] {
				t.Errorf("README: httptools %s%s: --%s is not a flag of %s", name, rest, f[1], name)
			}
		}
	}
	// A synopsis in the README's prose names every flag the command's
	// usage line names.
	span := regexp.MustCompile("`(?:httptools )?([a-z]+(?: [a-z]+)?) ([^`]*\\[--[^`]*)`")
	for _, m := range span.FindAllStringSubmatch(strings.ReplaceAll(string(src), "\n", " "), -1) {
		usage, ok := usages[m[1]]
		if !ok {
			continue
		}
		checked++
		for _, f := range flagName.FindAllStringSubmatch(usage, -1) {
			if !namesFlag(m[2], f[1]) {
				t.Errorf("README: the synopsis `%s %s` omits --%s", m[1], m[2], f[1])
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d README command lines; the pattern no longer finds them", checked)
	}
}

// TestKeysListShowsToolset: what keys create sets, keys list shows: the
// person, toolset and unattended tools of a key, "-" where there are none.
func TestKeysListShowsToolset(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "keys.db")
	if out, errOut, code := runCLI(t, "keys", "create", "--tenant", "acme", "--role", "service", "--toolset", "reads", "--unattended-tools", "acme.*,b.get", "--db", db); code != 0 {
		t.Fatalf("create: exit %d, %s %s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "keys", "create", "--tenant", "acme", "--db", db); code != 0 {
		t.Fatalf("create: exit %d, %s %s", code, out, errOut)
	}
	out, _, code := runCLI(t, "keys", "list", "--db", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], "TOOLSET") {
		t.Fatalf("list: exit %d, %s", code, out)
	}
	withSet, without := 0, 0
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		switch {
		case len(f) == 7 && f[5] == "reads" && f[6] == "acme.*,b.get":
			withSet++
		case len(f) == 7 && f[3] == "-" && f[5] == "-" && f[6] == "-":
			without++
		}
	}
	if withSet != 1 || without != 1 {
		t.Errorf("%d keys with the toolset, %d without; want 1 and 1:\n%s", withSet, without, out)
	}
}
