package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"strings"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/mcpremote"
	"github.com/httptools/httptools/synth"
)

// secretFlags collects repeated --secret env/name=value flags.
type secretFlags map[string]string

func (s secretFlags) list() {}

func (s secretFlags) String() string { return fmt.Sprintf("%d secrets", len(s)) }

func (s secretFlags) Set(v string) error {
	ref, val, ok := strings.Cut(v, "=")
	env, name, ok2 := strings.Cut(ref, "/")
	if !ok || !ok2 || env == "" || name == "" {
		return errors.New("want env/name=value, e.g. production/GITHUB_TOKEN=ghp_…")
	}
	s[ref] = val
	return nil
}

func call(args []string, stdout, stderr io.Writer) int {
	fs := newCommand("call", "call MANIFEST [--input JSON|@file] [--secret env/name=value]… [--person ID] [--allow-cidr CIDR]… [--dry-run [--format curl|json]]",
		`Run one call of the tool MANIFEST and print its output JSON; on a tool error, print {"error":{…}} on stderr and exit 1.
--dry-run prints the request it would send and sends nothing: secrets (set or not) appear as $HTTPTOOLS_SECRET_… variables,
an OAuth token as $HTTPTOOLS_TOKEN_<CONNECTION>. Loopback, private and metadata addresses are refused unless --allow-cidr opens them.
A remote MCP server (transport mcp) that answers 401 with an OAuth challenge is authorized on the spot: discovery, a client
(the oauth flags' or an app's, a client metadata document, else dynamic registration), the authorization URL followed or
printed, its answer taken on a callback listener on 127.0.0.1; a 403 insufficient_scope is stepped up once.`)
	input := fs.String("input", "{}", "the tool input: JSON, or @file to read it from a file")
	person := fs.String("person", "", "the person the call acts for")
	dryRun := fs.Bool("dry-run", false, "print the request as a curl command line (secrets as $HTTPTOOLS_SECRET_… variables) and send nothing")
	format := fs.String("format", "curl", "with --dry-run: curl, or json (method, url, headers, body, curl)")
	var allow cidrFlags
	fs.Var(&allow, "allow-cidr", "let the call reach this range despite the SSRF guard, e.g. 127.0.0.0/8 for a local upstream (repeatable)")
	var plain stringsFlag
	fs.Var(&plain, "mcp-plain-http", "reach this host's MCP endpoints (transport mcp) over plain http instead of https (repeatable)")
	secrets := secretFlags{}
	fs.Var(secrets, "secret", "a secret as env/name=value (repeatable); HTTPTOOLS_SECRET_<ENV>_<NAME> is read too")
	var oauth oauthFlags
	oauth.register(fs)
	pos, rc, ok := fs.parse(args, stdout, stderr)
	if !ok {
		return rc
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "httptools call: name exactly one manifest")
		return 2
	}
	src, in, err := readCallFiles(pos[0], *input)
	if err != nil {
		fmt.Fprintln(stderr, "httptools call:", err)
		return 2
	}
	reg := &synth.Registry{}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client := fetch.NewClient(fetch.Config{AllowCIDRs: allow, UserAgent: httpspec.UserAgent, Logger: logger})
	reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(client))
	// A remote MCP server that asks for OAuth is authorized here (mcpauth):
	// the authorization URL is followed, or printed for the person.
	flow, closeFlow, err := oauth.authorizer(client, plain, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "httptools call:", err)
		return 2
	}
	defer closeFlow()
	remote := mcpremote.NewSynthesizer(mcpremote.Config{Client: client, PlainHTTP: plain, Logger: logger, Authorizer: flow})
	defer remote.Close()
	reg.MustRegister(synth.KindMCP, remote)
	loader := synth.Loader{Registry: reg}
	tool, err := loader.Load(src)
	if err != nil {
		return printError(stderr, err)
	}
	printNotices(stderr, map[string]*synth.Tool{pos[0]: tool}) // as validate says them
	tc := synth.CallContext{
		Tenant:  "local",
		Person:  *person,
		Secrets: auth.Chain{auth.Map(secrets), auth.Env{}},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var out json.RawMessage
	if *dryRun {
		out, err = tool.DryRun(ctx, tc, in, synth.InvokeOptions{})
	} else {
		var res *synth.Result
		if res, err = tool.Invoke(ctx, tc, in, synth.InvokeOptions{}); err == nil {
			out = res.Output
		}
	}
	if err != nil {
		return printError(stderr, err)
	}
	printCallOutput(stdout, out, *dryRun, *format)
	return 0
}

// readCallFiles reads the manifest and the tool input: the --input value
// itself, or the file it names after an @.
func readCallFiles(manifest, input string) (src, in []byte, err error) {
	if src, err = os.ReadFile(manifest); err != nil {
		return nil, nil, err
	}
	if !strings.HasPrefix(input, "@") {
		return src, []byte(input), nil
	}
	if in, err = os.ReadFile(input[1:]); err != nil {
		return nil, nil, err
	}
	return src, in, nil
}

// printCallOutput prints a call's output indented, or a dry run's curl
// line (unless --format json asks for the whole request).
func printCallOutput(stdout io.Writer, out json.RawMessage, dryRun bool, format string) {
	if dryRun && format != "json" {
		var d struct{ Curl string }
		if json.Unmarshal(out, &d) == nil && d.Curl != "" {
			fmt.Fprintln(stdout, d.Curl)
			return
		}
	}
	var pretty bytes.Buffer
	if dryRun {
		pretty.Write(out) // already indented, headers one per line
	} else if json.Indent(&pretty, out, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(out)
	}
	pretty.WriteByte('\n')
	stdout.Write(pretty.Bytes())
}

// printError writes {"error":{"code","reason","message","details"}} and
// returns exit code 1.
func printError(w io.Writer, err error) int {
	var e *synth.Error
	if !errors.As(err, &e) {
		e = &synth.Error{Code: synth.CodeHandlerError, Message: err.Error()}
	}
	type body struct {
		Code    synth.Code     `json:"code"`
		Reason  string         `json:"reason,omitempty"`
		Message string         `json:"message"`
		Details map[string]any `json:"details,omitempty"`
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(map[string]body{"error": {e.Code, e.Reason, e.Error(), e.Details()}})
	return 1
}

// cidrFlags collects repeated --allow-cidr flags.
type cidrFlags []netip.Prefix

func (c *cidrFlags) String() string { return fmt.Sprint(*c) }

func (c *cidrFlags) list() {} // a comma-separated variable sets several

func (c *cidrFlags) Set(v string) error {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return fmt.Errorf("want a CIDR such as 127.0.0.0/8: %v", err)
	}
	*c = append(*c, p.Masked())
	return nil
}
