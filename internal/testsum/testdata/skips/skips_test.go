// Package skips is a package whose one test skips as a suite does when
// its part of the machine is missing: what the README's test command must
// name (readme_test.go runs it).
package skips

import "testing"

func TestNeedsAMachinePart(t *testing.T) {
	t.Skip("HTTPTOOLS_TEST_POSTGRES is not set: no PostgreSQL to test against")
}

func TestRuns(t *testing.T) {}
