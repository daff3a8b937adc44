package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
)

// syncTransport is an experiment, not a product: an HTTP/1.1 round
// tripper for clear-text upstreams that writes the request and reads the
// answer in the caller's goroutine, where net/http's Transport hands each
// request to a connection's write loop and its answer back from a read
// loop (goroutines and channels per request). The floor with -sync
// measures what those hand-offs cost a hop (BENCHMARKS.md, "The peer at
// its best"). It keeps no deadline, retries nothing and trusts the
// upstream: the bench's own nginx.
type syncTransport struct {
	mu   sync.Mutex
	idle []*syncConn
}

type syncConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func (t *syncTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "http" {
		return nil, errors.New("sync transport: clear-text http only")
	}
	sc, err := t.get(r.URL.Host)
	if err != nil {
		return nil, err
	}
	if err := r.Write(sc.bw); err != nil {
		sc.c.Close()
		return nil, err
	}
	if err := sc.bw.Flush(); err != nil {
		sc.c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(sc.br, r)
	if err != nil {
		sc.c.Close()
		return nil, err
	}
	resp.Body = &syncBody{rc: resp.Body, t: t, sc: sc, reuse: !resp.Close}
	return resp, nil
}

func (t *syncTransport) get(host string) (*syncConn, error) {
	t.mu.Lock()
	if n := len(t.idle); n > 0 {
		sc := t.idle[n-1]
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		return sc, nil
	}
	t.mu.Unlock()
	c, err := net.Dial("tcp", host)
	if err != nil {
		return nil, err
	}
	return &syncConn{c: c, br: bufio.NewReader(c), bw: bufio.NewWriter(c)}, nil
}

// syncBody gives its connection back when the answer was read to its end,
// and closes it when it was not.
type syncBody struct {
	rc    io.ReadCloser
	t     *syncTransport
	sc    *syncConn
	eof   bool
	reuse bool
}

func (b *syncBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *syncBody) Close() error {
	if b.sc == nil {
		return nil
	}
	err := b.rc.Close()
	if b.eof && b.reuse && err == nil {
		b.t.mu.Lock()
		b.t.idle = append(b.t.idle, b.sc)
		b.t.mu.Unlock()
	} else {
		b.sc.c.Close()
	}
	b.sc = nil
	return err
}
