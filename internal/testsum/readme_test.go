package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeTestCommandSaysWhatItSkipped (issue 45 point 2): the README's
// first test command is the one that lists what it skipped, and, run on a
// package with one skipping test, it names that test and the reason.
func TestReadmeTestCommandSaysWhatItSkipped(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(src), "Run every test")
	block := regexp.MustCompile("(?s)```sh\n(.*?)\n```").FindStringSubmatch(after)
	if !ok || block == nil {
		t.Fatal(`the README has no "Run every test" section with a sh block`)
	}
	command := strings.TrimSpace(block[1])
	if command != "bash scripts/test.sh" {
		t.Fatalf("the README's test command is %q; want bash scripts/test.sh, which lists what it skipped", command)
	}
	if testing.Short() {
		t.Skip("-short: the command is not run")
	}
	cmd := exec.Command("bash", "scripts/test.sh", "./internal/testsum/testdata/skips")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(string(out), "TestNeedsAMachinePart (skips)"); n != 1 || !strings.Contains(string(out), "1 test skipped, and what would run them:") ||
		!strings.Contains(string(out), "HTTPTOOLS_TEST_POSTGRES is not set") {
		t.Errorf("the skipped test named %d times; output:\n%s", n, out)
	}
}
