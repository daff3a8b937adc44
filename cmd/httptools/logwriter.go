package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logWriter buffers log records and writes them out every interval (and on
// Close), so that one audit record per call costs no system call of its own.
// A crash loses at most one interval of records.
type logWriter struct {
	mu   sync.Mutex
	out  io.Writer // what w writes to; Direct writes to it too, under mu
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newLogWriter(w io.Writer, every time.Duration) *logWriter {
	l := &logWriter{out: w, w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.Flush()
			case <-l.stop:
				l.Flush()
				return
			}
		}
	}()
	return l
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Direct returns a writer to the same output that writes at once, after
// what is buffered: a command's own messages on stderr come after the log
// records written before them, and never race the flusher's writes.
func (l *logWriter) Direct() io.Writer { return directWriter{l} }

type directWriter struct{ l *logWriter }

func (d directWriter) Write(p []byte) (int, error) {
	d.l.mu.Lock()
	defer d.l.mu.Unlock()
	if err := d.l.w.Flush(); err != nil {
		return 0, err
	}
	return d.l.out.Write(p)
}

// Flush writes out what is buffered.
func (l *logWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Flush()
}

// Close flushes and stops the ticker.
func (l *logWriter) Close() error {
	close(l.stop)
	<-l.done
	return nil
}
