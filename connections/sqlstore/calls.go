package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/internal/ids"
)

// The call history (package history writes it, off the request path).

// AppendCalls writes a batch of call records in one statement.
func (s *SQLStore) AppendCalls(ctx context.Context, recs []history.Record) error {
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var q strings.Builder
	q.WriteString(`INSERT INTO calls (id, tenant, tool, key_id, person, at, status, duration_ms, attempts, code, reason, request, answer) VALUES `)
	args := make([]any, 0, 13*len(recs))
	for i, r := range recs {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		id := r.ID
		if id == "" {
			id = ids.New("call_")
		}
		args = append(args, id, r.Tenant, r.Tool, r.Key, r.Person, ms(r.At), r.Status, r.Duration, r.Attempts, r.Code, r.Reason, r.Request, r.Answer)
	}
	_, err := s.db.ExecContext(ctx, s.q(q.String()), args...)
	return fail("record calls", err)
}

// Calls lists tenant's calls that f selects, newest first.
func (s *SQLStore) Calls(ctx context.Context, tenant string, f history.Filter) ([]history.Record, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	q := `SELECT id, tenant, tool, key_id, person, at, status, duration_ms, attempts, code, reason, request, answer FROM calls WHERE tenant = ?`
	args := []any{tenant}
	if f.Tool != "" {
		q += ` AND tool = ?`
		args = append(args, f.Tool)
	}
	if f.Person != "" {
		q += ` AND person = ?`
		args = append(args, f.Person)
	}
	switch f.Status {
	case "ok":
		q += ` AND code = ''`
	case "error":
		q += ` AND code <> ''`
	}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, ms(f.Since))
	}
	scope, scoped := s.scopeClause(f.Scope)
	q += scope
	args = append(args, scoped...)
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	q += ` ORDER BY at DESC, id LIMIT ?`
	args = append(args, limit)
	return queryAll(ctx, s, "list calls", func(row scanner) (history.Record, error) {
		var r history.Record
		var at int64
		err := row.Scan(&r.ID, &r.Tenant, &r.Tool, &r.Key, &r.Person, &at, &r.Status, &r.Duration, &r.Attempts, &r.Code, &r.Reason, &r.Request, &r.Answer)
		r.At = fromMs(at)
		return r, err
	}, q, args...)
}

// PruneCalls removes the calls made before before, and, past maxRows (0:
// no bound), the oldest of the rest. It returns how many it removed.
func (s *SQLStore) PruneCalls(ctx context.Context, before time.Time, maxRows int) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM calls WHERE at < ?`), ms(before))
	if err != nil {
		return 0, fail("prune calls", err)
	}
	n, _ := res.RowsAffected()
	if maxRows > 0 {
		q := `DELETE FROM calls WHERE id IN (SELECT id FROM calls ORDER BY at DESC, id LIMIT -1 OFFSET ?)` // SQLite: no OFFSET without LIMIT
		if s.pg {
			q = `DELETE FROM calls WHERE id IN (SELECT id FROM calls ORDER BY at DESC, id OFFSET ?)`
		}
		res, err = s.db.ExecContext(ctx, s.q(q), maxRows)
		if err != nil {
			return n, fail("prune calls", err)
		}
		m, _ := res.RowsAffected()
		n += m
	}
	return n, nil
}
