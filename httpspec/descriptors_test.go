package httpspec_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/synth"
)

// TestOutOfDescriptorsIsOverloaded: a dial that fails because the process
// has no descriptor left (EMFILE, ENFILE, as the kernel words them for a
// socket) is the service's overload, handler-error/overloaded, not the
// upstream's fetch-failed. (Nothing was sent, so the attempts are retried
// after their backoff, when descriptors may have come free.)
func TestOutOfDescriptorsIsOverloaded(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		var dials atomic.Int64
		reg := &synth.Registry{}
		reg.MustRegister(httpspec.Kind, httpspec.NewSynthesizer(fetch.NewClient(fetch.Config{
			AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")},
			Resolver:   oneAddr{},
			Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
				dials.Add(1)
				return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", errno)}
			},
		})))
		tool, err := (&synth.Loader{Registry: reg}).Load([]byte(`{"id":"t.x","description":"x","version":"1.0.0","mutating":true,"input":{"type":"object"},"output":{},
			"spec":{"kind":"http","method":"POST","urlTemplate":"https://api.example.com/x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = tool.Invoke(context.Background(), synth.CallContext{}, json.RawMessage(`{}`), synth.InvokeOptions{})
		var e *synth.Error
		if !errors.As(err, &e) || e.Reason != synth.ReasonOverloaded {
			t.Errorf("%v: %v; want handler-error/overloaded", errno, err)
		}
		t.Logf("%v: %d dials: %v", errno, dials.Load(), err)
	}
}

type oneAddr struct{}

func (oneAddr) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}
