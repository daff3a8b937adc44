package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/httptools/httptools/connections"
)

// APIKeyPrefix starts every API key.
const APIKeyPrefix = "htk_"

// Key roles.
const (
	// RoleAdmin manages secrets, keys and company connections, and calls
	// tools as a service key does.
	RoleAdmin = "admin"
	// RoleService is a kernel's key: it calls tools and names the person
	// and unattended of each call.
	RoleService = "service"
	// RolePerson is one person's key: calls act for that person only, and
	// it sees and revokes its own connections only.
	RolePerson = "person"
)

// APIKey is what a key is: never the key itself, which is shown once.
type APIKey struct {
	ID      string    `json:"id"`
	Tenant  string    `json:"tenant"`
	Role    string    `json:"role"`
	Person  string    `json:"person,omitempty"`
	Created time.Time `json:"created"`
}

// CheckRole reports whether role and person make a key: person keys name
// their person, others none.
func CheckRole(role, person string) error {
	switch {
	case role != RoleAdmin && role != RoleService && role != RolePerson:
		return fmt.Errorf("role %q: want admin, service or person", role)
	case role == RolePerson && person == "":
		return errors.New("a person key names its person: add --person ID")
	case role != RolePerson && person != "":
		return fmt.Errorf("only a person key names a person (this one is %s)", role)
	}
	return nil
}

// KeyStore keeps API keys, stored hashed. Errors are connections.ErrNotFound
// for an unknown key or id, or wrap connections.ErrUnavailable.
// It must be safe for concurrent use: every request checks its key through it.
type KeyStore interface {
	// CreateAPIKey makes a key for tenant with a role and returns it once.
	CreateAPIKey(ctx context.Context, tenant, role, person string) (string, *APIKey, error)
	// KeyOf returns what a key is; unknown or revoked is ErrNotFound.
	KeyOf(ctx context.Context, key string) (*APIKey, error)
	// APIKeys lists a tenant's keys not revoked ("" lists every tenant's).
	APIKeys(ctx context.Context, tenant string) ([]*APIKey, error)
	// RevokeAPIKey revokes a key by id within tenant ("" matches any).
	RevokeAPIKey(ctx context.Context, tenant, id string) error
}

// SQLKeys is the KeyStore on a SQLite or PostgreSQL database: the SQL
// store's (sqlstore.SQLStore.DB), or any other.
type SQLKeys struct {
	db *sql.DB
	pg bool
	// Timeout bounds every call; 0 means 5 s.
	Timeout time.Duration
}

// NewSQLKeys returns the KeyStore on db (postgres: a PostgreSQL database,
// else SQLite), making its table if the database has none.
func NewSQLKeys(ctx context.Context, db *sql.DB, postgres bool) (*SQLKeys, error) {
	k := &SQLKeys{db: db, pg: postgres}
	ctx, cancel := k.bound(ctx)
	defer cancel()
	// The table as sqlstore's migrations leave it.
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS api_keys (
		hash TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		created BIGINT NOT NULL,
		id TEXT NOT NULL DEFAULT '',
		role TEXT NOT NULL DEFAULT 'admin',
		person TEXT NOT NULL DEFAULT '',
		revoked BIGINT NOT NULL DEFAULT 0
	)`)
	if err != nil {
		return nil, &connections.StoreError{Op: "set up API keys", Err: err}
	}
	// The console's sessions (sessions.go): a token's hash → its key's.
	_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS console_sessions (
		hash TEXT PRIMARY KEY,
		key_hash TEXT NOT NULL,
		created BIGINT NOT NULL,
		expires BIGINT NOT NULL
	)`)
	if err != nil {
		return nil, &connections.StoreError{Op: "set up console sessions", Err: err}
	}
	return k, nil
}

var _ KeyStore = (*SQLKeys)(nil)

func (k *SQLKeys) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	d := k.Timeout
	if d <= 0 {
		d = 5 * time.Second
	}
	return context.WithTimeout(ctx, d)
}

