package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/httptools/httptools/auth"
	"github.com/httptools/httptools/connections"
	"github.com/httptools/httptools/history"
	"github.com/httptools/httptools/internal/ids"
)

// Approvals: a person's yes to one unattended call. A request is made
// pending; a person decides it once (approved or denied); an approved one
// is used once, by the call it was made for, before it expires.

// CreateApproval records a pending request and returns it with its id.
func (s *SQLStore) CreateApproval(ctx context.Context, a *auth.Approval) (*auth.Approval, error) {
	rec := *a
	rec.ID = ids.New("apr_")
	rec.State = auth.ApprovalPending
	if rec.Created.IsZero() {
		rec.Created = time.Now()
	}
	rec.Created = time.UnixMilli(rec.Created.UnixMilli())
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO approvals (id, tenant, tool, person, run, input_hash, input, state, requested_by, created, expires)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		rec.ID, rec.Tenant, rec.Tool, rec.Person, rec.Run, rec.InputHash, rec.Input, rec.State, rec.RequestedBy, ms(rec.Created), ms(rec.Expires))
	if err != nil {
		return nil, fail("record approval request", err)
	}
	return &rec, nil
}

const approvalColumns = `id, tenant, tool, person, run, input_hash, input, state, requested_by, decided_by, created, expires, decided, used`

func scanApproval(row scanner) (*auth.Approval, error) {
	var a auth.Approval
	var created, expires, decided, used int64
	if err := row.Scan(&a.ID, &a.Tenant, &a.Tool, &a.Person, &a.Run, &a.InputHash, &a.Input, &a.State, &a.RequestedBy, &a.DecidedBy, &created, &expires, &decided, &used); err != nil {
		return nil, err
	}
	a.Created, a.Expires, a.Decided, a.Used = fromMs(created), fromMs(expires), fromMs(decided), fromMs(used)
	return &a, nil
}

// Approval returns tenant's approval id; another tenant's, or none, is
// connections.ErrNotFound.
func (s *SQLStore) Approval(ctx context.Context, tenant, id string) (*auth.Approval, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	a, err := scanApproval(s.db.QueryRowContext(ctx, s.q(`SELECT `+approvalColumns+` FROM approvals WHERE id = ? AND tenant = ?`), id, tenant))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, connections.ErrNotFound
	}
	return a, fail("read approval", err)
}

// Approvals lists tenant's approvals of state ("" for any), newest first,
// at most 200; person "" for every person's; of the tools scope lets
// through (nil: every tool), before the 200.
func (s *SQLStore) Approvals(ctx context.Context, tenant, state, person string, scope *history.Scope) ([]*auth.Approval, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	q := `SELECT ` + approvalColumns + ` FROM approvals WHERE tenant = ?`
	args := []any{tenant}
	if state != "" {
		q += ` AND state = ?`
		args = append(args, state)
	}
	if person != "" {
		q += ` AND person = ?`
		args = append(args, person)
	}
	scoped, sargs := s.scopeClause(scope)
	q += scoped
	args = append(args, sargs...)
	return queryAll(ctx, s, "list approvals", scanApproval, q+` ORDER BY created DESC, id LIMIT 200`, args...)
}

// DecideApproval approves or denies (state) tenant's pending approval id,
// by the key decidedBy, at at (the server's clock); it is ErrNotFound when
// there is none pending then (a decided, used or expired one is decided no
// more).
func (s *SQLStore) DecideApproval(ctx context.Context, tenant, id, state, decidedBy string, at time.Time) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	now := at.UnixMilli()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE approvals SET state = ?, decided_by = ?, decided = ? WHERE id = ? AND tenant = ? AND state = ? AND expires > ?`),
		state, decidedBy, now, id, tenant, auth.ApprovalPending, now)
	if err != nil {
		return fail("decide approval", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}

// UseApproval spends tenant's approved approval id, once, at at: it is
// ErrNotFound unless it is approved, unused and unexpired then, and then
// no other use of it succeeds, on any replica.
func (s *SQLStore) UseApproval(ctx context.Context, tenant, id string, at time.Time) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	now := at.UnixMilli()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE approvals SET state = ?, used = ? WHERE id = ? AND tenant = ? AND state = ? AND expires > ?`),
		auth.ApprovalUsed, now, id, tenant, auth.ApprovalApproved, now)
	if err != nil {
		return fail("use approval", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}

// SetUnattendedTools sets the tools (id globs) the key id may run
// unattended without an approval: its toolsAllowedUnattended.
func (s *SQLStore) SetUnattendedTools(ctx context.Context, tenant, id string, tools []string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE api_keys SET unattended_tools = ? WHERE id = ? AND tenant = ? AND revoked = 0`), strings.Join(tools, ","), id, tenant)
	if err != nil {
		return fail("set the key's unattended tools", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return connections.ErrNotFound
	}
	return nil
}
