// Package jsonlog is log/slog's JSON handler, cheaper for the records the
// service writes on every request (the access record and the audit record
// of each outbound call): it writes the same bytes as slog.NewJSONHandler
// for a record of plain values — strings of printable ASCII, integers,
// floats, booleans and durations — in about half the instructions,
// and hands every other record, unchanged, to a slog.JSONHandler that it
// keeps beside it (same writer, same lock, same attributes). A fuzz test
// holds the two to the same bytes.
package jsonlog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// New returns a handler that writes what slog.NewJSONHandler(w, opts)
// writes. With AddSource or ReplaceAttr set it is slog's handler itself.
func New(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	if opts.AddSource || opts.ReplaceAttr != nil {
		return slog.NewJSONHandler(w, opts)
	}
	lw := &lockedWriter{w: w}
	return &Handler{out: lw, level: opts.Level, slow: slog.NewJSONHandler(lw, opts)}
}

// Handler is the handler New returns.
type Handler struct {
	out   *lockedWriter
	level slog.Leveler // nil: Info
	pre   []byte       // the attributes of WithAttrs, formatted: `,"k":v`…
	slow  slog.Handler // slog's JSON handler, with the same attributes
}

// lockedWriter serializes the two handlers' writes: each record is one
// Write, whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Locked returns w with its writes serialised, each Write whole: a writer
// that need not be safe for concurrent use (a bytes.Buffer) shared by
// several loggers and goroutines.
func Locked(w io.Writer) io.Writer { return &lockedWriter{w: w} }

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Enabled reports whether records at level are written.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	min := slog.LevelInfo
	if h.level != nil {
		min = h.level.Level()
	}
	return level >= min
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	pre := append([]byte(nil), h.pre...)
	for _, a := range attrs {
		var ok bool
		if a.Key == "" && a.Value.Equal(slog.Value{}) {
			continue // slog elides an empty attribute
		}
		if pre, ok = appendAttr(pre, a); !ok {
			return h.slow.WithAttrs(attrs)
		}
	}
	return &Handler{out: h.out, level: h.level, pre: pre, slow: h.slow.WithAttrs(attrs)}
}

// WithGroup returns slog's handler with the group: records in groups are
// not the per-request ones.
func (h *Handler) WithGroup(name string) slog.Handler { return h.slow.WithGroup(name) }

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle writes r, or has slog's handler write it.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	bp := getBuffer()
	defer putBuffer(bp)
	buf, ok := h.appendRecord((*bp)[:0], &r)
	*bp = buf
	if !ok {
		return h.slow.Handle(ctx, r)
	}
	_, err := h.out.Write(buf)
	return err
}

// WriteAttrs writes the record of t, level, msg and attrs as Handle writes
// it, from a slice: the record is not copied into each frame by value, as a
// slog.Record (about 300 bytes) is into every Handle and Attrs. The audit
// record of each outbound call is written so: it is the deepest point of a
// call, and a goroutine on a keep-alive connection waits on a stack as big
// as its deepest point ever was.
func (h *Handler) WriteAttrs(ctx context.Context, t time.Time, level slog.Level, msg string, attrs []slog.Attr) error {
	bp := getBuffer()
	defer putBuffer(bp)
	buf, ok := h.appendHead((*bp)[:0], t, level, msg)
	for i := 0; ok && i < len(attrs); i++ {
		buf, ok = appendRecordAttr(buf, attrs[i])
	}
	*bp = buf
	if !ok {
		r := slog.NewRecord(t, level, msg, 0)
		r.AddAttrs(attrs...)
		return h.slow.Handle(ctx, r)
	}
	_, err := h.out.Write(append(buf, "}\n"...))
	return err
}

// getBuffer and putBuffer lend a record's buffer; one grown past 16 KiB
// is let go.
func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(bp *[]byte) {
	if cap(*bp) <= 16<<10 {
		buffers.Put(bp)
	}
}

