//go:build unix

package server

import "syscall"

// fdLimit is the process's soft limit of open descriptors (Go raises it to
// the hard limit at start).
func fdLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<30 {
		return 1 << 16
	}
	return int(l.Cur)
}
