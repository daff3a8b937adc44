package server

import (
	"bytes"
	"net/http"
	"strings"
)

// How a console action runs the REST handler of its route in-process,
// with the signed-in identity.

// inner runs a REST handler for the signed-in key (its identity is in r's
// context) and returns its status and body: the console acts through the
// same code, limits and checks as the API. route is "METHOD /path".
func (s *Server) inner(r *http.Request, h http.HandlerFunc, route string, values map[string]string, body []byte) (status int, out []byte) {
	method, path, _ := strings.Cut(route, " ")
	req, err := http.NewRequestWithContext(r.Context(), method, "/", bytes.NewReader(body))
	if err != nil {
		return http.StatusInternalServerError, nil
	}
	req.URL.Path = path // as is: the handlers read the values below, never the path
	req.Header.Set("Content-Type", "application/json")
	for k, v := range values {
		req.SetPathValue(k, v)
	}
	rec := &recorder{header: http.Header{}}
	func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				rec.status, rec.body = http.StatusBadGateway, *bytes.NewBufferString(`{"error":{"code":"handler-error","message":"the answer broke off"}}`)
			}
		}()
		h(rec, req)
	}()
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.status, rec.body.Bytes()
}

// recorder is the ResponseWriter of an inner call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
