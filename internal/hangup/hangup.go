// Package hangup catches SIGHUP from the moment the program's packages are
// initialised: its default action ends the process, and an operator (or a
// config reloader) may send one while a service is still starting. A
// program imports it first and takes the signals with C.
//
// Go initialises next, among the packages whose imports are done, the one
// whose import path sorts first: this one waits only for os/signal and
// what it imports (os, syscall, time, sync…) and for a few small packages
// that sort first and are ready sooner; no package of this module runs
// before it (cmd/httptools TestHangupInitsEarly). Before its init returns
// the runtime's default for SIGHUP, exit, applies: no Go code can run
// earlier.
package hangup

import (
	"os"
	"os/signal"
	"syscall"
)

// C receives SIGHUP from the start; a signal that came before anyone reads
// it waits in its one-place buffer (several merge into one).
var C = make(chan os.Signal, 1)

func init() { signal.Notify(C, syscall.SIGHUP) }
