package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/internal/ids"
)

// Connection rows: read, saved, updated under the row lock, revoked.

const connColumns = `id, tenant, app, owner, permissions, scopes, key_id, access_token, refresh_token, expiry, status, last_refresh, last_error, version, created, updated, lease_owner, lease_until, wanted_scopes`

type scanner interface{ Scan(dest ...any) error }

func (s *SQLStore) scanConn(row scanner) (*connections.Record, error) {
	var r connections.Record
	var perms, scopes, wanted, keyID string
	var access, refresh []byte
	var expiry, lastRefresh, created, updated, leaseUntil int64
	err := row.Scan(&r.ID, &r.Tenant, &r.App, &r.Owner, &perms, &scopes, &keyID, &access, &refresh,
		&expiry, &r.Status, &lastRefresh, &r.LastError, &r.Version, &created, &updated, &r.LeaseOwner, &leaseUntil, &wanted)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	_ = json.Unmarshal([]byte(perms), &r.Permissions)
	_ = json.Unmarshal([]byte(scopes), &r.Scopes)
	_ = json.Unmarshal([]byte(wanted), &r.Wanted)
	if r.AccessToken, err = s.open(keyID, access, "connection/"+r.ID+"/access"); err != nil {
		return nil, err
	}
	if r.RefreshToken, err = s.open(keyID, refresh, "connection/"+r.ID+"/refresh"); err != nil {
		return nil, err
	}
	r.Expiry, r.LastRefresh, r.Created, r.Updated, r.LeaseUntil = fromMs(expiry), fromMs(lastRefresh), fromMs(created), fromMs(updated), fromMs(leaseUntil)
	return &r, nil
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
	return queryAll(ctx, s, "list connections", s.scanConn, `SELECT `+connColumns+` FROM connections WHERE tenant = ? ORDER BY app, owner`, tenant)
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
	wanted, _ := json.Marshal(nonNil(next.Wanted))
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO connections (`+connColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, app, owner) DO UPDATE SET permissions = excluded.permissions, scopes = excluded.scopes,
		key_id = excluded.key_id, access_token = excluded.access_token, refresh_token = excluded.refresh_token,
		expiry = excluded.expiry, status = excluded.status, last_refresh = excluded.last_refresh,
		last_error = excluded.last_error, version = excluded.version, updated = excluded.updated,
		lease_owner = excluded.lease_owner, lease_until = excluded.lease_until, wanted_scopes = excluded.wanted_scopes`),
		next.ID, tenant, app, owner, string(perms), string(scopes), s.keys.KeyID(),
		s.seal(next.AccessToken, "connection/"+next.ID+"/access"), s.seal(next.RefreshToken, "connection/"+next.ID+"/refresh"),
		ms(next.Expiry), next.Status, ms(next.LastRefresh), next.LastError, next.Version, ms(next.Created), ms(next.Updated),
		next.LeaseOwner, ms(next.LeaseUntil), string(wanted))
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
