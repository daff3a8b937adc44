package main

import (
	"bytes"
	"strings"
	"testing"
)

// A go test -json stream: one package passes with a skipped PostgreSQL
// test and a skipped subtest, one test fails.
const stream = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestStore"}
{"Action":"output","Package":"m/a","Test":"TestStore","Output":"=== RUN   TestStore\n"}
{"Action":"output","Package":"m/a","Test":"TestStore","Output":"    pg.go:30: HTTPTOOLS_TEST_POSTGRES is not set: no PostgreSQL to test against (.ci/run sets it)\n"}
{"Action":"output","Package":"m/a","Test":"TestStore","Output":"--- SKIP: TestStore (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestStore"}
{"Action":"run","Package":"m/a","Test":"TestOK"}
{"Action":"output","Package":"m/a","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestOK"}
{"Action":"output","Package":"m/a","Output":"PASS\n"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t0.01s\n"}
{"Action":"pass","Package":"m/a"}
{"Action":"run","Package":"m/b","Test":"TestBroken"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"    b_test.go:9: want 2, got 3\n"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}
{"Action":"fail","Package":"m/b","Test":"TestBroken"}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t0.02s\n"}
{"Action":"fail","Package":"m/b"}
`

func TestSummaryListsSkipsAndFailsRequiredOnes(t *testing.T) {
	var out bytes.Buffer
	skips, err := summarize(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(skips) != 1 || skips[0].test != "TestStore" || !strings.Contains(skips[0].reason, "HTTPTOOLS_TEST_POSTGRES is not set") {
		t.Fatalf("skips %+v", skips)
	}
	got := out.String()
	for _, want := range []string{"ok  \tm/a\t0.01s\n", "want 2, got 3", "--- FAIL: TestBroken", "FAIL\tm/b"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "--- PASS") || strings.Contains(got, "PASS\n") && !strings.Contains(got, "ok ") {
		t.Errorf("passing tests' output shown:\n%s", got)
	}
	var rep bytes.Buffer
	if rc := report(&rep, skips, ""); rc != 0 || !strings.Contains(rep.String(), "1 test skipped, and what would run them:") || !strings.Contains(rep.String(), "TestStore (a)") {
		t.Errorf("rc %d:\n%s", rc, rep.String())
	}
	rep.Reset()
	if rc := report(&rep, skips, "interop,browser"); rc != 0 {
		t.Errorf("suites not skipped: rc %d\n%s", rc, rep.String())
	}
	rep.Reset()
	if rc := report(&rep, skips, "browser,postgres"); rc != 1 || !strings.Contains(rep.String(), "FAIL: the postgres suite is required here and was skipped") {
		t.Errorf("a required suite skipped: rc %d\n%s", rc, rep.String())
	}
	if rc := report(&rep, skips, "bogus"); rc != 2 {
		t.Errorf("unknown suite: rc %d", rc)
	}
}
