package httpspec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/httptools/httptools/redact"
	"github.com/httptools/httptools/synth"
)

// DryRun prepares the request and describes it as JSON, with every resolved
// secret redacted; nothing is sent.
//
//	{"method":"POST","url":"…","headers":["Name: value",…],"body":…,"curl":"curl …"}
//
// The body is the JSON value when it is JSON, else a string. curl is the same
// request as a command line to paste, with the secret as a shell variable
// ("$HTTPTOOLS_SECRET_PRODUCTION_GITHUB_TOKEN") instead of its value.
//
// A connection tool needs no connection source to be described: without
// one, the token is a stand-in, printed as $HTTPTOOLS_TOKEN_<CONNECTION>.
// Likewise a secret that is not set is a stand-in, printed as its
// $HTTPTOOLS_SECRET_… variable.
func (h *Handler) DryRun(ctx context.Context, call *synth.Call) (json.RawMessage, error) {
	if a := h.spec.Authorization; a != nil && a.Kind == AuthConnection && call.Context.Connections == nil {
		c := *call
		c.Context.Connections = standIn{}
		if c.Context.Person == "" {
			c.Context.Person = "the-run's-person" // a person's connection: whoever runs it
		}
		call = &c
	}
	if a := h.spec.Authorization; a != nil && a.SecretRef != nil {
		// A secret not set is described all the same: the request shows
		// it as its variable, never as a value.
		c := *call
		c.Context.Secrets = standInSecret{c.Context.Secrets}
		call = &c
	}
	r, err := h.planCall(ctx, call, "")
	if err != nil {
		return nil, err
	}
	return r.Describe(), nil
}

// Describe renders the request as DryRun does, secrets redacted.
func (r *plan) Describe() json.RawMessage {
	r = r.forPrinting()
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	hs := []string{}
	for _, k := range names {
		for _, v := range r.Header[k] {
			if k == r.credentialHeader && r.credential != "" && strings.HasSuffix(v, r.credential) {
				// The credential by position, whatever its length: a
				// secret too short to search for is still never shown.
				hs = append(hs, k+": "+r.Secrets.Redact(strings.TrimSuffix(v, r.credential))+redact.Mask)
				continue
			}
			hs = append(hs, k+": "+r.Secrets.Redact(v))
		}
	}
	var bodyVal any
	if r.Body != nil {
		text := r.Secrets.Redact(string(r.Body))
		if json.Valid([]byte(text)) && (r.Header.Get("Content-Type") == "" || isJSONType(r.Header.Get("Content-Type"))) {
			bodyVal = json.RawMessage(text)
		} else {
			bodyVal = text
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(struct {
		Method  string   `json:"method"`
		URL     string   `json:"url"`
		Headers []string `json:"headers"`
		Body    any      `json:"body"`
		Curl    string   `json:"curl"`
	}{r.Method, r.Secrets.Redact(r.URL), hs, bodyVal, r.Curl()})
	return bytes.TrimRight(b.Bytes(), "\n")
}

// standIn is the connection source of a dry run without one: a token that
// stands for the real one, never sent anywhere.
type standIn struct{}

func (standIn) AccessToken(_ context.Context, req synth.ConnectionRequest) (string, error) {
	return "dry-run-token-of-" + req.Name, nil
}

// standInSecret resolves a secret that is not set to a stand-in, so that
// a dry run describes the request without it (as its shell variable).
type standInSecret struct{ next synth.SecretResolver }

func (s standInSecret) ResolveSecret(ctx context.Context, ref synth.SecretRef) (string, error) {
	if s.next != nil {
		v, err := s.next.ResolveSecret(ctx, ref)
		if !errors.Is(err, synth.ErrSecretNotFound) {
			return v, err
		}
	}
	return "dry-run-secret-" + ref.Name, nil
}

func isJSONType(ct string) bool {
	return bytes.Contains([]byte(ct), []byte("json"))
}

// Curl renders the request as a curl command line. The resolved secret is
// written as its shell variable, and every other character is quoted, so the
// line can be pasted as is; any other value of the secret that shows up (in
// a header filled from input, say) is redacted.
func (r *plan) Curl() string {
	r = r.forPrinting()
	var b strings.Builder
	b.WriteString("curl")
	if r.Method != "GET" {
		b.WriteString(" -X " + r.Method)
	}
	b.WriteString(" " + r.shellWord(r.URL))
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range r.Header[k] {
			if k == r.credentialHeader && r.credentialVar != "" && strings.HasSuffix(v, r.credential) {
				// The header that carries the credential: the Credential
				// itself as its variable, and nowhere else, so that a
				// short secret never rewrites the host or the body.
				head := k + ": " + strings.TrimSuffix(v, r.credential)
				b.WriteString(" \\\n  -H " + singleQuote(r.Secrets.Redact(head)) + `"$` + r.credentialVar + `"`)
				continue
			}
			b.WriteString(" \\\n  -H " + r.shellWord(k+": "+v))
		}
	}
	if r.Body != nil {
		b.WriteString(" \\\n  --data-raw " + r.shellWord(string(r.Body)))
	}
	return b.String()
}

// forPrinting is r with a redactor of the secrets long enough to search for
// (redact.Set.Long): the credential is shown as its variable by position.
func (r *plan) forPrinting() *plan {
	c := *r
	c.Secrets = r.Secrets.Long()
	return &c
}

// shellWord quotes s for a POSIX shell, any secret in it redacted.
func (r *plan) shellWord(s string) string { return singleQuote(r.Secrets.Redact(s)) }

func singleQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
