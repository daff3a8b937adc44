package fetch_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/httptools/httptools/fetch"
)

// FuzzResponseReader feeds raw upstream bytes (status line, headers, body,
// then the connection closed) to a real Client, over an in-memory
// connection: whatever the bytes, Do returns before the deadline without
// panicking, a body it returns is within the cap, and a status it returns
// is a final one.
func FuzzResponseReader(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\nxx",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n" + string(make([]byte, 300)),
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 302 Found\r\nLocation: http://93.184.216.34:80/next\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 999 Odd\r\n\r\n",
		"garbage",
	} {
		f.Add([]byte(s))
	}
	const limit = 4 << 10
	f.Fuzz(func(t *testing.T, raw []byte) {
		dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				server.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := http.ReadRequest(bufio.NewReader(server)); err != nil {
					return
				}
				server.Write(raw)
			}()
			return client, nil
		}
		c := fetch.NewClient(fetch.Config{Dial: dial, Resolver: publicResolver{}, MaxAttempts: 1})
		defer c.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.Do(ctx, &fetch.Request{Method: "GET", URL: "http://api.example.com/x", MaxBody: limit, SuccessMin: 200, SuccessMax: 299})
		if ctx.Err() != nil {
			t.Fatalf("Do ran to its deadline: %v", err)
		}
		if err == nil {
			if len(resp.Body) > limit {
				t.Fatalf("a body of %d bytes passed the %d-byte cap", len(resp.Body), limit)
			}
			if resp.Status < 200 {
				t.Fatalf("status %d returned as an answer", resp.Status)
			}
		}
	})
}

// publicResolver answers every name with the public test address.
type publicResolver struct{}

func (publicResolver) LookupNetIP(context.Context, string, string) ([]netipAddr, error) {
	return []netipAddr{public}, nil
}
