package fetch

import (
	"fmt"
	"io"
	"net/http"
)

// ProtocolError is an answer a tool call cannot take: net/http hands some
// answers over as the raw connection (101 Switching Protocols) or as an
// interim status, and a body read from a raw connection has no end, no cap
// and no deadline. It is refused when it arrives; the connection is closed
// and the call is not retried.
type ProtocolError struct {
	Status int
	Why    string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("the upstream answered status %d, %s", e.Status, e.Why)
}

// answers refuses, below every wrapper and policy, any answer that is not
// a final HTTP answer with a body net/http frames: a status under 200 (a
// 101 is the only one net/http returns) or a body that can be written to
// (the connection itself).
type answers struct{ rt http.RoundTripper }

func (a answers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.rt.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	_, raw := resp.Body.(io.Writer)
	if resp.StatusCode >= 200 && !raw {
		return resp, nil
	}
	resp.Body.Close() // closes the connection: it is never pooled
	why := "an interim answer with no final one after it: a tool call takes one HTTP answer"
	if resp.StatusCode == http.StatusSwitchingProtocols || raw {
		why = "which hands over the raw connection (Switching Protocols): a tool call takes an HTTP answer, never another protocol"
	}
	return nil, &ProtocolError{Status: resp.StatusCode, Why: why}
}
