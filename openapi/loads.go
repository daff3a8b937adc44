package openapi

import (
	"cmp"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/httptools/httptools/synth"
)

// loads checks that the manifests an import writes load, as it writes
// them, on as many goroutines as there are processors: the importer goes
// on with the next operations meanwhile. A schema the import's tools
// repeat is compiled once (synth.CheckedSchemas). A manifest that loads is
// handed to Options.Loaded there and then. Its methods are called from the
// importer's goroutine only.
type loads struct {
	jobs chan loadJob
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs map[int]error // by the manifest's index, for the ones that failed
	n    int
	// handed is the first error Options.Loaded returned; after it, no
	// manifest is handed to it.
	handed error
	failed atomic.Bool
}

type loadJob struct {
	i int
	m Manifest
}

// startLoads starts the loaders; loaded may be nil.
func startLoads(l *synth.Loader, loaded func(Manifest) error) *loads {
	ls := &loads{jobs: make(chan loadJob, 64), errs: map[int]error{}}
	seen := synth.NewCheckedSchemas()
	for range runtime.GOMAXPROCS(0) {
		ls.wg.Go(func() {
			for j := range ls.jobs {
				err := l.Check(j.m.JSON, seen)
				if err == nil && loaded != nil && !ls.failed.Load() {
					if herr := loaded(j.m); herr != nil {
						ls.failed.Store(true)
						ls.mu.Lock()
						ls.handed = cmp.Or(ls.handed, herr)
						ls.mu.Unlock()
					}
				}
				if err != nil {
					ls.mu.Lock()
					ls.errs[j.i] = err
					ls.mu.Unlock()
				}
			}
		})
	}
	return ls
}

// add loads the manifest of index i.
func (ls *loads) add(i int, m Manifest) {
	ls.n = max(ls.n, i+1)
	ls.jobs <- loadJob{i, m}
}

// wait waits for every load and returns their errors, by index (nil for a
// manifest that loads), and the first error Options.Loaded returned.
func (ls *loads) wait() ([]error, error) {
	close(ls.jobs)
	ls.wg.Wait()
	errs := make([]error, ls.n)
	for i, err := range ls.errs {
		errs[i] = err
	}
	return errs, ls.handed
}
