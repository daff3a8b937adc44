package connections

import (
	"context"
	"errors"
	"time"

	"github.com/httptools/httptools/synth"
)

// Connection statuses.
const (
	StatusActive      = "active"
	StatusNeedsReauth = "needs-reauth"
	StatusRevoked     = "revoked"
)

// OwnerCompany owns a tenant's company connections; OwnerPerson names a
// person's.
const OwnerCompany = "company"

// OwnerPerson returns the owner value of a person's connection.
func OwnerPerson(id string) string { return "person:" + id }

// Record is a connection: one account at one app, of one owner in one
// tenant. Tokens are plaintext here and encrypted in the store.
type Record struct {
	ID          string
	Tenant      string
	App         string
	Owner       string // OwnerCompany or OwnerPerson(id)
	Permissions []string
	Scopes      []string
	// Wanted are scopes a remote MCP server asked for beyond Scopes (its
	// 403 insufficient_scope: a step-up), which the next authorization
	// of the connection asks; the connection made then replaces them.
	Wanted []string

	AccessToken  string
	RefreshToken string
	Expiry       time.Time // zero: does not expire

	Status      string
	LastRefresh time.Time // when the provider issued the tokens held
	LastError   string
	// LeaseOwner and LeaseUntil mark a refresh under way: the replica whose
	// Manager took the lease asks the provider, outside any transaction,
	// and the others wait for it (or serve the old token while it is
	// valid) until it writes the result or the lease runs out.
	LeaseOwner string
	LeaseUntil time.Time
	Version    int64 // incremented on every write
	Created    time.Time
	Updated    time.Time
}

// fresh reports whether the access token is good beyond now+skew.
func (r *Record) fresh(now time.Time, skew time.Duration) bool {
	return r.AccessToken != "" && (r.Expiry.IsZero() || r.Expiry.After(now.Add(skew)))
}

// State is a pending connect flow: single use, expiring.
type State struct {
	State    string
	Tenant   string
	App      string
	Owner    string
	Verifier string // PKCE code verifier
	Expires  time.Time
}

// ErrNotFound is returned for a connection, state or secret that does not
// exist (or belongs to another tenant).
var ErrNotFound = errors.New("not found")

// ErrUnavailable is wrapped by every error of a store that could not do its
// work (down, frozen past its timeout, read-only, full): the caller did
// nothing wrong and may try again. The driver's own error is kept behind it
// for the operator's log; its text is never shown to a caller.
var ErrUnavailable = errors.New("the store is unavailable")

// StoreError is a store failure: what was being done, and the driver's
// error. Error() names the operation only, never the driver's text (which
// may hold the database's user, name and address).
type StoreError struct {
	Op  string
	Err error
}

func (e *StoreError) Error() string { return "the store is unavailable (" + e.Op + ")" }

// Unwrap returns ErrUnavailable and the driver's error.
func (e *StoreError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// Cause is the driver's error, for the operator's log.
func (e *StoreError) Cause() error { return e.Err }

// words is an error's text for the operator's log: a StoreError's cause.
func words(err error) string {
	var se *StoreError
	if errors.As(err, &se) {
		err = se.Err
	}
	return err.Error()
}

// The store of connections is three small interfaces, one per concern, so
// that an embedder implements only what it uses (and a method added to one
// breaks no implementer of the others). SQLStore implements all three on
// SQLite and PostgreSQL; package connections/storetest is the conformance
// suite an implementation runs in its own tests. Errors other than
// ErrNotFound (and synth.ErrSecretNotFound) should wrap ErrUnavailable.

// ConnectionStore keeps connections: what a Manager reads and refreshes.
// It must be safe for concurrent use: a Manager calls it from every call.
type ConnectionStore interface {
	// Connection returns the connection of (tenant, app, owner).
	Connection(ctx context.Context, tenant, app, owner string) (*Record, error)
	// Connections lists a tenant's connections.
	Connections(ctx context.Context, tenant string) ([]*Record, error)
	// SaveConnection creates or replaces the connection of (rec.Tenant,
	// rec.App, rec.Owner), keeping its id, and returns what was stored.
	SaveConnection(ctx context.Context, rec *Record) (*Record, error)
	// RevokeConnection marks a tenant's connection revoked and wipes its
	// tokens; another tenant's id is ErrNotFound.
	RevokeConnection(ctx context.Context, tenant, id string) error
	// UpdateLocked runs fn on the connection inside one short transaction
	// that holds its row lock (SELECT … FOR UPDATE on PostgreSQL, BEGIN
	// IMMEDIATE on SQLite). When fn returns a record it is written, with
	// the next version, before commit; nil leaves the row as it was. fn must
	// not sleep.
	UpdateLocked(ctx context.Context, tenant, app, owner string, fn func(cur *Record) (*Record, error)) (*Record, error)
}

// StoreClock is a ConnectionStore that tells its own time. A Manager whose
// store is one decides refresh leases on that clock (taken until its time
// plus LeaseTTL, and expired by it), so every replica reads the same clock:
// one whose own clock is slow or fast never takes a lease another holds, nor
// holds one past its end. SQLStore is one (PostgreSQL's clock_timestamp();
// on SQLite the machine's clock, which every process on the file shares).
// It must be safe for concurrent use.
type StoreClock interface {
	StoreNow(ctx context.Context) (time.Time, error)
}

// StateStore keeps pending connect flows: what a Manager's Authorize and
// Callback use.
// It must be safe for concurrent use.
type StateStore interface {
	// PutState stores a pending connect flow.
	PutState(ctx context.Context, st *State) error
	// TakeState returns and deletes a state: a second take is ErrNotFound.
	TakeState(ctx context.Context, state string) (*State, error)
}

// SecretStore keeps tenants' secrets (auth.TenantSecrets reads them).
// It must be safe for concurrent use.
type SecretStore interface {
	// PutSecret stores a tenant's secret, encrypted.
	PutSecret(ctx context.Context, tenant string, ref synth.SecretRef, value string) error
	// Secret returns a tenant's secret, or an error wrapping
	// synth.ErrSecretNotFound.
	Secret(ctx context.Context, tenant string, ref synth.SecretRef) (string, error)
	// SecretRefs lists a tenant's secret names, never values.
	SecretRefs(ctx context.Context, tenant string) ([]synth.SecretRef, error)
	// DeleteSecret removes a tenant's secret; another tenant's is
	// ErrNotFound.
	DeleteSecret(ctx context.Context, tenant string, ref synth.SecretRef) error
}
