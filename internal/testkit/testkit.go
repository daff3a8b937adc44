// Package testkit holds the helpers the project's own tests share: waiting
// for a condition a background goroutine changes, a locked buffer for logs,
// an upstream that answers what no server should, a fetch client that may
// reach the tests' upstreams on 127.0.0.1, and the real SQL stores. It is
// for tests only; nothing in a program imports it. (Package fetch's and
// package sqlstore's own in-package tests cannot import it: it imports
// them.)
package testkit

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// WaitFor polls cond every 5 ms until it holds, and fails the test after
// WaitLimit naming what it waited for. It waits for an event; it never
// asserts a duration.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitLimit is how long WaitFor waits before it calls an event lost: long
// enough that only a stuck test reaches it on a 2-core machine at load 15
// under the race detector, never a slow one.
const WaitLimit = 2 * time.Minute

// Buffer is a bytes.Buffer safe for concurrent use: a logger's writer read
// by the test.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Take returns what was written and empties the buffer.
func (b *Buffer) Take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.b.String()
	b.b.Reset()
	return out
}

// HostileUpstream is a server on 127.0.0.1 that answers every request with
// Head, written byte for byte, and then either floods the connection with
// 64 KiB blocks (Flood) or stays silent, until the client hangs up or Hold
// passes. It counts requests, bytes written after the head, and the
// connections the client closed.
type HostileUpstream struct {
	URL                    string // the base URL, ending in "/"
	Requests, Sent, HungUp atomic.Int64
}

// NewHostileUpstream starts one; it stops with the test.
func NewHostileUpstream(t testing.TB, head string, flood bool, hold time.Duration) *HostileUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &HostileUpstream{URL: "http://" + ln.Addr().String() + "/"}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c, head, flood, hold, done)
		}
	}()
	return u
}

func (u *HostileUpstream) serve(c net.Conn, head string, flood bool, hold time.Duration, done chan struct{}) {
	defer c.Close()
	if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
		return
	}
	u.Requests.Add(1)
	if _, err := c.Write([]byte(head)); err != nil {
		return
	}
	hungUp := func(err error) bool {
		ne, ok := err.(net.Error)
		return !ok || !ne.Timeout()
	}
	if !flood {
		c.SetReadDeadline(time.Now().Add(hold))
		if _, err := c.Read(make([]byte, 1)); err != nil && hungUp(err) {
			u.HungUp.Add(1)
		}
		return
	}
	block := make([]byte, 64<<10)
	for {
		select {
		case <-done:
			return
		default:
		}
		c.SetWriteDeadline(time.Now().Add(hold))
		n, err := c.Write(block)
		u.Sent.Add(int64(n))
		if err != nil {
			if hungUp(err) {
				u.HungUp.Add(1)
			}
			return
		}
	}
}

// Clock is a clock that moves only when the test moves it (Advance): a
// Manager's or a Server's Now.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a Clock at the time now.
func NewClock() *Clock { return &Clock{t: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// IssuesAnswer is an API's list of n issues of about 1 KiB each, as JSON
// ({"total":n,"issues":[…]}, multi-byte characters in every body): an
// answer over a model's result budget.
func IssuesAnswer(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"total":` + strconv.Itoa(n) + `,"issues":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"number":%d,"title":"Issue %d: the list is slow","body":%q,"labels":["bug","p2"]}`, i+1, i+1, strings.Repeat("ünïcode words ", 70))
	}
	b.WriteString("]}")
	return []byte(b.String())
}
