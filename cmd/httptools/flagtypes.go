package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// sizeFlag is a byte count written as 536870912, 512MiB or 2GB
// (go-humanize's ParseBytes).
type sizeFlag int64

func (s *sizeFlag) String() string { return humanize.IBytes(uint64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := humanize.ParseBytes(v)
	if err != nil || n == 0 || n > 1<<62 {
		return fmt.Errorf("want a size such as 512MiB or 2GiB, got %q", v)
	}
	*s = sizeFlag(n)
	return nil
}

// tenantLimitFlags collects --tenant-limit TENANT=N.
type tenantLimitFlags struct{ m map[string]int }

func (t *tenantLimitFlags) list() {}

func (t *tenantLimitFlags) String() string { return fmt.Sprint(t.m) }

func (t *tenantLimitFlags) Set(v string) error {
	name, n, ok := strings.Cut(v, "=")
	limit, err := strconv.Atoi(n)
	if !ok || name == "" || err != nil {
		return fmt.Errorf("want TENANT=N such as acme=500, got %q", v)
	}
	if t.m == nil {
		t.m = map[string]int{}
	}
	t.m[name] = limit
	return nil
}

// stringsFlag is a repeatable flag of strings.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, ",") }

func (s *stringsFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// namedInts collects a repeatable NAME=N flag; what names NAME in errors.
type namedInts struct {
	what string
	m    map[string]int
}

func (t *namedInts) String() string { return fmt.Sprint(t.m) }

func (t *namedInts) Set(v string) error {
	name, n, ok := strings.Cut(v, "=")
	i, err := strconv.Atoi(n)
	if !ok || name == "" || err != nil {
		return fmt.Errorf("want %s=N such as %s=20000, got %q", t.what, strings.ToLower(t.what), v)
	}
	if t.m == nil {
		t.m = map[string]int{}
	}
	t.m[name] = i
	return nil
}
