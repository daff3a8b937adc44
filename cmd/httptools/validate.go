package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	_ "github.com/httptools/httptools/httpspec" // the "http" kind
	"github.com/httptools/httptools/server"
	"github.com/httptools/httptools/synth"
)

const validateHelp = `usage: httptools validate PATH…

Check manifests: files, or folders searched for *.json (*.cases.json, the test cases, are skipped). Prints
"file: field.path: message" per error and "file: warning: field.path: message" per warning; exit 1 on any error.
Editors can check and complete manifests from the schema of the format: add "$schema" to a manifest (see the README).
`

func validate(args []string, stdout, stderr io.Writer) int {
	if wantsHelp(args) {
		fmt.Fprint(stdout, validateHelp)
		return 0
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "httptools validate: name at least one manifest or folder")
		return 2
	}
	files, err := manifestFiles(args)
	if err != nil {
		fmt.Fprintln(stderr, "httptools validate:", err)
		return 2
	}
	nerr, nwarn := 0, 0
	for _, f := range files {
		ps, tool, err := checkFile(f)
		if err != nil {
			fmt.Fprintf(stdout, "%s: %v\n", f, err)
			nerr++
			continue
		}
		if tool != nil && server.NewMCPTool(tool).Wrapped {
			fmt.Fprintf(stdout, "%s: note: output: is not an object schema, which MCP requires: MCP clients see the output as {\"result\": <output>} with the schema under properties.result; REST returns it as is\n", f)
		}
		for _, p := range ps {
			fmt.Fprintf(stdout, "%s: %s\n", f, p)
			if p.Severity == synth.SeverityError {
				nerr++
			} else {
				nwarn++
			}
		}
	}
	fmt.Fprintf(stderr, "%d manifests, %d errors, %d warnings\n", len(files), nerr, nwarn)
	if nerr > 0 {
		return 1
	}
	return 0
}

// checkFile loads one manifest and returns its problems, errors first, and
// the tool when it loads.
func checkFile(path string) ([]synth.Problem, *synth.Tool, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	t, err := synth.Load(src)
	if err == nil {
		return t.Warnings(), t, nil
	}
	var e *synth.Error
	if errors.As(err, &e) {
		return e.Problems, nil, nil
	}
	return nil, nil, err
}

// manifestFiles expands folders into the *.json files below them, leaving out
// *.cases.json, sorted.
func manifestFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		found, err := synth.ManifestFiles(a)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}
