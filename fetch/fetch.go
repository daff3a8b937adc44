// Package fetch is the outbound HTTP client of declarative tools: pooled
// keep-alive connections, HTTP/2, no environment proxies, one deadline taken
// from the caller's context, and a cap on the response body enforced while
// reading.
package fetch

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// DefaultMaxBodyBytes caps a response body unless the call says otherwise.
const DefaultMaxBodyBytes = 10 << 20

// DefaultMaxHeaderBytes caps response headers.
const DefaultMaxHeaderBytes = 1 << 20

// ErrTooLarge is returned when a response body passes its cap.
var ErrTooLarge = errors.New("response body too large")

// Client sends requests. The zero value is not usable; use NewClient.
type Client struct {
	// HTTP is the client requests go through. NewClient sets a pooled one
	// that ignores environment proxies.
	HTTP *http.Client
	// UserAgent is sent when the request sets none.
	UserAgent string
}

// NewTransport returns the pooled transport NewClient uses: keep-alive,
// HTTP/2 attempted, no proxy (HTTP_PROXY and friends are ignored), response
// headers capped at DefaultMaxHeaderBytes.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: DefaultMaxHeaderBytes,
	}
}

// NewClient returns a client on NewTransport with the given User-Agent.
func NewClient(userAgent string) *Client {
	return &Client{HTTP: &http.Client{Transport: NewTransport()}, UserAgent: userAgent}
}

// Response is a fully read response.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte
	Attempts int
}

// Do sends req and reads the whole body, at most maxBody bytes (0 means
// DefaultMaxBodyBytes); a longer body is ErrTooLarge, never a silent
// truncation. The request's context bounds everything, reading included.
func (c *Client) Do(req *http.Request, maxBody int64) (*Response, error) {
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	if c.UserAgent != "" && req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readCapped(resp.Body, resp.ContentLength, maxBody)
	if err != nil {
		return &Response{Status: resp.StatusCode, Header: resp.Header, Attempts: 1}, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body, Attempts: 1}, nil
}

func readCapped(r io.Reader, contentLength, max int64) ([]byte, error) {
	if contentLength > max {
		return nil, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, contentLength, max)
	}
	size := int64(512)
	if contentLength > 0 {
		size = contentLength + 1
	}
	buf := make([]byte, 0, size)
	for {
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, max)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(int64(cap(buf)), max+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) > max {
				return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, max)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// HostAllowed reports whether host matches one of the allowlist patterns:
// "api.x.com" matches that host exactly, "*.x.com" any subdomain of x.com
// (not x.com itself); case and a trailing dot are ignored.
func HostAllowed(patterns []string, host string) bool {
	host = normHost(host)
	for _, p := range patterns {
		p = normHost(p)
		if suffix, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if p == host {
			return true
		}
	}
	return false
}

func normHost(h string) string {
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// Version is the httptools version, sent in the default User-Agent.
const Version = "0.1.0"
