package fetch_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Upstreams that make net/http's Transport send a request again on its
// own, below fetch's attempt loop: an HTTP/2 server that refuses every
// stream or goes away on every connection, and an HTTP/1.1 server that
// closes kept-alive connections under the next request.

// h2Mode is what a hostile HTTP/2 upstream does with each connection and
// stream.
type h2Mode int

const (
	// h2NoStreams announces SETTINGS_MAX_CONCURRENT_STREAMS 0 and refuses
	// every stream (RST_STREAM REFUSED_STREAM).
	h2NoStreams h2Mode = iota
	// h2Refuse lets streams open (no limit announced) and refuses each.
	h2Refuse
	// h2GoAway answers every stream with GOAWAY (last stream 0): nothing
	// on the connection was processed.
	h2GoAway
	// h2GoAwayOnce answers the first connection's stream with GOAWAY
	// (last stream 0: not processed) and the streams after it with 200.
	h2GoAwayOnce
	// h2RefuseOnce refuses the first stream (REFUSED_STREAM) and answers
	// the streams after it with 200.
	h2RefuseOnce
)

// h2Upstream is a TLS server on 127.0.0.1 that speaks HTTP/2 frame by
// frame (golang.org/x/net/http2's Framer), so that the test decides every
// frame. It counts TLS handshakes and request streams (HEADERS frames).
type h2Upstream struct {
	url        string
	tls        *tls.Config // a client's: trusts the server's certificate
	handshakes atomic.Int64
	streams    atomic.Int64
}

func newH2Upstream(t *testing.T, mode h2Mode) *h2Upstream {
	t.Helper()
	// httptest's certificate (for 127.0.0.1), on a listener of our own.
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.StartTLS()
	cert := ts.TLS.Certificates
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	ts.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: cert, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	u := &h2Upstream{url: "https://" + ln.Addr().String() + "/", tls: &tls.Config{RootCAs: pool}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	var conns sync.Map
	t.Cleanup(func() {
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err != nil {
					return
				}
				u.handshakes.Add(1)
				u.serve(c, mode)
			}()
		}
	}()
	return u
}

// serve reads the client's preface and frames and answers as mode says,
// until the client goes.
func (u *h2Upstream) serve(c net.Conn, mode h2Mode) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(c, c)
	var settings []http2.Setting
	if mode == h2NoStreams {
		settings = append(settings, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 0})
	}
	if fr.WriteSettings(settings...) != nil {
		return
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				fr.WritePing(true, f.Data)
			}
		case *http2.HeadersFrame:
			n := u.streams.Add(1)
			if n > 1 && (mode == h2GoAwayOnce || mode == h2RefuseOnce) {
				var hb bytes.Buffer
				enc := hpack.NewEncoder(&hb)
				enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
				enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/json"})
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: hb.Bytes(), EndHeaders: true})
				fr.WriteData(f.StreamID, true, []byte(`{}`))
				continue
			}
			if mode == h2GoAway || mode == h2GoAwayOnce {
				fr.WriteGoAway(0, http2.ErrCodeNo, nil)
				continue
			}
			fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
		}
	}
}

// h1Upstream is an HTTP/1.1 server on 127.0.0.1 that answers the requests
// of its first connections and, once dropping, reads every later request
// and closes the connection without an answer: net/http sends an
// idempotent request again by itself when a kept-alive connection dies
// under it. It counts connections and requests.
type h1Upstream struct {
	url      string
	conns    atomic.Int64
	requests atomic.Int64
	dropping atomic.Bool
	// held, when set, is how many requests are held until all arrived:
	// that many connections end up idle in the client's pool.
	held    int
	arrived chan struct{}
}

func newH1Upstream(t *testing.T, held int) *h1Upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &h1Upstream{url: "http://" + ln.Addr().String() + "/", held: held, arrived: make(chan struct{})}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	var waiting atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.conns.Add(1)
			conns.Store(c, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, r.Body)
					u.requests.Add(1)
					if u.dropping.Load() {
						return // the request read, the connection closed: no answer
					}
					if waiting.Add(1) == int64(u.held) {
						close(u.arrived)
					}
					if u.held > 0 {
						<-u.arrived
					}
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return u
}
