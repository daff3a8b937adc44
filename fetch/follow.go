package fetch

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// follow sends req through the call's transport and follows redirects
// as http.Client does (the same methods, bodies, headers, Referer and
// errors), under checkRedirect. It is http.Client's loop without what a
// call does not use (cookie jars, client timeouts) and without its copy of
// the request's header, made for every request whether a redirect comes or
// not: a call waiting on a slow upstream held it for as long as it waited.
func (cl *call) follow(req *http.Request) (*http.Response, error) {
	ireq := req
	var via []*http.Request
	strip := false // sticky, as http.Client's: once a hop left the first host's domain
	for {
		resp, err := cl.sendOne(req)
		if err != nil {
			return nil, urlError(ireq, req, err)
		}
		method, body, ok := redirectOf(ireq, req, resp)
		if !ok {
			return resp, nil
		}
		loc := resp.Header.Get("Location")
		u, err := req.URL.Parse(loc)
		if err != nil {
			resp.Body.Close()
			return nil, urlError(ireq, req, fmt.Errorf("failed to parse Location header %q: %v", loc, err))
		}
		next, err := http.NewRequestWithContext(ireq.Context(), method, u.String(), nil)
		if err != nil {
			resp.Body.Close()
			return nil, urlError(ireq, req, err)
		}
		next.Response = resp
		if body && ireq.GetBody != nil {
			if next.Body, err = ireq.GetBody(); err != nil {
				resp.Body.Close()
				return nil, urlError(ireq, req, err)
			}
			next.GetBody, next.ContentLength = ireq.GetBody, ireq.ContentLength
		}
		via = append(via, req)
		if !strip && !sameDomain(via[0].URL, next.URL) {
			strip = true
		}
		next.Header = make(http.Header, len(ireq.Header)+1)
		for k, vv := range ireq.Header {
			if strip && sensitiveOnRedirect(k) {
				continue
			}
			next.Header[k] = vv
		}
		if ref := referer(req.URL, next.URL); ref != "" && next.Header.Get("Referer") == "" {
			next.Header.Set("Referer", ref)
		}
		err = cl.checkRedirect(next, via)
		// Read a little of the answer so that its connection serves the
		// next hop, then close it.
		if resp.ContentLength == -1 || resp.ContentLength <= maxBodySlurp {
			io.CopyN(io.Discard, resp.Body, maxBodySlurp)
		}
		resp.Body.Close()
		if err != nil {
			// As http.Client: the answer (its body closed) and the error.
			ue := urlError(ireq, next, err)
			ue.URL = loc
			return resp, ue
		}
		req = next
	}
}

const maxBodySlurp = 2 << 10

// sendOne sends one hop through the call's transport, as http.Client's
// send does: a URL's user info becomes basic credentials, and an answer
// without a body gets an empty one.
func (cl *call) sendOne(req *http.Request) (*http.Response, error) {
	if req.Header == nil {
		r2 := *req
		r2.Header = make(http.Header)
		req = &r2
	}
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		password, _ := u.Password()
		r2 := *req
		r2.Header = req.Header.Clone()
		r2.SetBasicAuth(u.Username(), password)
		req = &r2
	}
	resp, err := cl.RoundTrip(req)
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("http: RoundTripper returned a nil *Response with a nil error")
	}
	if resp.Body == nil {
		if resp.ContentLength > 0 && req.Method != http.MethodHead {
			return nil, fmt.Errorf("http: RoundTripper returned a response with a nil body but a Content-Length of %d", resp.ContentLength)
		}
		resp.Body = io.NopCloser(strings.NewReader(""))
	}
	return resp, nil
}

// redirectOf says whether resp to req (of the call's first request ireq)
// is followed, with which method and whether the body is sent again, as
// http.Client decides.
func redirectOf(ireq, req *http.Request, resp *http.Response) (method string, body, ok bool) {
	switch resp.StatusCode {
	case 301, 302, 303:
		method = req.Method
		if method != http.MethodGet && method != http.MethodHead {
			method = http.MethodGet
		}
	case 307, 308:
		method, body = req.Method, true
		if ireq.GetBody == nil && ireq.Body != nil && ireq.Body != http.NoBody {
			return "", false, false // the body cannot be sent again
		}
	default:
		return "", false, false
	}
	if resp.Header.Get("Location") == "" {
		return "", false, false // a 3xx without a Location is the answer
	}
	return method, body, true
}

// sensitiveOnRedirect names the headers http.Client drops on a hop to
// another domain.
func sensitiveOnRedirect(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Authorization", "Www-Authenticate", "Cookie", "Cookie2", "Proxy-Authorization", "Proxy-Authenticate":
		return true
	}
	return false
}

// sameDomain says whether next is first's host or one of its subdomains,
// as http.Client's shouldCopyHeaderOnRedirect does.
func sameDomain(first, next *url.URL) bool {
	ihost, dhost := strings.ToLower(first.Hostname()), strings.ToLower(next.Hostname())
	if ihost == dhost {
		return true
	}
	if strings.ContainsAny(dhost, ":%") {
		return false // an IPv6 address
	}
	return strings.HasSuffix(dhost, "."+ihost)
}

// referer is the Referer of a hop from last to next, as http.Client sets
// it: none from https to http, and never the user info.
func referer(last, next *url.URL) string {
	if last.Scheme == "https" && next.Scheme == "http" {
		return ""
	}
	if last.User != nil {
		u := *last
		u.User = nil
		return u.String()
	}
	return last.String()
}

// urlError wraps err as http.Client does: the first request's method, the
// URL of req without its password.
func urlError(ireq, req *http.Request, err error) *url.Error {
	op := ireq.Method
	if op == "" {
		op = "Get"
	} else {
		op = op[:1] + strings.ToLower(op[1:])
	}
	u := req.URL.String()
	if _, has := req.URL.User.Password(); has {
		u = strings.Replace(u, req.URL.User.String()+"@", req.URL.User.Username()+":***@", 1)
	}
	return &url.Error{Op: op, URL: u, Err: err}
}
