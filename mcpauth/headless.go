package mcpauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// callbackPath is the path of Headless's redirect URI.
const callbackPath = "/callback"

// PersonWait bounds how long Headless waits for a person to answer the
// authorization page (the call's context may end it sooner).
const PersonWait = 10 * time.Minute

// Headless is an Opener for a process with no browser of its own (httptools
// call): it listens for the answer on 127.0.0.1 and follows the
// authorization URL's redirects with plain GETs through the guarded
// client. A redirect to its callback ends it, as when the server needs no
// person (the conformance suite's); a page that asks the person something
// is left to them: its URL is written to Prompt and the callback awaited
// until the context ends, PersonWait at most.
type Headless struct {
	cfg     *Config
	prompt  io.Writer
	ln      net.Listener
	srv     *http.Server
	answers chan url.Values
}

var _ Opener = (*Headless)(nil)

// ListenHeadless starts the callback listener on 127.0.0.1 (a free port);
// the authorization URL is fetched as cfg fetches metadata. Close stops it.
func ListenHeadless(cfg *Config, prompt io.Writer) (*Headless, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the OAuth callback on 127.0.0.1: %w", err)
	}
	h := &Headless{cfg: cfg, prompt: prompt, ln: ln, answers: make(chan url.Values, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+callbackPath, func(w http.ResponseWriter, r *http.Request) {
		select {
		case h.answers <- r.URL.Query():
		default: // an answer is already waiting: a second is not the request's
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "httptools has the authorization's answer: you may close this page.\n")
	})
	h.srv = &http.Server{Handler: mux}
	go h.srv.Serve(ln)
	return h, nil
}

// RedirectURI is http://127.0.0.1:PORT/callback.
func (h *Headless) RedirectURI() string { return "http://" + h.ln.Addr().String() + callbackPath }

// Close stops the listener.
func (h *Headless) Close() error { return h.srv.Close() }

// isCallback says u is the listener's callback.
func (h *Headless) isCallback(u *url.URL) bool {
	return u.Scheme == "http" && u.Host == h.ln.Addr().String() && u.Path == callbackPath
}

// Open follows authURL's redirects under eg; one to the callback is sent
// there with a plain GET. Anything else asks the person to open authURL.
func (h *Headless) Open(ctx context.Context, eg Egress, authURL string) (url.Values, error) {
	select {
	case <-h.answers: // a stale answer of an earlier request
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, PersonWait)
	defer cancel()
	hc := h.cfg.httpClient(eg)
	guard := hc.CheckRedirect
	hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if h.isCallback(r.URL) {
			return http.ErrUseLastResponse
		}
		return guard(r, via)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, errorf(ReasonAuthorizationDenied, "", err, "opening the authorization URL failed")
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, DefaultMaxDocumentBytes))
	resp.Body.Close()
	if loc, err := resp.Location(); err == nil && h.isCallback(loc) {
		if err := h.deliver(ctx, loc); err != nil {
			return nil, err
		}
	} else {
		fmt.Fprintf(h.prompt, "Open this URL to authorize httptools, then come back: %s\n", authURL)
	}
	select {
	case q := <-h.answers:
		return q, nil
	case <-ctx.Done():
		return nil, errorf(ReasonAuthorizationDenied, "", context.Cause(ctx), "no answer came to %s", h.RedirectURI())
	}
}

// deliver GETs the callback, as a browser would: the listener takes the
// answer. It goes to the listener only, never elsewhere.
func (h *Headless) deliver(ctx context.Context, loc *url.URL) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return err
	}
	local := &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", h.ln.Addr().String())
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("the callback does not redirect") },
	}
	resp, err := local.Do(req)
	if err != nil {
		return fmt.Errorf("delivering the authorization's answer to %s: %w", strings.TrimSuffix(h.RedirectURI(), callbackPath), err)
	}
	resp.Body.Close()
	return nil
}
