package httpspec

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

func TestResolveBearerAndHeader(t *testing.T) {
	ctx := context.Background()
	tc := synth.CallContext{Secrets: auth.Map{"p/T": "v"}}
	c, err := (&Handler{spec: &Spec{Authorization: &Authorization{Kind: AuthBearer, SecretRef: &synth.SecretRef{EnvName: "p", Name: "T"}}}}).resolveCredential(ctx, tc, "")
	if err != nil || c.Header != "Authorization" || c.Value != "Bearer v" || c.Secret != "v" {
		t.Errorf("bearer: %+v %v", c, err)
	}
	c, err = (&Handler{spec: &Spec{Authorization: &Authorization{Kind: AuthHeader, HeaderName: "X-Api-Key", SecretRef: &synth.SecretRef{EnvName: "p", Name: "T"}}}}).resolveCredential(ctx, tc, "")
	if err != nil || c.Header != "X-Api-Key" || c.Value != "v" {
		t.Errorf("header: %+v %v", c, err)
	}
	_, err = (&Handler{spec: &Spec{Authorization: &Authorization{Kind: AuthBearer, SecretRef: &synth.SecretRef{EnvName: "p", Name: "MISSING"}}}}).resolveCredential(ctx, tc, "")
	var e *synth.Error
	if !errors.As(err, &e) || e.Reason != synth.ReasonSecretUnavailable || !strings.Contains(e.Message, "HTTPTOOLS_SECRET_P_MISSING") {
		t.Errorf("missing: %v", err)
	}
}

func TestCredentialVar(t *testing.T) {
	for a, want := range map[*Authorization]string{
		nil: "",
		{Kind: AuthBearer, SecretRef: &synth.SecretRef{EnvName: "production", Name: "GITHUB_TOKEN"}}: "HTTPTOOLS_SECRET_PRODUCTION_GITHUB_TOKEN",
		{Kind: AuthConnection, Connection: "gmail-work"}:                                             "HTTPTOOLS_TOKEN_GMAIL_WORK",
	} {
		if got := credentialVar(a); got != want {
			t.Errorf("%+v: %q, want %q", a, got, want)
		}
	}
}