// appendRecordAttr appends one attribute of a record; an empty one is
// left out, as slog leaves it.
func appendRecordAttr(buf []byte, a slog.Attr) ([]byte, bool) {
	if a.Key == "" && a.Value.Equal(slog.Value{}) {
		return buf, true
	}
	return appendAttr(buf, a)
}

// appendRecord appends r whole, its closing brace and newline included.
func (h *Handler) appendRecord(buf []byte, r *slog.Record) ([]byte, bool) {
	buf, ok := h.appendHead(buf, r.Time, r.Level, r.Message)
	if !ok {
		return buf, false
	}
	r.Attrs(func(a slog.Attr) bool {
		buf, ok = appendRecordAttr(buf, a)
		return ok
	})
	if !ok {
		return buf, false
	}
	return append(buf, "}\n"...), true
}

// appendHead appends a record's time, level, message and the handler's
// own attributes: all but the record's attributes and the closing brace.
func (h *Handler) appendHead(buf []byte, t time.Time, level slog.Level, msg string) ([]byte, bool) {
	buf = append(buf, '{')
	if !t.IsZero() {
		t = t.Round(0)
		if y := t.Year(); y < 0 || y >= 10000 {
			return buf, false
		}
		buf = append(buf, `"time":"`...)
		buf = appendTime(buf, t)
		buf = append(buf, `",`...)
	}
	buf = append(buf, `"level":`...)
	var ok bool
	if buf, ok = appendString(buf, level.String()); !ok {
		return buf, false
	}
	buf = append(buf, `,"msg":`...)
	if buf, ok = appendString(buf, msg); !ok {
		return buf, false
	}
	return append(buf, h.pre...), true
}

// second is one second of records' times formatted: its date, clock and
// zone, which every record within it shares.
type second struct {
	unix  int64
	loc   *time.Location
	clock []byte // "2006-01-02T15:04:05"
	zone  []byte // "Z07:00"
}

// last is the second of the last record written.
var last atomic.Pointer[second]

// appendTime appends t as time.RFC3339Nano formats it; the date, clock and
// zone are formatted once a second, the fraction per record. Never
// inlined: its room would be in appendRecord's frame, which is on the
// stack while each attribute is written, at a call's deepest point.
//
//go:noinline
func appendTime(buf []byte, t time.Time) []byte {
	sec := last.Load()
	if sec == nil || sec.unix != t.Unix() || sec.loc != t.Location() {
		sec = &second{unix: t.Unix(), loc: t.Location(),
			clock: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		last.Store(sec)
	}
	buf = append(buf, sec.clock...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		end := 10
		for frac[end-1] == '0' {
			end--
		}
		buf = append(buf, frac[:end]...)
	}
	return append(buf, sec.zone...)
}

// appendAttr appends `,"key":value` for the kinds of value it writes as
// slog does; false for any other (a group, a time, any value, a
// LogValuer, a non-finite float, an empty key, a string it would escape).
func appendAttr(buf []byte, a slog.Attr) ([]byte, bool) {
	if a.Key == "" {
		return buf, false
	}
	buf = append(buf, ',')
	buf, ok := appendString(buf, a.Key)
	if !ok {
		return buf, false
	}
	buf = append(buf, ':')
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		return appendString(buf, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(buf, v.Int64(), 10), true
	case slog.KindUint64:
		return strconv.AppendUint(buf, v.Uint64(), 10), true
	case slog.KindBool:
		return strconv.AppendBool(buf, v.Bool()), true
	case slog.KindDuration:
		return strconv.AppendInt(buf, int64(v.Duration()), 10), true
	case slog.KindFloat64:
		return appendFloat(buf, v.Float64())
	}
	return buf, false
}

// appendString appends s quoted when no byte of it needs an escape
// (printable ASCII but '"' and '\'); false otherwise.
func appendString(buf []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return buf, false
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"'), true
}

// appendFloat writes f as encoding/json does, which slog's handler calls
// for floats.
func appendFloat(buf []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return buf, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9.
		if n := len(buf); n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf, true
}
