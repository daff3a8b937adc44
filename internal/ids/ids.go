// Package ids makes the random identifiers of stored things: connections,
// states, leases.
package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns prefix followed by 32 random hex digits (128 bits).
func New(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand panics if the system cannot give randomness)
	return prefix + hex.EncodeToString(b)
}
