package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var snippetBlock = regexp.MustCompile("(?s)<!-- mcp-snippet: (\\w+) -->\\s*```json\\n(.*?)```")

// TestDesktopSnippets: each MCP client snippet of the README, run as the
// client would — its command and arguments, from /, as an unprivileged
// user (nobody, when the test runs as root) whose only writable folder is
// its home — lists and calls the tools.
func TestDesktopSnippets(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := snippetBlock.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) != 3 {
		t.Fatalf("%d snippets in the README, want 3 (claude, cursor, vscode)", len(blocks))
	}
	// Everything the user reads is world-readable; nothing but home is
	// writable to it.
	shared, err := os.MkdirTemp("", "httptools-snippet")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shared)
	os.Chmod(shared, 0o755)
	bin := filepath.Join(shared, "httptools")
	if out, err := exec.Command("cp", binary(t), bin).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	w := newWorld(t)
	tools := filepath.Join(shared, "tools")
	os.Mkdir(tools, 0o755)
	for _, name := range []string{"echo.json", "secret.json"} {
		b, _ := os.ReadFile(filepath.Join(w.tools, name))
		os.WriteFile(filepath.Join(tools, name), b, 0o644)
	}
	policyFile := filepath.Join(shared, "policy.json")
	os.WriteFile(policyFile, []byte(`{"rules": [], "toolsets": {"reads": {"mutating": false}}}`), 0o644)
	home := filepath.Join(shared, "home")
	os.Mkdir(home, 0o700)
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Skip("no user nobody")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		os.Chown(home, uid, gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	for _, b := range blocks {
		name, body := b[1], b[2]
		var doc map[string]map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("%s snippet: %v", name, err)
		}
		servers := doc["mcpServers"]
		if servers == nil {
			servers = doc["servers"]
		}
		s, ok := servers["httptools"]
		if !ok || s.Command != "httptools" {
			t.Fatalf("%s snippet: %+v", name, servers)
		}
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "/absolute/path/to/tools", tools), "/absolute/path/to/policy.json", policyFile)
		}
		args = append(args, "--allow-cidr", "127.0.0.0/8")
		cmd := exec.Command(bin, args...)
		cmd.Dir = "/"
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		list, err := cs.ListTools(ctx, nil)
		if err != nil || len(list.Tools) != 2 {
			t.Fatalf("%s: tools %v %v", name, list, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.echo", Arguments: map[string]any{"id": "5"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: call %+v %v", name, res, err)
		}
		cs.Close()
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "httptools", "httptools.db")); err != nil {
		t.Errorf("the store is not in the state directory: %v", err)
	}
}

// TestREADMEStoresTheSecretBeforeTheInvoke: the README's service example
// runs top to bottom: the GitHub token is stored before the first invoke
// of the tool that sends it (else the invoke is 409 secret-unavailable).
func TestREADMEStoresTheSecretBeforeTheInvoke(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	put := strings.Index(s, "-X PUT localhost:8080/v1/secrets/production/GITHUB_TOKEN")
	invoke := strings.Index(s, "localhost:8080/v1/tools/github.get-issue/invoke")
	if put < 0 || invoke < 0 || put > invoke {
		t.Errorf("the secret is stored at byte %d, the first invoke is at %d: store it first", put, invoke)
	}
}
