package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/budget"
)

// Kept answers: the whole of each answer cut to a model's budget
// (resultbudget.go), held by the replica that cut it on its memory budget
// and, with a ResultStore, in the store for the others.

// The answers kept for later, in this process: by id, with their owner
// and their hold on the memory budget, each dropped by its timer.
type heldResults struct {
	mu    sync.Mutex
	m     map[string]*heldResult
	once  sync.Once
	share *budget.Budget
}

// heldShare is the part of the memory budget kept answers may hold
// together: calls in flight keep the rest.
const heldShare = 4

// shareOf is the kept answers' share of b.
func (h *heldResults) shareOf(b *budget.Budget) *budget.Budget {
	if b == nil {
		return nil
	}
	h.once.Do(func() { h.share = budget.New(b.Size() / heldShare) })
	return h.share
}

type heldResult struct {
	owner   string
	body    []byte
	media   string
	size    int // bytes of a page: the call's budget
	expires time.Time
	hold    *budget.Hold
	timer   *time.Timer
}

// owner names who may read a kept answer: the tenant and the key (none on
// stdio, whose process is one person's).
func owner(tenant string, key *auth.APIKey) string {
	id := ""
	if key != nil {
		id = key.ID
	}
	return strconv.Quote(tenant) + " " + strconv.Quote(id) // no NUL: PostgreSQL's text holds none
}

// errNoRoom: the memory budget has no room for an answer to keep.
var errNoRoom = fmt.Errorf("the service's memory budget has no room to keep it")

// keep holds e's body for keep, drawn on b (nil: no budget), and returns
// its id and when it goes.
func (h *heldResults) keep(b *budget.Budget, keep time.Duration, e heldResult) (string, time.Time, error) {
	hold := b.HoldFor(h.shareOf(b))
	// Never waits: a call's answer goes out now, kept or not.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	if err := hold.TakeWithin(now, int64(len(e.body)), 0); err != nil {
		hold.Release()
		return "", time.Time{}, errNoRoom
	}
	var rb [16]byte
	rand.Read(rb[:])
	id := hex.EncodeToString(rb[:])
	e.expires, e.hold = time.Now().Add(keep), hold
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]*heldResult{}
	}
	h.m[id] = &e
	h.mu.Unlock()
	e.timer = time.AfterFunc(keep, func() { h.drop(id) })
	return id, e.expires, nil
}

// drop forgets the answer id and gives its bytes back.
func (h *heldResults) drop(id string) {
	h.mu.Lock()
	e := h.m[id]
	delete(h.m, id)
	h.mu.Unlock()
	if e != nil {
		e.timer.Stop()
		e.hold.Release()
	}
}

// get is the answer id when owner may read it and it has not expired.
func (h *heldResults) get(owner, id string) (*heldResult, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.m[id]
	if !ok || e.owner != owner || time.Now().After(e.expires) {
		return nil, false
	}
	return e, true
}

// count is how many answers are kept, and their bytes.
func (h *heldResults) count() (n int, bytes int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.m {
		n++
		bytes += int64(len(e.body))
	}
	return n, bytes
}

// close drops every kept answer (the server is done).
func (h *heldResults) close() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.m))
	for id := range h.m {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.drop(id)
	}
}

// page is page p (from 1) of e's text in pages of size bytes, cut at a
// character's start, and how many there are.
func (e *heldResult) page(p, size int) (string, int, bool) {
	n := pages(len(e.body), size)
	if p < 1 || p > n {
		return "", n, false
	}
	start, end := (p-1)*size, min(p*size, len(e.body))
	for start > 0 && start < len(e.body) && !utf8.RuneStart(e.body[start]) {
		start--
	}
	for end < len(e.body) && !utf8.RuneStart(e.body[end]) {
		end--
	}
	return string(e.body[start:end]), n, true
}

// ResultStore keeps the whole of cut answers for every replica (sqlstore
// does), beside the copy the replica that cut it holds on its memory
// budget. nil: each replica reads only its own.
type ResultStore interface {
	PutResult(ctx context.Context, id, owner, media string, pageSize int, body []byte, expires time.Time) error
	// Result is connections.ErrNotFound for an answer never kept or
	// expired.
	Result(ctx context.Context, id string) (owner, media string, pageSize int, body []byte, expires time.Time, err error)
}

// keptResult is the kept answer id when owner may read it: this
// replica's copy, else the store's.
func (s *Server) keptResult(ctx context.Context, owner, id string) (*heldResult, bool) {
	if e, ok := s.held.get(owner, id); ok {
		return e, true
	}
	if s.cfg.Results == nil {
		return nil, false
	}
	o, media, size, body, expires, err := s.cfg.Results.Result(ctx, id)
	if err != nil || o != owner || time.Now().After(expires) {
		return nil, false
	}
	return &heldResult{owner: o, body: body, media: media, size: size, expires: expires}, true
}