// q rewrites ? placeholders as $1, $2… for PostgreSQL.
func (k *SQLKeys) q(query string) string {
	if !k.pg {
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

func keyFail(op string, err error) error {
	if err == nil {
		return nil
	}
	return &connections.StoreError{Op: op, Err: err}
}

// CreateAPIKey makes a new API key for tenant with a role (person keys name
// their person) and stores only its SHA-256: the key is returned once and
// can never be read back.
func (k *SQLKeys) CreateAPIKey(ctx context.Context, tenant, role, person string) (string, *APIKey, error) {
	if tenant == "" {
		return "", nil, errors.New("an API key needs a tenant")
	}
	if err := CheckRole(role, person); err != nil {
		return "", nil, err
	}
	b := make([]byte, 32)
	rand.Read(b)
	key := APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	h := keyHash(key)
	rec := &APIKey{ID: "key_" + h[:16], Tenant: tenant, Role: role, Person: person, Created: time.UnixMilli(time.Now().UnixMilli())}
	ctx, cancel := k.bound(ctx)
	defer cancel()
	_, err := k.db.ExecContext(ctx, k.q(`INSERT INTO api_keys (hash, tenant, created, id, role, person) VALUES (?, ?, ?, ?, ?, ?)`),
		h, tenant, rec.Created.UnixMilli(), rec.ID, role, person)
	if err != nil {
		return "", nil, keyFail("store API key", err)
	}
	return key, rec, nil
}

// KeyOf returns what an API key is, or ErrNotFound for an unknown or
// revoked key. The key is 256 random bits, so one SHA-256 is the right
// hash: there is nothing to brute-force.
func (k *SQLKeys) KeyOf(ctx context.Context, key string) (*APIKey, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	var rec APIKey
	var created int64
	err := k.db.QueryRowContext(ctx, k.q(`SELECT id, tenant, role, person, created FROM api_keys WHERE hash = ? AND revoked = 0`), keyHash(key)).
		Scan(&rec.ID, &rec.Tenant, &rec.Role, &rec.Person, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	if err != nil {
		return nil, keyFail("check API key", err)
	}
	rec.Created = time.UnixMilli(created)
	return &rec, nil
}

// APIKeys lists a tenant's keys that are not revoked ("" lists every
// tenant's, for the CLI).
func (k *SQLKeys) APIKeys(ctx context.Context, tenant string) ([]*APIKey, error) {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	q := `SELECT id, tenant, role, person, created FROM api_keys WHERE revoked = 0`
	args := []any{}
	if tenant != "" {
		q += ` AND tenant = ?`
		args = append(args, tenant)
	}
	rows, err := k.db.QueryContext(ctx, k.q(q+` ORDER BY tenant, created, id`), args...)
	if err != nil {
		return nil, keyFail("list API keys", err)
	}
	defer rows.Close()
	var out []*APIKey
	for rows.Next() {
		var rec APIKey
		var created int64
		if err := rows.Scan(&rec.ID, &rec.Tenant, &rec.Role, &rec.Person, &created); err != nil {
			return nil, keyFail("list API keys", err)
		}
		rec.Created = time.UnixMilli(created)
		out = append(out, &rec)
	}
	return out, keyFail("list API keys", rows.Err())
}

// RevokeAPIKey revokes a key by id; tenant "" matches any tenant (the CLI).
// An unknown id, or another tenant's, is ErrNotFound.
func (k *SQLKeys) RevokeAPIKey(ctx context.Context, tenant, id string) error {
	ctx, cancel := k.bound(ctx)
	defer cancel()
	q := `UPDATE api_keys SET revoked = ? WHERE id = ? AND revoked = 0`
	args := []any{time.Now().UnixMilli(), id}
	if tenant != "" {
		q += ` AND tenant = ?`
		args = append(args, tenant)
	}
	res, err := k.db.ExecContext(ctx, k.q(q), args...)
	if err != nil {
		return keyFail("revoke API key", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
