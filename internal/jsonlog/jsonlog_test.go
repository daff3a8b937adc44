package jsonlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// both writes the same records through this package's handler and
// through slog's, and returns what each wrote.
func both(t testing.TB, opts *slog.HandlerOptions, with []slog.Attr, group string, records ...slog.Record) (string, string) {
	var got, want bytes.Buffer
	var h, s slog.Handler = New(&got, opts), slog.NewJSONHandler(&want, opts)
	if with != nil {
		// Split in two calls, as the preformatted handlers are made.
		h, s = h.WithAttrs(with[:len(with)/2]).WithAttrs(with[len(with)/2:]), s.WithAttrs(with[:len(with)/2]).WithAttrs(with[len(with)/2:])
	}
	if group != "" {
		h, s = h.WithGroup(group), s.WithGroup(group)
	}
	for _, r := range records {
		if h.Enabled(context.Background(), r.Level) != s.Enabled(context.Background(), r.Level) {
			t.Fatalf("Enabled(%v) differs", r.Level)
		}
		if !s.Enabled(context.Background(), r.Level) {
			continue
		}
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		_ = s.Handle(context.Background(), r)
	}
	return got.String(), want.String()
}

// FuzzSameAsSlog: whatever the message, keys, values, level and time, and
// however the attributes are split between WithAttrs and the record, this
// handler writes the bytes slog's JSON handler writes.
func FuzzSameAsSlog(f *testing.F) {
	f.Add("outbound call", "tool", "bench.get-issue", int64(200), 0.076, true, int64(3*time.Millisecond), 0, int64(1764763000123456789), uint8(0))
	f.Add("a \"quoted\"\nline", "k\\ey", "é\u2028\xff<&>", int64(-1), 1e-7, false, int64(0), 4, int64(0), uint8(7))
	f.Add("", "", "", int64(math.MinInt64), math.Inf(1), false, int64(-5), -4, int64(-62135596800000000), uint8(3))
	f.Add("m", "n", "\x7f\x1f", int64(0), 1e21, true, int64(1), 8, int64(253402300800000000), uint8(5))
	f.Fuzz(func(t *testing.T, msg, key, str string, n int64, fl float64, b bool, d int64, level int, unixNano int64, shape uint8) {
		attrs := []slog.Attr{
			slog.String(key, str), slog.Int64("n", n), slog.Float64("f", fl), slog.Bool("b", b),
			slog.Duration("d", time.Duration(d)), slog.Uint64("u", uint64(n)), slog.String("s", msg),
		}
		if shape&1 != 0 {
			attrs = append(attrs, slog.Time("t", time.Unix(0, unixNano).UTC()), slog.Any("e", errors.New(str)), slog.Group("g", slog.Int("x", 1)))
		}
		if shape&2 != 0 {
			attrs = append(attrs, slog.Attr{}, slog.Any("", nil))
		}
		var tm time.Time
		if shape&4 == 0 {
			tm = time.Unix(0, unixNano)
		}
		r := slog.NewRecord(tm, slog.Level(level), msg, 0)
		r.AddAttrs(attrs[len(attrs)/2:]...)
		var opts *slog.HandlerOptions
		if shape&8 != 0 {
			opts = &slog.HandlerOptions{Level: slog.LevelWarn}
		}
		group := ""
		if shape&16 != 0 {
			group = key
		}
		got, want := both(t, opts, attrs[:len(attrs)/2], group, r, r)
		if got != want {
			t.Fatalf("jsonlog wrote\n%s\nslog wrote\n%s", got, want)
		}
		// WriteAttrs, the audit record's way, writes the same bytes.
		var w3 bytes.Buffer
		h := New(&w3, opts).WithAttrs(attrs[:len(attrs)/4]).WithAttrs(attrs[len(attrs)/4 : len(attrs)/2])
		if jh, ok := h.(*Handler); ok && group == "" {
			for range 2 {
				if jh.Enabled(context.Background(), slog.Level(level)) {
					if err := jh.WriteAttrs(context.Background(), tm, slog.Level(level), msg, attrs[len(attrs)/2:]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if w3.String() != want {
				t.Fatalf("WriteAttrs wrote\n%s\nslog wrote\n%s", w3.String(), want)
			}
		}
	})
}

// TestServiceRecords: the two records of a REST invoke, as the service
// writes them (preformatted attributes first), come out as slog writes
// them, and through this handler's own path, not slog's.
func TestServiceRecords(t *testing.T) {
	now := time.Now()
	access := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	access.AddAttrs(slog.Int("status", 200), slog.Float64("ms", 0.076), slog.String("tenant", "t"), slog.String("key", "key_668323d8e609ee9a"), slog.Int("bytes", 1101))
	audit := slog.NewRecord(now, slog.LevelInfo, "outbound call", 0)
	audit.AddAttrs(slog.String("tenant", "t"), slog.String("ip", "127.0.0.1:8080"), slog.Int("attempts", 1), slog.Int64("duration_ms", 0), slog.Int("status", 200))
	with := []slog.Attr{slog.String("tool", "bench.get-issue"), slog.String("method", "GET"), slog.String("host", "api.example"), slog.String("decision", "allowed")}
	got, want := both(t, nil, with, "", access, audit)
	if got != want {
		t.Fatalf("jsonlog wrote\n%s\nslog wrote\n%s", got, want)
	}
	h := New(io.Discard, nil).WithAttrs(with).(*Handler)
	for _, r := range []slog.Record{access, audit} {
		if _, ok := h.appendRecord(nil, &r); !ok {
			t.Errorf("record %q went to slog's handler", r.Message)
		}
	}
}

// TestRecordsStayWhole: records written at once from many goroutines,
// through both paths (a plain record and one slog's handler writes), are
// each one whole line.
func TestRecordsStayWhole(t *testing.T) {
	var buf bytes.Buffer
	h := New(&buf, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "m", 0)
				if (g+i)%2 == 0 {
					r.AddAttrs(slog.Any("err", errors.New("x")))
				} else {
					r.AddAttrs(slog.Int("i", i))
				}
				_ = h.Handle(context.Background(), r)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1600 {
		t.Fatalf("%d lines, want 1600", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"time":"`) || !strings.HasSuffix(l, "}") || strings.Count(l, `"msg"`) != 1 {
			t.Fatalf("broken line %q", l)
		}
	}
}

func BenchmarkHandlers(b *testing.B) {
	with := []slog.Attr{slog.String("tool", "bench.get-issue"), slog.String("method", "GET"), slog.String("host", "api.example"), slog.String("decision", "allowed")}
	for _, c := range []struct {
		name string
		h    slog.Handler
	}{{"slog", slog.NewJSONHandler(io.Discard, nil)}, {"jsonlog", New(io.Discard, nil)}} {
		b.Run(c.name, func(b *testing.B) {
			h := c.h.WithAttrs(with)
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "outbound call", 0)
				r.AddAttrs(slog.String("tenant", "t"), slog.String("ip", "127.0.0.1:8080"), slog.Int("attempts", 1), slog.Int64("duration_ms", 0), slog.Int("status", 200))
				_ = h.Handle(context.Background(), r)
			}
		})
	}
}

// TestTimesAsRFC3339Nano: a record's time is written as time.RFC3339Nano
// formats it, within a second (the date, clock and zone kept from the last
// record) and across seconds, zones and fractions with trailing zeros.
func TestTimesAsRFC3339Nano(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("x", -(3*3600 + 30*60)), time.FixedZone("y", 5*3600+45*60)}
	base := time.Date(2026, 12, 3, 12, 0, 59, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var ns int64
		switch i % 4 {
		case 0:
			ns = 0
		case 1:
			ns = int64(rng.IntN(1000)) * int64(time.Millisecond)
		case 2:
			ns = int64(rng.IntN(1e9))
		case 3:
			ns = int64(rng.IntN(10)) * 100
		}
		tm := base.Add(time.Duration(i/50)*time.Second + time.Duration(ns)).In(zones[(i/7)%len(zones)])
		want := tm.Format(time.RFC3339Nano)
		if got := string(appendTime(nil, tm)); got != want {
			t.Fatalf("appendTime(%v) = %q, want %q", tm, got, want)
		}
	}
}
