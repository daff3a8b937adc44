package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/httptools/httptools/synth"
)

// EnvPrefix starts the names of the environment variables Env reads.
const EnvPrefix = "HTTPTOOLS_SECRET_"

// EnvVar returns the environment variable that holds ref for Env:
// HTTPTOOLS_SECRET_<ENVNAME>_<NAME>, upper case, every character other than a
// letter or a digit turned into _.
func EnvVar(ref synth.SecretRef) string {
	return EnvPrefix + envPart(ref.EnvName) + "_" + envPart(ref.Name)
}

// TokenVar names the environment variable a person could hold the access
// token of a tool's connection in: HTTPTOOLS_TOKEN_<CONNECTION>.
func TokenVar(connection string) string { return "HTTPTOOLS_TOKEN_" + envPart(connection) }

func envPart(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}

// Env resolves secrets from the process environment, for local use.
type Env struct {
	// LookupEnv reads a variable; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

var _ synth.SecretResolver = Env{}

// ResolveSecret reads EnvVar(ref). A missing or empty variable is
// synth.ErrSecretNotFound.
func (e Env) ResolveSecret(_ context.Context, ref synth.SecretRef) (string, error) {
	lookup := e.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if v, ok := lookup(EnvVar(ref)); ok && v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s is not set: %w", EnvVar(ref), synth.ErrSecretNotFound)
}

// Map resolves secrets from a map keyed "envName/name"; for tests and the
// CLI's --secret flags. A nil Map resolves nothing.
type Map map[string]string

var _ synth.SecretResolver = Map{}

// ResolveSecret looks up ref.String().
func (m Map) ResolveSecret(_ context.Context, ref synth.SecretRef) (string, error) {
	if v, ok := m[ref.String()]; ok {
		return v, nil
	}
	return "", fmt.Errorf("no secret %s: %w", ref, synth.ErrSecretNotFound)
}

// Chain asks each resolver in turn; the first that has the secret wins. A
// resolver's error other than synth.ErrSecretNotFound stops the chain.
type Chain []synth.SecretResolver

var _ synth.SecretResolver = Chain{}

// ResolveSecret implements synth.SecretResolver.
func (c Chain) ResolveSecret(ctx context.Context, ref synth.SecretRef) (string, error) {
	for _, r := range c {
		v, err := r.ResolveSecret(ctx, ref)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, synth.ErrSecretNotFound) {
			return "", err
		}
	}
	return "", fmt.Errorf("no secret %s: %w", ref, synth.ErrSecretNotFound)
}
