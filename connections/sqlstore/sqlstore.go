package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/httptools/httptools/connections"

	"github.com/httptools/httptools/synth"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go
)

// SQLStore is the Store on SQLite (embedded, the default) or PostgreSQL
// (several replicas). Tokens, refresh tokens, PKCE verifiers and secret
// values are sealed with the keyring; each sealed value is bound to its row.
type SQLStore struct {
	db      *sql.DB
	pg      bool
	keys    *Keyring
	timeout time.Duration // Options.Timeout
}

// DefaultStoreTimeout bounds each store call.
const DefaultStoreTimeout = 5 * time.Second

// bound gives a store call its timeout.
// migrateTimeout bounds bringing the tables up to date, which may wait for
// other replicas doing the same.
const migrateTimeout = 30 * time.Second

func (s *SQLStore) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
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
	// Timeout bounds every call, so that a frozen database holds no
	// caller longer than this; 0 means DefaultStoreTimeout.
	Timeout time.Duration
}

// Open opens "sqlite:PATH" or "postgres://…" with opts (the zero value:
// the defaults), runs the migrations and checks that the database takes a
// write. Its errors name the database (a SQLite file, or PostgreSQL's host
// and database, never the user or password) and the cause: a missing or
// read-only folder or file, a refused connection.
func Open(ctx context.Context, dsn string, keys *Keyring, opts Options) (*SQLStore, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultStoreTimeout
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
		s = &SQLStore{db: db, keys: keys, timeout: opts.Timeout}
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		name = "postgres " + pgName(dsn)
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", name, err)
		}
		db.SetMaxOpenConns(opts.MaxConns)
		db.SetMaxIdleConns(opts.MaxConns)
		db.SetConnMaxIdleTime(time.Minute) // a quiet replica gives its connections back
		s = &SQLStore{db: db, pg: true, keys: keys, timeout: opts.Timeout}
	default:
		scheme, _, _ := strings.Cut(dsn, ":") // never the rest: it may hold a password
		return nil, fmt.Errorf("connections: database kind %q: want sqlite:PATH or postgres://…", scheme)
	}
	// Migrating may wait for another replica's migration: longer than
	// one statement's bound.
	mctx, cancel := context.WithTimeout(ctx, max(migrateTimeout, s.timeout))
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
