package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/httptools/httptools/connections"
)

// Tool policies: a document per tenant (package policy reads it), and one
// for every tenant under AllTenants. The store keeps the text as it was
// put; it checks nothing of it.

// AllTenants is the tenant name of the policy every tenant is under.
const AllTenants = "*"

// Policy returns tenant's policy document, or connections.ErrNotFound when
// it has none.
func (s *SQLStore) Policy(ctx context.Context, tenant string) ([]byte, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var doc string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT doc FROM policies WHERE tenant = ?`), tenant).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	if err != nil {
		return nil, fail("read policy", err)
	}
	return []byte(doc), nil
}

// PutPolicy sets tenant's policy document; nil removes it.
func (s *SQLStore) PutPolicy(ctx context.Context, tenant string, doc []byte) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if doc == nil {
		_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM policies WHERE tenant = ?`), tenant)
		return fail("remove policy", err)
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO policies (tenant, doc, updated) VALUES (?, ?, ?)
		ON CONFLICT (tenant) DO UPDATE SET doc = excluded.doc, updated = excluded.updated`), tenant, string(doc), time.Now().UnixMilli())
	return fail("store policy", err)
}
