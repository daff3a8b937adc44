package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmePathNoteComesFirst (issue 45 point 10): the README says how to
// put go install's folder on PATH before its first bare httptools command,
// in the first section, and again right after go install.
func TestReadmePathNoteComesFirst(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	const note = `export PATH="$(go env GOPATH)/bin:$PATH"`
	first := strings.Index(text, note)
	bare := firstBareCommand(text)
	section := strings.Index(text, "\n## ")
	second := strings.Index(text[section+1:], "\n## ") + section + 1
	if first < 0 || bare < 0 || first > bare || first > second {
		t.Errorf("the PATH note is at byte %d; the first bare httptools command at %d, the second section at %d", first, bare, second)
	}
	install := strings.Index(text, "go install ./cmd/httptools          #")
	if install < 0 || !strings.HasPrefix(text[strings.Index(text[install:], "\n")+install+1:], note) {
		t.Errorf("the line after go install in the Install section is not %s", note)
	}
}

// firstBareCommand is the byte offset of the first line of a code block
// that runs httptools from PATH, or -1.
func firstBareCommand(text string) int {
	in, at := false, 0
	for _, line := range strings.SplitAfter(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			in = !in
		case in && strings.HasPrefix(line, "httptools "):
			return at
		}
		at += len(line)
	}
	return -1
}
