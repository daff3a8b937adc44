package sqlstore

import (
	"context"
	"testing"

	"github.com/httptools/httptools/synth"
)

// TestDeleteSecretIfKeepsANewerPut: DeleteSecretIf deletes a secret whose
// value matches (1 deleted), keeps one that does not (0), and keeps a value
// put between its read and its delete (another replica's: 0 deleted, the
// new value stays), on both databases.
func TestDeleteSecretIfKeepsANewerPut(t *testing.T) {
	ctx := context.Background()
	ref := synth.SecretRef{EnvName: "mcp", Name: "REG_1"}
	eachStore(t, func(t *testing.T, s *SQLStore) {
		s.PutSecret(ctx, "t", ref, "client-1")
		if ok, err := s.DeleteSecretIf(ctx, "t", ref, func(v string) bool { return v == "client-2" }); ok || err != nil {
			t.Fatalf("a value that does not match: deleted %v, %v", ok, err)
		}
		ok, err := s.DeleteSecretIf(ctx, "t", ref, func(v string) bool {
			s.PutSecret(ctx, "t", ref, "client-2") // another replica registers meanwhile
			return v == "client-1"
		})
		if v, _ := s.Secret(ctx, "t", ref); ok || err != nil || v != "client-2" {
			t.Fatalf("a put between read and delete: deleted %v (%v), left %q; want false and client-2", ok, err, v)
		}
		if ok, err := s.DeleteSecretIf(ctx, "t", ref, func(v string) bool { return v == "client-2" }); !ok || err != nil {
			t.Fatalf("a matching value: deleted %v, %v", ok, err)
		}
		if _, err := s.Secret(ctx, "t", ref); err == nil {
			t.Error("the secret is still there")
		}
	})
}
