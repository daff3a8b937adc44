package preformat

import (
	"io"
	"log/slog"
	"testing"
)

// TestHandlersStayBounded: a full set starts again, keeps what is put
// after, and never holds more than Max.
func TestHandlersStayBounded(t *testing.T) {
	var s Handlers[int]
	h := slog.NewTextHandler(io.Discard, nil)
	for i := range Max {
		s.Put(i, h)
	}
	if _, ok := s.Get(0); !ok || s.Len() != Max {
		t.Fatalf("full set: key 0 kept %v, %d put", ok, s.Len())
	}
	s.Put(Max, h)
	if _, ok := s.Get(0); ok {
		t.Error("the set did not start again past Max")
	}
	if _, ok := s.Get(Max); !ok || s.Len() != 1 {
		t.Errorf("after starting again: the new key kept %v, %d put", ok, s.Len())
	}
}
