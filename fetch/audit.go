package fetch

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/httptools/httptools/redact"
)

// The audit record of a call: one slog record, no URL, no header, no body,
// every string redacted.

type auditKey struct {
	tool, method, host string
	denied             bool
}

// auditHandler is the client's handler with the call's fixed attributes.
func (c *Client) auditHandler(tool, method, host string, denied bool) slog.Handler {
	k := auditKey{tool, method, host, denied}
	if h, ok := c.audits.Get(k); ok {
		return h
	}
	h := c.logger.Handler().WithAttrs([]slog.Attr{slog.String("tool", tool), slog.String("method", method), slog.String("host", host), decisionAttr(denied)})
	c.audits.Put(k, h)
	return h
}

// addrStrings caches the text of upstream addresses: a call on a kept-alive
// connection would otherwise format the same address (three allocations)
// for its response and its audit record. Bounded: past the bound, addresses
// are formatted each time.
var addrStrings struct {
	sync.Map // netip.AddrPort → string
	n        atomic.Int64
}

const maxAddrStrings = 4096

func addrString(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ap := ta.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) // 127.0.0.1, as TCPAddr.String says
	if s, ok := addrStrings.Load(ap); ok {
		return s.(string)
	}
	s := ap.String()
	if addrStrings.n.Load() < maxAddrStrings {
		if _, loaded := addrStrings.LoadOrStore(ap, s); !loaded {
			addrStrings.n.Add(1)
		}
	}
	return s
}

// audit writes the one record of a call: no URL, no header, no body, and
// every string in it redacted with the call's secrets.
func (c *Client) audit(ctx context.Context, cl *call, resp *Response, err error, start time.Time) {
	de := deniedOf(err)
	level := slog.LevelInfo
	if de != nil {
		level = slog.LevelWarn
	}
	logger, own := c.logger, true
	if cl.req.Logger != nil {
		logger, own = cl.req.Logger, false
	}
	// The record is written even when the call's context has ended: slog
	// handlers take the context for its values, not to stop.
	if !logger.Enabled(ctx, level) {
		return
	}
	var h slog.Handler
	if own {
		// The client's own logger: tool, method, host and the decision
		// come formatted.
		h = c.auditHandler(cl.req.Tool, cl.req.Method, cl.hostname, de != nil)
	} else {
		h = logger.Handler()
	}
	now := time.Now()
	if jh, ok := h.(attrsWriter); ok {
		// A handler that takes the attributes as a slice (the service's)
		// takes them from the heap: no record of 300 bytes copied into
		// each frame.
		ap := auditAttrs.Get().(*[]slog.Attr)
		*ap = appendAuditAttrs((*ap)[:0], cl, resp, err, de, own, start, now)
		_ = jh.WriteAttrs(ctx, now, level, "outbound call", *ap)
		clear(*ap) // the call's strings
		auditAttrs.Put(ap)
		return
	}
	_ = h.Handle(ctx, auditRecord(cl, resp, err, de, level, own, start, now))
}

// attrsWriter is a slog.Handler that also writes a record from its time,
// level, message and attributes as a slice, as its Handle would write the
// record made of them (internal/jsonlog's: both go through one encoder).
// Any handler with the method is written to so; fetch knows no handler by
// its type.
type attrsWriter interface {
	WriteAttrs(ctx context.Context, t time.Time, level slog.Level, msg string, attrs []slog.Attr) error
}

var auditAttrs = sync.Pool{New: func() any { a := make([]slog.Attr, 0, 16); return &a }}

// auditRecord builds the record audit hands to a handler other than the
// service's. Apart, and never inlined, so that its attrs' array is off
// the stack when the handler runs: a call on a keep-alive connection
// waits on a stack as big as its deepest point ever was (the runtime
// halves a stack only when a quarter of it is in use), and the audit
// record was that point.
//
//go:noinline
func auditRecord(cl *call, resp *Response, err error, de *DeniedError, level slog.Level, own bool, start, now time.Time) slog.Record {
	// A record built here and handed to the handler: Logger.LogAttrs would
	// also walk the stack for a source position nobody asked for. The attrs
	// are gathered first and added at once: the record then grows once.
	r := slog.NewRecord(now, level, "outbound call", 0)
	var buf [12]slog.Attr
	r.AddAttrs(appendAuditAttrs(buf[:0], cl, resp, err, de, own, start, now)...)
	return r
}

// appendAuditAttrs appends the audit record's attributes to attrs.
//
//go:noinline
func appendAuditAttrs(attrs []slog.Attr, cl *call, resp *Response, err error, de *DeniedError, own bool, start, now time.Time) []slog.Attr {
	sec := cl.req.Secrets
	if !own {
		// A call's logger (InvokeOptions.Logger) may be new on every
		// call: nothing is kept for it, and the record says what the
		// client's own handler has formatted.
		attrs = append(attrs,
			slog.String("tool", cl.req.Tool),
			slog.String("method", cl.req.Method),
			slog.String("host", cl.hostname), // the template's literal host
			decisionAttr(de != nil),
		)
	}
	attrs = append(attrs,
		slog.String("tenant", cl.req.Tenant),
		slog.String("ip", cl.ip),
		slog.Int("attempts", cl.rs.count()),
		slog.Int64("duration_ms", now.Sub(start).Milliseconds()),
	)
	if de != nil {
		attrs = append(attrs, slog.String("why", sec.Redact(de.Why)))
		if de.IP.IsValid() {
			attrs = append(attrs, slog.String("denied_ip", de.IP.String()))
		}
	}
	if resp != nil && resp.Status != 0 {
		attrs = append(attrs, slog.Int("status", resp.Status))
	}
	if err != nil && de == nil {
		attrs = append(attrs, slog.String("error", Describe(err, sec)))
	}
	return append(attrs, cl.req.LogAttrs...)
}

// decisionAttr is the audit record's word for the egress policy's decision.
func decisionAttr(denied bool) slog.Attr {
	if denied {
		return slog.String("decision", "denied")
	}
	return slog.String("decision", "allowed")
}

// deniedOf returns the refusal err holds, if any: apart, so that a call
// without an error allocates nothing to find out.
func deniedOf(err error) *DeniedError {
	if err == nil {
		return nil
	}
	var de *DeniedError
	if errors.As(err, &de) {
		return de
	}
	return nil
}

// Describe words a fetch error without the URL (which may carry query
// credentials), without this side's addresses (a resolver's, a
// connection's local end: see scrub.go) and with every secret of secrets
// (nil: none) redacted. A Location header that is not a URL is named,
// never quoted: it is the upstream's text and may echo anything.
func Describe(err error, secrets *redact.Set) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if strings.HasPrefix(s, "failed to parse Location header") {
		return "the redirect's Location header is not a valid URL"
	}
	return secrets.Redact(scrubText(s))
}
