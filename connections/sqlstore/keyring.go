package sqlstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// MasterKeyEnv holds the base64 of the 32-byte key that encrypts tokens and
// secrets at rest; MasterKeyOldEnv, comma-separated, keys that only decrypt
// (rotation: rows are re-sealed with the current key when next written).
const (
	MasterKeyEnv    = "HTTPTOOLS_MASTER_KEY"
	MasterKeyOldEnv = "HTTPTOOLS_MASTER_KEY_OLD"
)

// Keyring seals with AES-256-GCM under the current key and opens with any
// known key, chosen by the key id stored beside each value. It is safe for
// concurrent use.
type Keyring struct {
	current string
	aeads   map[string]cipher.AEAD
}

// NewKeyring builds a keyring from 32-byte keys; the first is current.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("connections: no key")
	}
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	for i, key := range keys {
		if len(key) != 32 {
			return nil, fmt.Errorf("connections: key %d is %d bytes, want 32 (AES-256)", i, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(key)
		id := hex.EncodeToString(sum[:4])
		if i == 0 {
			k.current = id
		}
		k.aeads[id] = aead
	}
	return k, nil
}

// KeyID is the id of the current key.
func (k *Keyring) KeyID() string { return k.current }

// Seal encrypts plaintext bound to aad (the row and field it belongs to, so a
// value cannot be moved to another row). The result is nonce || ciphertext.
func (k *Keyring) Seal(plaintext, aad []byte) []byte {
	aead := k.aeads[k.current]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("connections: no randomness: " + err.Error())
	}
	return aead.Seal(nonce, nonce, plaintext, aad)
}

// Open decrypts a value sealed under key id.
func (k *Keyring) Open(id string, sealed, aad []byte) ([]byte, error) {
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("connections: value sealed with unknown key %s: set %s or add it to %s", id, MasterKeyEnv, MasterKeyOldEnv)
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("connections: sealed value too short")
	}
	return aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], aad)
}

// LoadKeyring reads HTTPTOOLS_MASTER_KEY (and HTTPTOOLS_MASTER_KEY_OLD). When
// it is unset, a key is generated into keyFile with mode 0600 (or read from
// it if it exists): fine on a laptop, not for production. Making the file
// logs a warning; using it again, an informational line.
func LoadKeyring(getenv func(string) string, keyFile string, log *slog.Logger) (*Keyring, error) {
	var keys [][]byte
	if v := getenv(MasterKeyEnv); v != "" {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: not base64: %v", MasterKeyEnv, err)
		}
		keys = append(keys, key)
	} else {
		key, created, err := localKey(keyFile)
		if err != nil {
			return nil, err
		}
		switch {
		case log == nil:
		case created:
			// Once, when the key is made: the warning is news then.
			log.Warn("generated a local master key file; set "+MasterKeyEnv+" in production", "file", keyFile)
		default:
			log.Info("using the local master key file; set "+MasterKeyEnv+" in production", "file", keyFile)
		}
		keys = append(keys, key)
	}
	for _, v := range strings.Split(getenv(MasterKeyOldEnv), ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("%s: not base64: %v", MasterKeyOldEnv, err)
		}
		keys = append(keys, key)
	}
	return NewKeyring(keys...)
}

func localKey(path string) ([]byte, bool, error) {
	if b, err := os.ReadFile(path); err == nil {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		return key, false, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	return key, true, err
}
