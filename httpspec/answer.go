package httpspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/httptools/httptools/fetch"
	"github.com/httptools/httptools/internal/jsoncheck"
	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
)

// The upstream's answer: its status, its body as the output, and the
// excerpts and URLs errors quote.

// output runs steps 7 and 8: the status range and the parse.
func (h *Handler) output(r *plan, resp *fetch.Response) (*synth.Output, error) {
	rng := h.spec.Success()
	if resp.Status < rng.Min || resp.Status > rng.Max {
		// What the upstream said is its words, not the service's: the
		// error's Outside, which each door marks as outside data.
		start := excerpt(r.Secrets.Redact(string(resp.Body)), 512)
		msg := fmt.Sprintf("upstream answered %d, outside the success range %d–%d", resp.Status, rng.Min, rng.Max)
		msg += h.mayHaveActed(resp.Status)
		said := start
		if page, ok := htmlDigest(resp, start); ok {
			// An error page's markup is no message: its title (or its
			// text) is, and details.body keeps the page's start.
			msg += " with an HTML page, worded by its title or text (details.body has its start)"
			said = page
		}
		return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonUpstreamStatus, Status: resp.Status, Body: start, Message: msg, Outside: said}
	}
	if mt := binaryMedia(resp.Header.Get("Content-Type"), resp.Body); mt != "" {
		return mediaOutput(resp, mt), nil // media.go
	}
	if !h.spec.Parse() {
		out := &synth.Output{Status: resp.Status, Attempts: resp.Attempts}
		if !utf8.Valid(resp.Body) {
			return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: ReasonResponseNotText, Status: resp.Status,
				Message: "the response is not valid UTF-8 text, so it cannot be returned as a string"}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(string(resp.Body))
		out.JSON = bytes.TrimRight(b.Bytes(), "\n")
		return out, nil
	}
	raw := bytes.TrimSpace(resp.Body)
	if len(raw) == 0 {
		return &synth.Output{Status: resp.Status, Attempts: resp.Attempts, JSON: json.RawMessage("null")}, nil
	}
	out, err := synth.CheckOutput(raw)
	if err != nil {
		msg, where := notJSON(err)
		return nil, &synth.Error{Code: synth.CodeHandlerError, Reason: synth.ReasonResponseNotJSON, Status: resp.Status,
			Body: excerpt(r.Secrets.Redact(string(resp.Body)), 512), Message: msg, Outside: where}
	}
	out.Status, out.Attempts = resp.Status, resp.Attempts
	return out, nil
}

// mayHaveActed is what a refused status means for a mutating tool: the
// request reached the upstream, which may have written before it
// answered, so a caller who retries may do the thing twice.
func (h *Handler) mayHaveActed(status int) string {
	switch {
	case !h.mutating:
		return ""
	case status >= 200 && status < 300:
		return fmt.Sprintf("; this tool is mutating and %d is a success, so the upstream has most likely acted: check before calling again, and widen spec.successStatus to include %d", status, status)
	}
	return "; this tool is mutating, so the upstream may have acted: check before calling again"
}

var (
	htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>|<!--.*?-->`)
	spaces    = regexp.MustCompile(`\s+`)
)

// htmlDigest words an HTML answer (its Content-Type says so, or it starts
// as a page does) as text: its title, else its text, cut. start is the
// body's redacted excerpt.
func htmlDigest(resp *fetch.Response, start string) (string, bool) {
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	head := strings.ToLower(strings.TrimSpace(start))
	if !strings.Contains(ct, "html") && !strings.HasPrefix(head, "<!doctype html") && !strings.HasPrefix(head, "<html") {
		return "", false
	}
	text := ""
	if m := htmlTitle.FindStringSubmatch(start); m != nil {
		text = m[1]
	} else {
		text = htmlTag.ReplaceAllString(start, " ")
	}
	text = strings.TrimSpace(spaces.ReplaceAllString(html.UnescapeString(text), " "))
	if text == "" {
		return "an HTML page", true
	}
	return excerpt(text, 160), true
}

// notJSON words an answer jsoncheck refused: a limit it broke, or that it
// is not JSON at all; and where, in the answer's own words (its names), as
// the error's Outside.
func notJSON(err error) (msg, where string) {
	var je *jsoncheck.Error
	if errors.As(err, &je) && je.Kind != jsoncheck.Syntax {
		return "the response " + je.What(), je.Where()
	}
	return "the response is not valid JSON: set parseJson: false to get it as text", ""
}

// excerpt returns at most n bytes of s, cut on a UTF-8 boundary.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// redactURL hides user info and the values of query parameters that look
// like credentials.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[unparseable URL]"
	}
	if u.User != nil {
		u.User = url.User(redact.Mask)
	}
	q := u.Query()
	changed := false
	for k := range q {
		if looksSecret(k) {
			q[k] = []string{redact.Mask}
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func looksSecret(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"key", "token", "secret", "password", "passwd", "signature", "sig", "auth", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
