package sqlstore

import (
	"context"
	"fmt"
	"strings"
)

// The one list of the database's tables and how it is brought up to date.

// migrations are the one list of every table on the store's database
// (connections, connect flows, secrets, API keys, console sessions): they
// run in order, once each; never edit one that has shipped.
var migrations = []string{
	`CREATE TABLE connections (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		app TEXT NOT NULL,
		owner TEXT NOT NULL,
		permissions TEXT NOT NULL,
		scopes TEXT NOT NULL,
		key_id TEXT NOT NULL,
		access_token {{BYTES}},
		refresh_token {{BYTES}},
		expiry BIGINT NOT NULL,
		status TEXT NOT NULL,
		last_refresh BIGINT NOT NULL,
		last_error TEXT NOT NULL,
		version BIGINT NOT NULL,
		created BIGINT NOT NULL,
		updated BIGINT NOT NULL,
		UNIQUE (tenant, app, owner)
	);
	CREATE TABLE oauth_states (
		state TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		app TEXT NOT NULL,
		owner TEXT NOT NULL,
		key_id TEXT NOT NULL,
		verifier {{BYTES}} NOT NULL,
		expires BIGINT NOT NULL
	);
	CREATE TABLE secrets (
		tenant TEXT NOT NULL,
		env_name TEXT NOT NULL,
		name TEXT NOT NULL,
		key_id TEXT NOT NULL,
		value {{BYTES}} NOT NULL,
		updated BIGINT NOT NULL,
		PRIMARY KEY (tenant, env_name, name)
	)`,
	`CREATE TABLE api_keys (
		hash TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		created BIGINT NOT NULL
	)`,
	`ALTER TABLE connections ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
	ALTER TABLE connections ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
	CREATE TABLE probes (
		id TEXT PRIMARY KEY,
		at BIGINT NOT NULL
	)`,
	// Keys made before roles keep what they could do: everything.
	`ALTER TABLE api_keys ADD COLUMN id TEXT NOT NULL DEFAULT '';
	ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';
	ALTER TABLE api_keys ADD COLUMN person TEXT NOT NULL DEFAULT '';
	ALTER TABLE api_keys ADD COLUMN revoked BIGINT NOT NULL DEFAULT 0;
	UPDATE api_keys SET id = 'key_' || substr(hash, 1, 16) WHERE id = ''`,
	// The console's sessions: a token's hash → its key's. (IF NOT EXISTS:
	// the service made this table itself before it was the store's.)
	`CREATE TABLE IF NOT EXISTS console_sessions (
		hash TEXT PRIMARY KEY,
		key_hash TEXT NOT NULL,
		created BIGINT NOT NULL,
		expires BIGINT NOT NULL
	)`,
	// Tool policies: one document per tenant, and AllTenants' for every
	// tenant.
	`CREATE TABLE policies (
		tenant TEXT PRIMARY KEY,
		doc TEXT NOT NULL,
		updated BIGINT NOT NULL
	)`,
	// A key may be bound to one toolset.
	`ALTER TABLE api_keys ADD COLUMN toolset TEXT NOT NULL DEFAULT ''`,
	// Approvals: a person's yes to one unattended call, bound to its
	// tenant, tool, person, run and input; and the tools a service key may
	// run unattended without one.
	`CREATE TABLE approvals (
		id TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		tool TEXT NOT NULL,
		person TEXT NOT NULL,
		run TEXT NOT NULL,
		input_hash TEXT NOT NULL,
		input TEXT NOT NULL,
		state TEXT NOT NULL,
		requested_by TEXT NOT NULL,
		decided_by TEXT NOT NULL DEFAULT '',
		created BIGINT NOT NULL,
		expires BIGINT NOT NULL,
		decided BIGINT NOT NULL DEFAULT 0,
		used BIGINT NOT NULL DEFAULT 0
	);
	ALTER TABLE api_keys ADD COLUMN unattended_tools TEXT NOT NULL DEFAULT ''`,
	// The call history: one row per call, its texts redacted and cut.
	`CREATE TABLE calls (
		id TEXT NOT NULL,
		tenant TEXT NOT NULL,
		tool TEXT NOT NULL,
		key_id TEXT NOT NULL,
		person TEXT NOT NULL,
		at BIGINT NOT NULL,
		status INTEGER NOT NULL,
		duration_ms BIGINT NOT NULL,
		attempts INTEGER NOT NULL,
		code TEXT NOT NULL,
		reason TEXT NOT NULL,
		request TEXT NOT NULL,
		answer TEXT NOT NULL
	);
	CREATE INDEX calls_tenant_at ON calls (tenant, at)`,
	// Kept results: the whole of answers cut to a model's budget, for a
	// while, for every replica.
	`CREATE TABLE kept_results (
		id TEXT PRIMARY KEY,
		owner TEXT NOT NULL,
		media TEXT NOT NULL,
		page_size INTEGER NOT NULL,
		body TEXT NOT NULL,
		expires BIGINT NOT NULL
	)`,
	// The scopes a remote MCP server asked a connection for beyond those
	// granted (a step-up), asked on its next authorization.
	`ALTER TABLE connections ADD COLUMN wanted_scopes TEXT NOT NULL DEFAULT '[]'`,
}

func (s *SQLStore) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.pg {
		// Replicas starting together migrate one at a time; the lock ends
		// with the transaction. It is the schema's: stores of other
		// schemas on the same server (other services, tests) do not
		// queue behind each other.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7413269, hashtext(current_schema()))`); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return err
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return err
	}
	bytes := "BLOB"
	if s.pg {
		bytes = "BYTEA"
	}
	for v := have + 1; v <= len(migrations); v++ {
		for _, stmt := range strings.Split(migrations[v-1], ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, strings.ReplaceAll(stmt, "{{BYTES}}", bytes)); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version) VALUES (?)`), v); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// queryAll runs query (? placeholders) and scans every row with scan; op
// names what it was in a failure.
func queryAll[T any](ctx context.Context, s *SQLStore, op string, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fail(op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fail(op, err)
		}
		out = append(out, v)
	}
	return out, fail(op, rows.Err())
}

// q rewrites ? placeholders as $1, $2… for PostgreSQL.
func (s *SQLStore) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
