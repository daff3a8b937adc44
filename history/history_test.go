package history_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/redact/redacttest"
)

type memSink struct {
	mu      sync.Mutex
	recs    []history.Record
	batches int
	block   chan struct{}
	fail    bool
}

func (m *memSink) AppendCalls(_ context.Context, recs []history.Record) error {
	if m.block != nil {
		<-m.block
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("down")
	}
	m.recs = append(m.recs, recs...)
	m.batches++
	return nil
}

// TestRecorderNeverWaits: with the sink stuck, 10,000 adds return at once
// and what the queue cannot hold is dropped and counted; then every queued
// record is written, in batches.
func TestRecorderNeverWaits(t *testing.T) {
	sink := &memSink{block: make(chan struct{})}
	r := &history.Recorder{Sink: sink, Queue: 100, Batch: 10, Flush: 10 * time.Millisecond}
	r.Start()
	start := time.Now()
	for i := range 10000 {
		r.Add(history.Entry{Record: history.Record{Tool: fmt.Sprint(i)}})
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("10,000 adds took %v", d)
	}
	close(sink.block)
	r.Close()
	if got := int64(len(sink.recs)) + r.Dropped(); got != 10000 || r.Dropped() < 9000 || r.Written() != int64(len(sink.recs)) {
		t.Errorf("written %d + dropped %d, want 10000 with most dropped", len(sink.recs), r.Dropped())
	}
}

// TestRecordsKeepNoSecret: a secret in the input or the answer, in any
// spelling an upstream may echo it in, is redacted before it is written;
// text is cut to MaxText on a rune boundary.
func TestRecordsKeepNoSecret(t *testing.T) {
	secret := "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	sink := &memSink{}
	r := &history.Recorder{Sink: sink, Flush: time.Millisecond}
	r.Start()
	set := &redact.Set{}
	set.Add(secret)
	encodings := redacttest.Encodings()
	for name, enc := range encodings {
		r.Add(history.Entry{Record: history.Record{Tool: name}, Input: []byte(`{"q":"` + enc(secret) + `"}`), Output: []byte("echo " + enc(secret)), Secrets: set})
	}
	r.Add(history.Entry{Record: history.Record{Tool: "long"}, Input: []byte(strings.Repeat("é", history.MaxText)), Secrets: set})
	r.Close()
	if len(sink.recs) != len(encodings)+1 {
		t.Fatalf("%d records", len(sink.recs))
	}
	for _, rec := range sink.recs {
		for name, enc := range encodings {
			if strings.Contains(rec.Request, enc(secret)) || strings.Contains(rec.Answer, enc(secret)) {
				t.Errorf("%s: the %s spelling is kept: %q %q", rec.Tool, name, rec.Request, rec.Answer)
			}
		}
		if len(rec.Request) > history.MaxText+len("…") || !utf8.ValidString(rec.Request) {
			t.Errorf("%s: request of %d bytes, valid UTF-8 %v", rec.Tool, len(rec.Request), utf8.ValidString(rec.Request))
		}
	}
}

// TestQueueBoundedInBytes: behind a stuck writer, 10,000 calls with 4 KiB
// answers queue no more than QueueBytes of copies (not 10,000 × 4 KiB):
// the rest is dropped and counted, before anything of it is copied, and
// what was queued is written once the writer moves again.
func TestQueueBoundedInBytes(t *testing.T) {
	sink := &memSink{block: make(chan struct{})}
	const budget = 1 << 20
	r := &history.Recorder{Sink: sink, QueueBytes: budget}
	r.Start()
	answer := []byte(`"` + strings.Repeat("a", 4094) + `"`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10000 {
		r.Add(history.Entry{Record: history.Record{Tool: "t"}, Input: []byte(`{}`), Output: answer})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The bound covers the batch the stuck writer holds too. The channel's
	// own slots (10,000 entries) are the same with or without.
	perEntry := history.EntryOverhead + 2 + len(answer)
	wantMax := budget/perEntry + 1
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if grown > 2*budget {
		t.Errorf("10,000 queued-or-dropped entries keep %d bytes alive, budget %d", grown, budget)
	}
	close(sink.block)
	r.Close()
	if len(sink.recs) > wantMax || len(sink.recs) < wantMax/2 || int64(len(sink.recs))+r.Dropped() != 10000 {
		t.Errorf("written %d (want at most %d, about that many) + dropped %d, want 10,000", len(sink.recs), wantMax, r.Dropped())
	}
	t.Logf("queued %d of 10,000 (budget %d B, %d B an entry), heap grown %d B", len(sink.recs), budget, perEntry, grown)
}

// TestQueuedEntriesKeepNoAnswer: an entry queued behind a stuck writer
// holds a copy of at most 2·MaxText bytes of its input and output, never
// the call's own (possibly huge) slices: 50 entries of 9 MiB answers keep
// under 1 MiB alive.
func TestQueuedEntriesKeepNoAnswer(t *testing.T) {
	sink := &memSink{block: make(chan struct{})}
	r := &history.Recorder{Sink: sink, Queue: 100}
	r.Start()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 50 {
		answer := make([]byte, 9<<20)
		answer[0] = '{'
		r.Add(history.Entry{Record: history.Record{Tool: "big"}, Output: answer})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Errorf("50 queued entries keep %d bytes alive", grown)
	}
	close(sink.block)
	r.Close()
	if len(sink.recs) != 50 || len(sink.recs[0].Answer) > history.MaxText+len("…") {
		t.Errorf("%d records, the first answer %d bytes", len(sink.recs), len(sink.recs[0].Answer))
	}
}
