package history_test

import (
	"context"
	"fmt"

	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/redact"
)

type printSink struct{}

func (printSink) AppendCalls(_ context.Context, recs []history.Record) error {
	for _, r := range recs {
		fmt.Println(r.Tool, r.Request, r.Answer)
	}
	return nil
}

func ExampleRecorder() {
	r := &history.Recorder{Sink: printSink{}}
	r.Start()
	secrets := &redact.Set{}
	secrets.Add("tok_0123456789abcdef")
	r.Add(history.Entry{Record: history.Record{Tool: "acme.get"}, Input: []byte(`{"id":"7"}`),
		Output: []byte(`{"echo":"Bearer tok_0123456789abcdef"}`), Secrets: secrets})
	r.Close() // writes what is queued
	// Output:
	// acme.get {"id":"7"} {"echo":"Bearer [REDACTED]"}
}
