package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/connections/sqlstore"
)

func keys(args []string, stdout, stderr io.Writer) int {
	usage := "usage: httptools keys create --tenant T [--role admin|service|person] [--person ID] [--toolset NAME] [--unattended-tools GLOBS] [--db …]\n" +
		"       httptools keys list [--tenant T] [--db …]\n" +
		"       httptools keys revoke ID [--db …]\n\n" +
		"Create (printing the key once), list or revoke the API keys of the store; --db may also be set by HTTPTOOLS_DB."
	if len(args) == 0 || wantsHelp(args[:1]) {
		if len(args) == 0 {
			fmt.Fprintln(stderr, usage)
			return 2
		}
		fmt.Fprintln(stdout, usage)
		return 0
	}
	verb := args[0]
	synopsis := map[string]string{
		"create": "keys create --tenant T [--role admin|service|person] [--person ID] [--toolset NAME] [--unattended-tools GLOBS] [--db …]",
		"list":   "keys list [--tenant T] [--db …]",
		"revoke": "keys revoke ID [--db …]",
	}[verb]
	if synopsis == "" {
		fmt.Fprintf(stderr, "httptools keys: no command %q\n%s\n", verb, usage)
		return 2
	}
	fs := newCommand("keys "+verb, synopsis, "").fromEnv("db")
	tenantHelp := map[string]string{"create": "the tenant of the new key", "list": "list only this tenant's keys", "revoke": "the key's tenant (optional)"}[verb]
	tenant := fs.String("tenant", "", tenantHelp)
	role, person := new(string), new(string)
	*role = auth.RoleAdmin
	if verb == "create" {
		fs.StringVar(role, "role", auth.RoleAdmin, "admin (secrets, keys, company connections), service (a kernel: names the person of each call) or person (one person's own calls and connections)")
		fs.StringVar(person, "person", "", "the person of a person key")
	}
	toolset, unattended := new(string), new(string)
	if verb == "create" {
		fs.StringVar(toolset, "toolset", "", "bind the key to this toolset of the tool policy: it sees and runs those tools only, on every door")
		fs.StringVar(unattended, "unattended-tools", "", "a service key's toolsAllowedUnattended: tool id globs, comma-separated, that its unattended calls run without a person's approval")
	}
	db := fs.String("db", "sqlite:./httptools.db", "the store")
	rest := args[1:]
	id := ""
	if verb == "revoke" && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		id, rest = rest[0], rest[1:]
	}
	pos, rc, ok := fs.parse(rest, stdout, stderr)
	if !ok {
		return rc
	}
	if verb == "revoke" && id == "" && len(pos) > 0 {
		id = pos[0]
	}
	if rc, bad := checkKeysArgs(stderr, verb, usage, *tenant, *role, *person, *unattended, id); bad {
		return rc
	}
	if rc, missing := missingStore(stderr, verb, *db); missing {
		return rc
	}
	ctx := context.Background()
	// Warnings only: the key file's informational line on every keys
	// command is noise (its making is a warning, and shows).
	sq, err := openStore(ctx, *db, sqlstore.Options{}, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(stderr, "httptools keys:", err)
		return 1
	}
	defer sq.Close()
	store := sq // the keys are the store's, beside connections and secrets
	switch verb {
	case "create":
		return keysCreate(ctx, store, stdout, stderr, *tenant, *role, *person, *toolset, *unattended)
	case "list":
		return keysList(ctx, store, stdout, stderr, *tenant)
	}
	return keysRevoke(ctx, store, stdout, stderr, *tenant, id)
}

// checkKeysArgs reports a flag combination the verb cannot run with, in
// one line that says what to add; bad is true when it printed one.
func checkKeysArgs(stderr io.Writer, verb, usage, tenant, role, person, unattended, id string) (rc int, bad bool) {
	switch {
	case verb == "create" && tenant == "":
		fmt.Fprintln(stderr, "httptools keys create: --tenant is required")
		return 2, true
	case verb == "create":
		if err := auth.CheckRole(role, person); err != nil {
			fmt.Fprintln(stderr, "httptools keys create:", err)
			return 2, true
		}
		if unattended != "" && role != auth.RoleService {
			fmt.Fprintln(stderr, "httptools keys create: --unattended-tools is a service key's (a kernel's runs): add --role service")
			return 2, true
		}
	case verb == "revoke" && id == "":
		fmt.Fprintln(stderr, "httptools keys revoke: name the key's id (httptools keys list shows them)")
		return 2, true
	case verb != "list" && verb != "revoke":
		fmt.Fprintln(stderr, usage)
		return 2, true
	}
	return 0, false
}

