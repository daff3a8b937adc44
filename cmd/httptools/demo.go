package main

import (
	"log/slog"

	"github.com/httptools/httptools/demo"
	"github.com/httptools/httptools/httpspec"
)

// withDemo sends the calls of the demo tools (fixtures/tools/demo, whose
// host is demo.Host) to the demo API in memory and every other call to
// next, so that the README's first call succeeds with no network while
// next's SSRF guard stays as strict for every other tool. The demo API is
// one per process, started at its first call.
func withDemo(next httpspec.Sender, log *slog.Logger) httpspec.Sender {
	return demo.Route(next, demo.NewAPI(), log)
}
