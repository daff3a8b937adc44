package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/internal/ids"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/httptools/httptools/synth"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go
)

// SQLStore is the Store on SQLite (embedded, the default) or PostgreSQL
// (several replicas). Tokens, refresh tokens, PKCE verifiers and secret
// values are sealed with the keyring; each sealed value is bound to its row.
type SQLStore struct {
	db   *sql.DB
	pg   bool
	keys *Keyring
	// Timeout bounds every call, so that a frozen database holds no caller
	// longer than this; 0 means DefaultStoreTimeout.
	Timeout time.Duration
}

// DefaultStoreTimeout bounds each store call.
const DefaultStoreTimeout = 5 * time.Second

// bound gives a store call its timeout.
func (s *SQLStore) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	d := s.Timeout
	if d <= 0 {
		d = DefaultStoreTimeout
	}
	return context.WithTimeout(ctx, d)
}

// fail wraps a driver error as a StoreError; not-found errors pass as they
// are.
func fail(op string, err error) error {
	if err == nil || errors.Is(err, connections.ErrNotFound) || errors.Is(err, synth.ErrSecretNotFound) {
		return err
	}
	var se *connections.StoreError
	if errors.As(err, &se) {
		return err
	}
	return &connections.StoreError{Op: op, Err: err}
}

var (
	_ connections.ConnectionStore = (*SQLStore)(nil)
	_ connections.StateStore      = (*SQLStore)(nil)
	_ connections.SecretStore     = (*SQLStore)(nil)
)

// DefaultMaxConns is a PostgreSQL store's pool size when Options.MaxConns
// is 0: N replicas need N × it (plus PostgreSQL's reserved connections and
// any other client) within the server's max_connections, 100 by default.
const DefaultMaxConns = 10

// Options tune Open. The zero value means the defaults.
type Options struct {
	// MaxConns bounds a PostgreSQL store's open connections; 0 means
	// DefaultMaxConns. (SQLite ignores it.)
	MaxConns int
}

// Open opens "sqlite:PATH" or "postgres://…", runs the migrations and checks
// that the database takes a write. Its errors name the database (a SQLite
// file, or PostgreSQL's host and database, never the user or password) and
// the cause: a missing or read-only folder or file, a refused connection.
func Open(ctx context.Context, dsn string, keys *Keyring) (*SQLStore, error) {
	return OpenOptions(ctx, dsn, keys, Options{})
}

// OpenOptions is Open with options.
func OpenOptions(ctx context.Context, dsn string, keys *Keyring, opts Options) (*SQLStore, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	var s *SQLStore
	var name string
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		name = "sqlite:" + path
		if err := CheckSQLitePath(path); err != nil {
			return nil, fmt.Errorf("store %s: %w", name, err)
		}
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", name, err)
		}
		s = &SQLStore{db: db, keys: keys}
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		name = "postgres " + pgName(dsn)
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", name, err)
		}
		db.SetMaxOpenConns(opts.MaxConns)
		db.SetMaxIdleConns(opts.MaxConns)
		db.SetConnMaxIdleTime(time.Minute) // a quiet replica gives its connections back
		s = &SQLStore{db: db, pg: true, keys: keys}
	default:
		scheme, _, _ := strings.Cut(dsn, ":") // never the rest: it may hold a password
		return nil, fmt.Errorf("connections: database kind %q: want sqlite:PATH or postgres://…", scheme)
	}
	mctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.migrate(mctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("store %s: cannot set up its tables: %s", name, words(err))
	}
	if err := s.Ping(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("store %s: takes no writes: %s", name, words(err))
	}
	return s, nil
}

