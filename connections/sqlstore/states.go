package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/httptools/httptools/connections"
)

// Connect-flow states: put once, taken once.

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
