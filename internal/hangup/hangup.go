// Package hangup catches SIGHUP from the moment the program's packages are
// initialised: its default action ends the process, and an operator (or a
// config reloader) may send one while a service is still starting. A
// program imports it first and takes the signals with C.
//
// Its import path sorts before most of the module's dependencies, so its
// init runs before theirs (packages without an order between them are
// initialised by import path).
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
