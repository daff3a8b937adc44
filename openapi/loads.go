package openapi

import (
	"cmp"
	"runtime"
	"sync"

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
	// handed is the first error Options.Loaded returned; after it, no
	// manifest is handed to it.
	handed error
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
				if err := l.Check(j.m.JSON, seen); err != nil {
					ls.mu.Lock()
					ls.errs[j.i] = err
					ls.mu.Unlock()
				} else if loaded != nil {
					ls.hand(loaded, j.m)
				}
			}
		})
	}
	return ls
}

// hand gives m to loaded unless an earlier hand failed.
func (ls *loads) hand(loaded func(Manifest) error, m Manifest) {
	ls.mu.Lock()
	failed := ls.handed != nil
	ls.mu.Unlock()
	if failed {
		return
	}
	if err := loaded(m); err != nil {
		ls.mu.Lock()
		ls.handed = cmp.Or(ls.handed, err)
		ls.mu.Unlock()
	}
}

// add loads the manifest of index i.
func (ls *loads) add(i int, m Manifest) {
	ls.jobs <- loadJob{i, m}
}

// wait waits for every load and returns the errors of the manifests that
// do not load, by index, and the first error Options.Loaded returned.
func (ls *loads) wait() (map[int]error, error) {
	close(ls.jobs)
	ls.wg.Wait()
	return ls.errs, ls.handed
}
