package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/httptools/httptools/auth"
)

// BenchmarkRecheckViews: what a reload or a policy put costs the
// listeners: every listener's view read again and compared (nothing
// changed), at 10 and 1000 tools, 100 listeners of one tenant under a
// policy of one rule.
func BenchmarkRecheckViews(b *testing.B) {
	const listeners = 100
	for _, n := range []int{10, 1000} {
		srv, _, _ := benchService(b, n)
		srv.cfg.Policies = srv.cfg.Store.(PolicyStore)
		if err := srv.cfg.Policies.PutPolicy(context.Background(), "t", []byte(`{"rules":[{"name":"no-writes","effect":"deny","tools":{"mutating":true}}]}`)); err != nil {
			b.Fatal(err)
		}
		for i := range listeners {
			srv.addListener(context.Background(), &viewListener{tenant: "t", key: &auth.APIKey{ID: fmt.Sprint(i), Tenant: "t", Role: auth.RoleAdmin}, notify: func() {}})
		}
		b.Run(fmt.Sprintf("tools=%d/listeners=%d", n, listeners), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				srv.recheckViews()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/listeners, "ns/listener")
		})
	}
}
