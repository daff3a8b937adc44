package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
)

// TestConsoleCookieIsASession: signing in to the console sets a cookie that
// holds a session token, never the key (0 cookies holding it); the session
// opens the console, is no API key over REST (401), ends with its key's
// revocation and at sign-out (the page redirects to sign-in, 2 of 2).
func TestConsoleCookieIsASession(t *testing.T) {
	r := newRig(t, func(c *Config) { c.UI = true })
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	key, info, _ := r.store.CreateAPIKey(context.Background(), "tenant-a", auth.RoleAdmin, "")
	signIn := func() *http.Cookie {
		req, _ := http.NewRequest("POST", r.http.URL+"/ui/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Name == uiCookie {
				return c
			}
		}
		t.Fatalf("sign-in: %d, no cookie", resp.StatusCode)
		return nil
	}
	page := func(c *http.Cookie) int {
		req, _ := http.NewRequest("GET", r.http.URL+"/ui/", nil)
		req.AddCookie(c)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	c := signIn()
	if strings.Contains(c.Value, key) || strings.Contains(c.Value, strings.TrimPrefix(key, auth.APIKeyPrefix)) || !strings.HasPrefix(c.Value, auth.SessionPrefix) {
		t.Fatalf("the cookie %q holds the key or is no session", c.Value)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie flags: HttpOnly %v, SameSite %v", c.HttpOnly, c.SameSite)
	}
	if st := page(c); st != 200 {
		t.Fatalf("the console with the session: %d", st)
	}
	if rp := r.do(t, c.Value, "GET", "/v1/tools", ""); rp.status != 401 {
		t.Errorf("the session as an API key: %d; want 401", rp.status)
	}
	ended := 0
	// Sign-out ends the session server-side: the old cookie no longer opens.
	req, _ := http.NewRequest("POST", r.http.URL+"/ui/logout", nil)
	req.AddCookie(c)
	if resp, err := noRedirect.Do(req); err == nil {
		resp.Body.Close()
	}
	if page(c) == http.StatusSeeOther {
		ended++
	}
	// A key revoked: its sessions end with it.
	c = signIn()
	r.store.RevokeAPIKey(context.Background(), "", info.ID)
	if page(c) == http.StatusSeeOther {
		ended++
	}
	if ended != 2 {
		t.Errorf("%d of 2 sessions ended (sign-out, revocation)", ended)
	}
}
