// Package history keeps what was called: one Record per tool call, written
// off the request path. A Recorder takes records without ever making a
// call wait: they queue, and a goroutine writes them to a Sink in batches;
// when the queue is full (the store fell behind) a record is dropped and
// counted, never waited for. Before a record is written, everything in it
// that the call's secrets could be in is redacted and cut to MaxText.
package history

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/httptools/httptools/redact"
)

// Record is one call, as kept.
type Record struct {
	ID       string    `json:"id"`
	Tenant   string    `json:"tenant"`
	Tool     string    `json:"tool"`
	Key      string    `json:"key,omitempty"` // the caller's key id
	Person   string    `json:"person,omitempty"`
	At       time.Time `json:"at"`
	Status   int       `json:"status"` // the upstream's; 0 if none
	Duration int64     `json:"durationMs"`
	Attempts int       `json:"attempts"`
	Code     string    `json:"code,omitempty"` // the error's, "" for a success
	Reason   string    `json:"reason,omitempty"`
	Request  string    `json:"request"` // the input, redacted, cut to MaxText
	Answer   string    `json:"answer"`  // the output or the error's message, redacted, cut
}

// MaxText is how much of a request or an answer a record keeps.
const MaxText = 4 << 10

// Sink writes records (a store). It must be safe for concurrent use.
type Sink interface {
	AppendCalls(ctx context.Context, recs []Record) error
}

// Entry is what a call hands the Recorder: the record, and what it is
// redacted with and cut from off the request path.
type Entry struct {
	Record
	Input, Output []byte
	Secrets       *redact.Set // the call's; nil for none
}

// Recorder queues entries and writes them to Sink in batches. The zero
// value is not usable: set Sink and Start it.
type Recorder struct {
	Sink Sink
	// Queue bounds the entries waiting; 0 means 10,000. Past it an entry is
	// dropped (Dropped counts it).
	Queue int
	// QueueBytes bounds the bytes the waiting entries hold (their copies of
	// the input and the output, and EntryOverhead each); 0 means 4 MiB.
	// Past it an entry is dropped (Dropped counts it). A count alone let a
	// service past what the writer keeps up with hold 10,000 answers of up
	// to 8 KiB each: a live heap of tens of MiB that every garbage
	// collection marked and that made the percent fall (internal/gcpace),
	// for records that were mostly dropped anyway.
	QueueBytes int64
	// Batch is the most records written at once; 0 means 200.
	Batch int
	// Flush is the longest an entry waits for its batch; 0 means 500 ms.
	Flush time.Duration
	// OnError, when set, is told of a batch the sink refused (dropped).
	OnError func(error, int)
	// MaxBusy bounds the share of its time the writer spends writing: after
	// a batch that took d it rests d·(1/MaxBusy − 1), and records that come
	// meanwhile beyond the queue are dropped and counted. The history then
	// costs the service's calls a bounded share of the machine whatever the
	// load. 0 means 0.05; 1 never rests.
	MaxBusy float64

	ch      chan Entry
	queued  atomic.Int64 // bytes the entries in ch and the batch being written hold (size)
	done    chan struct{}
	dropped atomic.Int64
	written atomic.Int64
	closing atomic.Bool // Close: write what is queued without resting
	once    sync.Once
}

// Start starts the writing goroutine.
func (r *Recorder) Start() {
	if r.Queue <= 0 {
		r.Queue = 10000
	}
	if r.QueueBytes <= 0 {
		r.QueueBytes = 4 << 20
	}
	if r.Batch <= 0 {
		r.Batch = 200
	}
	if r.Flush <= 0 {
		r.Flush = 500 * time.Millisecond
	}
	if r.MaxBusy <= 0 || r.MaxBusy > 1 {
		r.MaxBusy = 0.05
	}
	r.ch = make(chan Entry, r.Queue)
	r.done = make(chan struct{})
	go r.run()
}

// EntryOverhead is what QueueBytes counts for a queued entry beside its
// copies: its place in the queue and its record's strings.
const EntryOverhead = 512

