package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/httptools/httptools/connections"
)

// Kept results: the whole of an answer cut to a model's budget (package
// server, resultbudget.go), readable by the caller that made the call,
// from any replica, until it expires. body is the answer's JSON text.

// PutResult keeps the answer id until expires, and drops every answer
// past its time.
func (s *SQLStore) PutResult(ctx context.Context, id, owner, media string, pageSize int, body []byte, expires time.Time) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM kept_results WHERE expires < ?`), time.Now().UnixMilli()); err != nil {
		return fail("drop expired results", err)
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO kept_results (id, owner, media, page_size, body, expires) VALUES (?, ?, ?, ?, ?, ?)`),
		id, owner, media, pageSize, string(body), ms(expires))
	return fail("keep result", err)
}

// Result returns the answer id while it has not expired, else
// connections.ErrNotFound.
func (s *SQLStore) Result(ctx context.Context, id string) (owner, media string, pageSize int, body []byte, expires time.Time, err error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var text string
	var exp int64
	err = s.db.QueryRowContext(ctx, s.q(`SELECT owner, media, page_size, body, expires FROM kept_results WHERE id = ? AND expires >= ?`), id, time.Now().UnixMilli()).
		Scan(&owner, &media, &pageSize, &text, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", 0, nil, time.Time{}, connections.ErrNotFound
	}
	if err != nil {
		return "", "", 0, nil, time.Time{}, fail("read result", err)
	}
	return owner, media, pageSize, []byte(text), fromMs(exp), nil
}
