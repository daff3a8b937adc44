package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/httptools/httptools/fetch"
)

// Fetch under a policy: the guard refuses private addresses unless a range
// is opened (here loopback, where the example's server is), and a tool's
// allowlist holds on every hop.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()

	// The zero Config refuses loopback like any private range.
	strict := fetch.NewClient(fetch.Config{})
	_, err := strict.Do(context.Background(), &fetch.Request{Method: "GET", URL: srv.URL + "/x", SuccessMin: 200, SuccessMax: 299})
	var denied *fetch.DeniedError
	fmt.Println("zero config:", errors.As(err, &denied))

	c := fetch.NewClient(fetch.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	resp, err := c.Do(context.Background(), &fetch.Request{Method: "GET", URL: srv.URL + "/x", SuccessMin: 200, SuccessMax: 299})
	fmt.Println("loopback opened:", resp.Status, string(resp.Body), err)

	// A redirect to the metadata address is refused at that hop.
	_, err = c.Do(context.Background(), &fetch.Request{Method: "GET", URL: srv.URL + "/away", SuccessMin: 200, SuccessMax: 299})
	fmt.Println("redirect to metadata:", errors.As(err, &denied), denied.IP)

	// The tool's allowlist names hosts; 127.0.0.1 is not among them.
	_, err = c.Do(context.Background(), &fetch.Request{Method: "GET", URL: srv.URL + "/x", SuccessMin: 200, SuccessMax: 299,
		Allowlist: []string{"api.example.com"}, Restricted: true})
	fmt.Println("allowlist:", errors.As(err, &denied), denied.Why)
	// Output:
	// zero config: true
	// loopback opened: 200 {"ok":true} <nil>
	// redirect to metadata: true 169.254.169.254
	// allowlist: true host is not in the tool's network allowlist
}