// Add queues e, or drops it when the queue is full (in entries or in
// bytes): a call never waits. What it queues of the input and the output
// is a copy of their first 2·MaxText bytes (room for a secret that
// straddles the cut to be whole when it is redacted): a queued entry never
// keeps a call's answer, however big, alive past the call. A dropped entry
// copies nothing. A nil Recorder keeps nothing.
func (r *Recorder) Add(e Entry) {
	if r == nil || r.ch == nil {
		return
	}
	n := size(e)
	if r.queued.Add(n) > r.QueueBytes {
		r.queued.Add(-n)
		r.dropped.Add(1)
		return
	}
	e.Input, e.Output = clip(e.Input), clip(e.Output)
	select {
	case r.ch <- e:
	default:
		r.queued.Add(-n)
		r.dropped.Add(1)
	}
}

// size is what a queued e counts against QueueBytes: the same before and
// after its copies are made.
func size(e Entry) int64 {
	return EntryOverhead + int64(min(len(e.Input), 2*MaxText)+min(len(e.Output), 2*MaxText)+len(e.Answer)+len(e.Reason))
}

// Dropped counts the entries dropped because the queue was full or the
// sink refused their batch; Written the records written.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Written counts the records the sink took.
func (r *Recorder) Written() int64 { return r.written.Load() }

// Close writes what is queued and stops.
func (r *Recorder) Close() {
	if r == nil || r.ch == nil {
		return
	}
	r.once.Do(func() { r.closing.Store(true); close(r.ch) })
	<-r.done
}

func (r *Recorder) run() {
	defer close(r.done)
	batch := make([]Record, 0, r.Batch)
	var held int64 // what the batch's entries count against QueueBytes
	t := time.NewTimer(r.Flush)
	defer t.Stop()
	write := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		began := time.Now()
		err := r.Sink.AppendCalls(ctx, batch)
		cancel()
		clear(batch) // its strings go now, not when the slots are reused
		r.queued.Add(-held)
		held = 0
		if rest := time.Duration(float64(time.Since(began)) * (1/r.MaxBusy - 1)); rest > 0 && r.MaxBusy < 1 && !r.closing.Load() {
			time.Sleep(min(rest, 5*time.Second))
		}
		if err != nil {
			r.dropped.Add(int64(len(batch)))
			if r.OnError != nil {
				r.OnError(err, len(batch))
			}
		} else {
			r.written.Add(int64(len(batch)))
		}
		batch = batch[:0]
	}
	for {
		select {
		case e, ok := <-r.ch:
			if !ok {
				write()
				return
			}
			held += size(e)
			batch = append(batch, e.finish())
			if len(batch) >= r.Batch {
				write()
			}
		case <-t.C:
			write()
			t.Reset(r.Flush)
		}
	}
}

// clip is a copy of b's first 2·MaxText bytes; nil stays nil.
func clip(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b[:min(len(b), 2*MaxText)])
}

// finish is the record of e: its input and output redacted with the call's
// secrets, in every spelling package redact knows, and cut.
func (e Entry) finish() Record {
	rec := e.Record
	red := func(b []byte) string {
		s := string(b)
		if e.Secrets != nil && !e.Secrets.Empty() {
			s = e.Secrets.Redact(s)
		}
		return Cut(s, MaxText)
	}
	rec.Request = red(e.Input)
	if e.Output != nil {
		rec.Answer = red(e.Output)
	} else {
		rec.Answer = red([]byte(e.Answer))
	}
	return rec
}

// Cut is s cut to at most n bytes on a rune boundary, "…" marking a cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // not inside a rune
	}
	return s[:n] + "…"
}

// Filter selects calls: every set field must match.
type Filter struct {
	Tool, Person string
	// Status is "ok" (no error) or "error"; "" for both.
	Status string
	Since  time.Time
	// Limit bounds the rows; 0 means 100, at most 1,000.
	Limit int
	// Scope, when not nil, selects only the calls of the tools it lets
	// through: a store applies it in its query, before Limit, so that a
	// caller who sees few tools still gets up to Limit of their calls.
	Scope *Scope
}