// missingStore stops list and revoke on a SQLite store that is not there:
// opening it would make an empty one and list no keys, while the keys are
// elsewhere, not gone.
func missingStore(stderr io.Writer, verb, db string) (rc int, missing bool) {
	path, ok := strings.CutPrefix(db, "sqlite:")
	if !ok || verb == "create" {
		return 0, false
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "httptools keys %s: no store at %s (nothing was created): run it in the folder serve ran in, or name the store with --db sqlite:PATH (or HTTPTOOLS_DB)\n", verb, path)
		return 1, true
	}
	return 0, false
}

// keysCreate makes the key, binds its toolset and unattended tools, and
// prints it the one time it is shown.
func keysCreate(ctx context.Context, store *sqlstore.SQLStore, stdout, stderr io.Writer, tenant, role, person, toolset, unattended string) int {
	key, k, err := store.CreateAPIKey(ctx, tenant, role, person)
	if err != nil {
		fmt.Fprintln(stderr, "httptools keys:", err)
		return 1
	}
	if toolset != "" {
		if err := store.BindToolset(ctx, tenant, k.ID, toolset); err != nil {
			fmt.Fprintln(stderr, "httptools keys:", err)
			return 1
		}
		k.Toolset = toolset
	}
	if unattended != "" {
		if err := store.SetUnattendedTools(ctx, tenant, k.ID, strings.Split(unattended, ",")); err != nil {
			fmt.Fprintln(stderr, "httptools keys:", err)
			return 1
		}
	}
	who := ""
	if k.Person != "" {
		who = " for person " + k.Person
	}
	if k.Toolset != "" {
		who += ", toolset " + k.Toolset
	}
	fmt.Fprintf(stdout, "API key %s, role %s%s, tenant %s (shown once; only its hash is stored):\n%s\n", k.ID, k.Role, who, tenant, key)
	return 0
}

// keysList prints the keys as a table, one column per property keys create sets.
func keysList(ctx context.Context, store *sqlstore.SQLStore, stdout, stderr io.Writer, tenant string) int {
	ks, err := store.APIKeys(ctx, tenant)
	if err != nil {
		fmt.Fprintln(stderr, "httptools keys:", err)
		return 1
	}
	// Every property keys create sets is a column: a key's toolset and
	// unattended tools are what it may do, as much as its role.
	const row = "%-22s %-16s %-8s %-16s %-20s %-12s %s\n"
	fmt.Fprintf(stdout, row, "ID", "TENANT", "ROLE", "PERSON", "CREATED", "TOOLSET", "UNATTENDED")
	for _, k := range ks {
		fmt.Fprintf(stdout, row, k.ID, k.Tenant, k.Role, orDash(k.Person), k.Created.UTC().Format(time.RFC3339), orDash(k.Toolset), orDash(strings.Join(k.UnattendedTools, ",")))
	}
	return 0
}

// keysRevoke revokes one key; an unknown id says where the ids are.
func keysRevoke(ctx context.Context, store *sqlstore.SQLStore, stdout, stderr io.Writer, tenant, id string) int {
	if err := store.RevokeAPIKey(ctx, tenant, id); err != nil {
		if errors.Is(err, connections.ErrNotFound) {
			fmt.Fprintf(stderr, "httptools keys revoke: no key %s (httptools keys list shows them)\n", id)
			return 1
		}
		fmt.Fprintln(stderr, "httptools keys:", err)
		return 1
	}
	fmt.Fprintf(stdout, "revoked %s (replicas stop taking it within a minute)\n", id)
	return 0
}

// orDash is s, or "-" for an empty column (so that the next one does not
// seem to move left).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
