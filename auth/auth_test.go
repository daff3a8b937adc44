package auth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

func TestEnvVar(t *testing.T) {
	for ref, want := range map[synth.SecretRef]string{
		{EnvName: "production", Name: "GITHUB_TOKEN"}: "HTTPTOOLS_SECRET_PRODUCTION_GITHUB_TOKEN",
		{EnvName: "local", Name: "slack.bot-token"}:   "HTTPTOOLS_SECRET_LOCAL_SLACK_BOT_TOKEN",
		{EnvName: "eu-west", Name: "ключ"}:            "HTTPTOOLS_SECRET_EU_WEST_____",
	} {
		if got := auth.EnvVar(ref); got != want {
			t.Errorf("%v: %s, want %s", ref, got, want)
		}
	}
}

func TestResolvers(t *testing.T) {
	ctx := context.Background()
	ref := synth.SecretRef{EnvName: "local", Name: "KEY"}
	env := auth.Env{LookupEnv: func(k string) (string, bool) {
		if k == "HTTPTOOLS_SECRET_LOCAL_KEY" {
			return "from-env", true
		}
		return "", false
	}}
	if v, err := env.ResolveSecret(ctx, ref); v != "from-env" || err != nil {
		t.Errorf("env: %q %v", v, err)
	}
	if _, err := env.ResolveSecret(ctx, synth.SecretRef{EnvName: "local", Name: "OTHER"}); !errors.Is(err, synth.ErrSecretNotFound) {
		t.Errorf("env missing: %v", err)
	}
	chain := auth.Chain{auth.Map{"local/KEY": "from-map"}, env}
	if v, _ := chain.ResolveSecret(ctx, ref); v != "from-map" {
		t.Errorf("chain: first resolver must win, got %q", v)
	}
	chain = auth.Chain{auth.Map{}, env}
	if v, _ := chain.ResolveSecret(ctx, ref); v != "from-env" {
		t.Errorf("chain: must fall through, got %q", v)
	}
	boom := errors.New("store down")
	chain = auth.Chain{failing{boom}, env}
	if _, err := chain.ResolveSecret(ctx, ref); !errors.Is(err, boom) {
		t.Errorf("chain: a real error stops it, got %v", err)
	}
}

type failing struct{ err error }

func (f failing) ResolveSecret(context.Context, synth.SecretRef) (string, error) { return "", f.err }
