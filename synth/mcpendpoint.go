package synth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// MCP endpoints: where a tool with transport "mcp" lives, in one of the
// definition's three forms.
//
//   - mcp+http://HOST[:PORT]/PATH: the streamable HTTP transport at
//     https://HOST[:PORT]/PATH (plain http only where the runtime allows
//     the host plain HTTP);
//   - mcp+sse://HOST[:PORT]/PATH: the HTTP+SSE transport (protocol
//     2024-11-05) at the same URL;
//   - mcp+stdio://COMMAND [ARG]…[#TOOL]: a command started with those
//     arguments, COMMAND an absolute path, words split at spaces (no
//     shell, no quoting).
//
// The remote tool is named by the endpoint's fragment when it has one
// (mcp+http://h/mcp#search, mcp+stdio:///usr/bin/srv --ro#search), else by the manifest's id without its pack
// prefix (acme.search → search; an id without a dot, whole).

// MCPEndpoint is a parsed mcpEndpoint.
type MCPEndpoint struct {
	// Transport is "http" (streamable HTTP), "sse" or "stdio".
	Transport string
	// URL is the server's, for http and sse: scheme https, which the
	// runtime may lower to http for a host it allows plain HTTP.
	URL *url.URL
	// Command is the command line, for stdio: an absolute path, then the
	// arguments.
	Command []string
	// Tool is the remote tool's name given by the fragment, "" when the
	// endpoint names none.
	Tool string
}

// RemoteTool is the name the tool id is called by on ep's server.
func (ep *MCPEndpoint) RemoteTool(id string) string {
	if ep.Tool != "" {
		return ep.Tool
	}
	if _, rest, ok := strings.Cut(id, "."); ok && rest != "" {
		return rest
	}
	return id
}

// ParseMCPEndpoint parses s, one of the three forms, refusing anything
// ambiguous with what to write instead.
func ParseMCPEndpoint(s string) (*MCPEndpoint, error) {
	if s != strings.TrimSpace(s) || s == "" {
		return nil, errors.New("is empty or has spaces around it")
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil, fmt.Errorf("%q is not a URI: write mcp+http://HOST/PATH, mcp+sse://HOST/PATH or mcp+stdio:///ABSOLUTE/COMMAND", s)
	}
	switch scheme {
	case "mcp+http", "mcp+sse":
		u, err := url.Parse("https://" + rest)
		if err != nil {
			return nil, fmt.Errorf("is not a URL: %v", err)
		}
		switch {
		case u.Host == "" || u.Hostname() == "":
			return nil, fmt.Errorf("names no host: write %s://HOST/PATH", scheme)
		case u.User != nil:
			return nil, errors.New("holds a user or password: credentials go in the tool's authorization (a secretRef or a connection), never in the manifest")
		case strings.ContainsAny(rest, "{} \t\n"):
			return nil, errors.New("holds a placeholder or a space: an endpoint is fixed, not filled from the input")
		}
		if p := u.Port(); p == "0" {
			return nil, errors.New("port 0 is no port")
		}
		ep := &MCPEndpoint{Transport: strings.TrimPrefix(scheme, "mcp+"), URL: u, Tool: u.Fragment}
		u.Fragment, u.RawFragment = "", ""
		if ep.Tool != "" && !mcpToolName(ep.Tool) {
			return nil, fmt.Errorf("names remote tool %q in its fragment, which is no MCP tool name (letters, digits, '_', '-', '.', '/', 1 to 128)", ep.Tool)
		}
		return ep, nil
	case "mcp+stdio":
		if strings.ContainsAny(rest, "\"'`$;|&<>()\\\n\t*?~") {
			return nil, errors.New("holds quoting or a shell character: the command is split at spaces and run without a shell; write the absolute command and plain arguments")
		}
		rest, tool, _ := strings.Cut(rest, "#")
		words := strings.Fields(rest)
		if len(words) == 0 || !strings.HasPrefix(words[0], "/") {
			return nil, errors.New("must start with the command's absolute path (mcp+stdio:///usr/local/bin/server --flag): a command looked up in PATH is whichever the service finds")
		}
		if tool != "" && !mcpToolName(tool) {
			return nil, fmt.Errorf("names remote tool %q in its fragment, which is no MCP tool name (letters, digits, '_', '-', '.', '/', 1 to 128)", tool)
		}
		return &MCPEndpoint{Transport: "stdio", Command: words, Tool: tool}, nil
	case "http", "https":
		return nil, fmt.Errorf("is a %s URL: an MCP endpoint is mcp+http://… (streamable HTTP) or mcp+sse://… (HTTP+SSE)", scheme)
	}
	return nil, fmt.Errorf("scheme %q: want mcp+http, mcp+sse or mcp+stdio", scheme)
}

// mcpToolName says whether s can be an MCP tool's name.
func mcpToolName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' || r == '/') {
			return false
		}
	}
	return true
}
