package auth_test

import (
	"context"
	"fmt"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/synth"
)

// A chain asks each resolver in turn: a tenant's stored secrets first (a
// map here), then the process environment.
func ExampleChain() {
	env := auth.Env{LookupEnv: func(k string) (string, bool) {
		return "from-env", k == "HTTPTOOLS_SECRET_PRODUCTION_SLACK_TOKEN"
	}}
	chain := auth.Chain{auth.Map{"production/GITHUB_TOKEN": "from-store"}, env}
	for _, name := range []string{"GITHUB_TOKEN", "SLACK_TOKEN", "MISSING"} {
		v, err := chain.ResolveSecret(context.Background(), synth.SecretRef{EnvName: "production", Name: name})
		fmt.Println(name, v, err)
	}
	fmt.Println(auth.EnvVar(synth.SecretRef{EnvName: "production", Name: "slack.bot-token"}))
	// Output:
	// GITHUB_TOKEN from-store <nil>
	// SLACK_TOKEN from-env <nil>
	// MISSING  no secret production/MISSING: secret not found
	// HTTPTOOLS_SECRET_PRODUCTION_SLACK_BOT_TOKEN
}