// CheckSQLitePath names what would stop SQLite from opening path for
// writing (a missing or read-only folder, a read-only file, a folder in its
// place), before SQLite says only "unable to open database file (14)".
func CheckSQLitePath(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("its folder %s does not exist or cannot be read (%v): create it, or point --db elsewhere", dir, errors.Unwrap(err))
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a folder, not a database file", path)
		}
		if f, err := os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return fmt.Errorf("the file cannot be opened for writing (%v): check its owner and mode", errors.Unwrap(err))
		} else {
			f.Close()
		}
	}
	// SQLite writes a -wal and -shm file beside the database.
	probe, err := os.CreateTemp(dir, ".httptools-probe-*")
	if err != nil {
		return fmt.Errorf("its folder %s is not writable (%v): SQLite needs to create files beside the database", dir, errors.Unwrap(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// pgName is "host/database" of a DSN, never its user or password.
func pgName(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return u.Host + u.Path
}

// words is a driver error's text, for the operator at start-up.
func words(err error) string {
	var se *connections.StoreError
	if errors.As(err, &se) {
		err = se.Err
	}
	return err.Error()
}

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
}

func (s *SQLStore) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.pg {
		// Replicas starting together migrate one at a time; the lock ends
		// with the transaction.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7413269)`); err != nil {
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

// Ping implements Store: the database answers and takes a write (a
// read-only file or a full disk is not ready).
func (s *SQLStore) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO probes (id, at) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at`), "ready", ms(time.Now()))
	return fail("write check", err)
}

// StoreNow implements connections.StoreClock: PostgreSQL's own clock, so
// that replicas with skewed clocks agree on every lease; on SQLite, whose
// processes share one machine, its clock.
func (s *SQLStore) StoreNow(ctx context.Context) (time.Time, error) {
	if !s.pg {
		return time.Now(), nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var t time.Time
	err := s.db.QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t, fail("read the clock", err)
}

// Close implements Store.
func (s *SQLStore) Close() error { return s.db.Close() }

// DB returns the store's database, for tests that read raw rows.
func (s *SQLStore) DB() *sql.DB { return s.db }

// Postgres reports whether the store is on PostgreSQL (else SQLite).
func (s *SQLStore) Postgres() bool { return s.pg }

const connColumns = `id, tenant, app, owner, permissions, scopes, key_id, access_token, refresh_token, expiry, status, last_refresh, last_error, version, created, updated, lease_owner, lease_until`

type scanner interface{ Scan(dest ...any) error }

func (s *SQLStore) scanConn(row scanner) (*connections.Record, error) {
	var r connections.Record
	var perms, scopes, keyID string
	var access, refresh []byte
	var expiry, lastRefresh, created, updated, leaseUntil int64
	err := row.Scan(&r.ID, &r.Tenant, &r.App, &r.Owner, &perms, &scopes, &keyID, &access, &refresh,
		&expiry, &r.Status, &lastRefresh, &r.LastError, &r.Version, &created, &updated, &r.LeaseOwner, &leaseUntil)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	_ = json.Unmarshal([]byte(perms), &r.Permissions)
	_ = json.Unmarshal([]byte(scopes), &r.Scopes)
	if r.AccessToken, err = s.open(keyID, access, "connection/"+r.ID+"/access"); err != nil {
		return nil, err
	}
	if r.RefreshToken, err = s.open(keyID, refresh, "connection/"+r.ID+"/refresh"); err != nil {
		return nil, err
	}
	r.Expiry, r.LastRefresh, r.Created, r.Updated, r.LeaseUntil = fromMs(expiry), fromMs(lastRefresh), fromMs(created), fromMs(updated), fromMs(leaseUntil)
	return &r, nil
}

func (s *SQLStore) seal(v, aad string) []byte {
	if v == "" {
		return nil
	}
	return s.keys.Seal([]byte(v), []byte(aad))
}

func (s *SQLStore) open(keyID string, sealed []byte, aad string) (string, error) {
	if len(sealed) == 0 {
		return "", nil
	}
	b, err := s.keys.Open(keyID, sealed, []byte(aad))
	if err != nil {
		return "", fmt.Errorf("connections: cannot decrypt %s: %w", aad, err)
	}
	return string(b), nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// Connection implements Store.
func (s *SQLStore) Connection(ctx context.Context, tenant, app, owner string) (*connections.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	row := s.db.QueryRowContext(ctx, s.q(`SELECT `+connColumns+` FROM connections WHERE tenant = ? AND app = ? AND owner = ?`), tenant, app, owner)
	rec, err := s.scanConn(row)
	return rec, fail("read connection", err)
}

// Connections implements Store.
func (s *SQLStore) Connections(ctx context.Context, tenant string) ([]*connections.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+connColumns+` FROM connections WHERE tenant = ? ORDER BY app, owner`), tenant)
	if err != nil {
		return nil, fail("list connections", err)
	}
	defer rows.Close()
	var out []*connections.Record
	for rows.Next() {
		r, err := s.scanConn(rows)
		if err != nil {
			return nil, fail("list connections", err)
		}
		out = append(out, r)
	}
	return out, fail("list connections", rows.Err())
}

// SaveConnection implements Store; UpdateLocked keeps the row's id,
// creation time and version sequence.
func (s *SQLStore) SaveConnection(ctx context.Context, rec *connections.Record) (*connections.Record, error) {
	return s.UpdateLocked(ctx, rec.Tenant, rec.App, rec.Owner, func(*connections.Record) (*connections.Record, error) {
		next := *rec
		return &next, nil
	})
}

// UpdateLocked implements Store. fn gets nil when there is no connection yet.
func (s *SQLStore) UpdateLocked(ctx context.Context, tenant, app, owner string, fn func(cur *connections.Record) (*connections.Record, error)) (*connections.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rec, fnErr, err := s.updateLocked(ctx, tenant, app, owner, fn)
	if err != nil {
		return nil, fail("write connection", err)
	}
	return rec, fnErr
}

// updateLocked runs UpdateLocked's transaction; err is the database's, fnErr
// fn's own.
func (s *SQLStore) updateLocked(ctx context.Context, tenant, app, owner string, fn func(cur *connections.Record) (*connections.Record, error)) (rec *connections.Record, fnErr, err error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE on SQLite (_txlock)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	lock := ""
	if s.pg {
		lock = " FOR UPDATE"
	}
	cur, err := s.scanConn(tx.QueryRowContext(ctx, s.q(`SELECT `+connColumns+` FROM connections WHERE tenant = ? AND app = ? AND owner = ?`+lock), tenant, app, owner))
	if errors.Is(err, connections.ErrNotFound) {
		cur, err = nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var snapshot *connections.Record
	if cur != nil {
		c := *cur
		snapshot = &c
	}
	next, fnErr := fn(snapshot)
	if next == nil {
		if fnErr != nil {
			return cur, fnErr, nil
		}
		return cur, nil, tx.Commit()
	}
	now := time.Now()
	next.Tenant, next.App, next.Owner = tenant, app, owner
	if cur != nil {
		next.ID, next.Created, next.Version = cur.ID, cur.Created, cur.Version
	} else {
		next.ID, next.Created, next.Version = ids.New("conn_"), now, 0
	}
	next.Version++
	next.Updated = now
	if next.Status == "" {
		next.Status = connections.StatusActive
	}
	perms, _ := json.Marshal(nonNil(next.Permissions))
	scopes, _ := json.Marshal(nonNil(next.Scopes))
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO connections (`+connColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, app, owner) DO UPDATE SET permissions = excluded.permissions, scopes = excluded.scopes,
		key_id = excluded.key_id, access_token = excluded.access_token, refresh_token = excluded.refresh_token,
		expiry = excluded.expiry, status = excluded.status, last_refresh = excluded.last_refresh,
		last_error = excluded.last_error, version = excluded.version, updated = excluded.updated,
		lease_owner = excluded.lease_owner, lease_until = excluded.lease_until`),
		next.ID, tenant, app, owner, string(perms), string(scopes), s.keys.KeyID(),
		s.seal(next.AccessToken, "connection/"+next.ID+"/access"), s.seal(next.RefreshToken, "connection/"+next.ID+"/refresh"),
		ms(next.Expiry), next.Status, ms(next.LastRefresh), next.LastError, next.Version, ms(next.Created), ms(next.Updated),
		next.LeaseOwner, ms(next.LeaseUntil))
	if err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, nil, err
	}
	return next, fnErr, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// RevokeConnection implements Store.
func (s *SQLStore) RevokeConnection(ctx context.Context, tenant, id string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE connections SET status = ?, access_token = NULL, refresh_token = NULL, version = version + 1, updated = ? WHERE tenant = ? AND id = ?`),
		connections.StatusRevoked, ms(time.Now()), tenant, id)
	if err != nil {
		return fail("revoke connection", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}

// PutState implements Store.
func (s *SQLStore) PutState(ctx context.Context, st *connections.State) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO oauth_states (state, tenant, app, owner, key_id, verifier, expires) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		st.State, st.Tenant, st.App, st.Owner, s.keys.KeyID(), s.seal(st.Verifier, "state/"+st.State), ms(st.Expires))
	return fail("store connect state", err)
}

