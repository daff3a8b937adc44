package auth

import (
	"errors"
	"fmt"
	"time"
)

// The service's callers: what an API key is and may do. The keys
// themselves are kept hashed by the store (sqlstore), and checked by the
// service (server).

// APIKeyPrefix starts every API key.
const APIKeyPrefix = "htk_"

// SessionPrefix starts every console session token.
const SessionPrefix = "hts_"

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
	// Toolset, when set, is the one toolset the key sees and runs, on
	// every door.
	Toolset string `json:"toolset,omitempty"`
	// UnattendedTools are the tools (id globs) a service key may run in a
	// run no person started without a person's approval: its
	// toolsAllowedUnattended.
	UnattendedTools []string `json:"unattendedTools,omitempty"`
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

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalUsed     = "used"
	// ApprovalExpired is what a pending or approved approval is once its
	// time has passed (shown so; the store keeps its last state).
	ApprovalExpired = "expired"
)

// Approval is a person's yes (or no) to one call in a run no person
// started: bound to its tenant, tool, person, run and the hash of its
// exact input, decided once, used once, before it expires.
type Approval struct {
	ID          string    `json:"id"`
	Tenant      string    `json:"tenant"`
	Tool        string    `json:"tool"`
	Person      string    `json:"person,omitempty"`
	Run         string    `json:"run,omitempty"`
	InputHash   string    `json:"inputHash"`
	Input       string    `json:"input"` // as the person is shown it: the call's secrets never in it, cut to 4 KiB
	State       string    `json:"state"`
	RequestedBy string    `json:"requestedBy"` // the key id of the call
	DecidedBy   string    `json:"decidedBy,omitempty"`
	Created     time.Time `json:"created"`
	Expires     time.Time `json:"expires"`
	Decided     time.Time `json:"decided,omitzero"`
	Used        time.Time `json:"used,omitzero"`
}