// TakeState implements Store: the DELETE … RETURNING makes a state single
// use even when two callbacks race.
func (s *SQLStore) TakeState(ctx context.Context, state string) (*connections.State, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var st connections.State
	var keyID string
	var verifier []byte
	var expires int64
	err := s.db.QueryRowContext(ctx, s.q(`DELETE FROM oauth_states WHERE state = ? RETURNING state, tenant, app, owner, key_id, verifier, expires`), state).
		Scan(&st.State, &st.Tenant, &st.App, &st.Owner, &keyID, &verifier, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	if err != nil {
		return nil, fail("take connect state", err)
	}
	st.Expires = fromMs(expires)
	if st.Verifier, err = s.open(keyID, verifier, "state/"+st.State); err != nil {
		return nil, fail("take connect state", err)
	}
	return &st, nil
}

func secretAAD(tenant string, ref synth.SecretRef) string {
	return "secret/" + tenant + "/" + ref.EnvName + "/" + ref.Name
}

// PutSecret implements Store.
func (s *SQLStore) PutSecret(ctx context.Context, tenant string, ref synth.SecretRef, value string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO secrets (tenant, env_name, name, key_id, value, updated) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, env_name, name) DO UPDATE SET key_id = excluded.key_id, value = excluded.value, updated = excluded.updated`),
		tenant, ref.EnvName, ref.Name, s.keys.KeyID(), s.keys.Seal([]byte(value), []byte(secretAAD(tenant, ref))), ms(time.Now()))
	return fail("store secret", err)
}

// Secret implements Store.
func (s *SQLStore) Secret(ctx context.Context, tenant string, ref synth.SecretRef) (string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var keyID string
	var sealed []byte
	err := s.db.QueryRowContext(ctx, s.q(`SELECT key_id, value FROM secrets WHERE tenant = ? AND env_name = ? AND name = ?`), tenant, ref.EnvName, ref.Name).Scan(&keyID, &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("no secret %s in tenant %s: %w", ref, tenant, synth.ErrSecretNotFound)
	}
	if err != nil {
		return "", fail("read secret", err)
	}
	b, err := s.keys.Open(keyID, sealed, []byte(secretAAD(tenant, ref)))
	if err != nil {
		return "", fail("decrypt secret", err)
	}
	return string(b), nil
}

// SecretRefs implements Store.
func (s *SQLStore) SecretRefs(ctx context.Context, tenant string) ([]synth.SecretRef, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT env_name, name FROM secrets WHERE tenant = ? ORDER BY env_name, name`), tenant)
	if err != nil {
		return nil, fail("list secrets", err)
	}
	defer rows.Close()
	var out []synth.SecretRef
	for rows.Next() {
		var r synth.SecretRef
		if err := rows.Scan(&r.EnvName, &r.Name); err != nil {
			return nil, fail("list secrets", err)
		}
		out = append(out, r)
	}
	return out, fail("list secrets", rows.Err())
}

// DeleteSecret implements Store.
func (s *SQLStore) DeleteSecret(ctx context.Context, tenant string, ref synth.SecretRef) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM secrets WHERE tenant = ? AND env_name = ? AND name = ?`), tenant, ref.EnvName, ref.Name)
	if err != nil {
		return fail("delete secret", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}
