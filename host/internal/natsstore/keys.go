package natsstore

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Keys are the operator's secrets for the shared store: one index key that
// names records and signs list cursors (the same on every replica, never
// rotated), and encryption keys by ID, the first of which encrypts what is
// written; the others only decrypt what older keys wrote.
type Keys struct {
	Index []byte
	keys  []aeadKey
}

type aeadKey struct {
	id   string
	aead cipher.AEAD
}

// maxKeys bounds a key file.
const maxKeys = 64

// ParseKeys reads a key file: lines "index <base64 32 bytes>" (once) and
// "key <id> <base64 32 bytes>" (at least once, the first encrypts), blank
// lines and lines starting with '#' ignored.
func ParseKeys(r io.Reader) (*Keys, error) {
	k := &Keys{}
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		secret := func(s string) ([]byte, error) {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(b) != 32 {
				return nil, fmt.Errorf("line %d: want 32 bytes in standard base64", line)
			}
			return b, nil
		}
		switch {
		case f[0] == "index" && len(f) == 2:
			if k.Index != nil {
				return nil, fmt.Errorf("line %d: a second index key", line)
			}
			b, err := secret(f[1])
			if err != nil {
				return nil, err
			}
			k.Index = b
		case f[0] == "key" && len(f) == 3:
			if !validKeyID(f[1]) {
				return nil, fmt.Errorf("line %d: key ID %q: want 1 to 32 letters, digits, '-' or '_'", line, f[1])
			}
			for _, o := range k.keys {
				if o.id == f[1] {
					return nil, fmt.Errorf("line %d: key ID %q twice", line, f[1])
				}
			}
			if len(k.keys) == maxKeys {
				return nil, fmt.Errorf("line %d: more than %d keys", line, maxKeys)
			}
			b, err := secret(f[2])
			if err != nil {
				return nil, err
			}
			block, _ := aes.NewCipher(b) // 32 bytes: AES-256
			aead, _ := cipher.NewGCM(block)
			k.keys = append(k.keys, aeadKey{id: f[1], aead: aead})
		default:
			return nil, fmt.Errorf("line %d: want \"index <key>\" or \"key <id> <key>\"", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case k.Index == nil:
		return nil, errors.New("no index key")
	case len(k.keys) == 0:
		return nil, errors.New("no encryption key")
	}
	return k, nil
}

func validKeyID(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// NewKeyFile returns the text of a new key file with fresh random keys.
func NewKeyFile() string {
	secret := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	return "# wasmtask shared store keys: the same file on every replica.\n" +
		"# To rotate: add a new \"key\" line below the first on every replica, then move it first (README).\n" +
		"index " + secret() + "\nkey k1 " + secret() + "\n"
}

// envelope: version byte 1, key ID length, key ID, 12-byte nonce, then the
// AES-256-GCM ciphertext of the plaintext. The additional data binds it to
// the place it is stored (a record's key, a control subject), so a value
// moved to another key does not decrypt.
const envelopeV1 = 1

func (k *Keys) seal(where string, plain []byte) []byte {
	w := k.keys[0]
	out := make([]byte, 0, 2+len(w.id)+12+len(plain)+w.aead.Overhead())
	out = append(out, envelopeV1, byte(len(w.id)))
	out = append(out, w.id...)
	nonce := make([]byte, 12)
	rand.Read(nonce)
	out = append(out, nonce...)
	return w.aead.Seal(out, nonce, plain, []byte("wasmtask store v1\x00"+where))
}

// errKey: a value that this replica's keys do not open. The store fails
// closed on it: nothing is served from it, and nothing is written over it.
var errKey = errors.New("a stored value does not decrypt with this replica's keys (wrong or missing key)")

func (k *Keys) open(where string, b []byte) ([]byte, error) {
	if len(b) < 2 || b[0] != envelopeV1 || len(b) < 2+int(b[1])+12 {
		return nil, errKey
	}
	id := string(b[2 : 2+b[1]])
	rest := b[2+int(b[1]):]
	for _, w := range k.keys {
		if w.id == id {
			plain, err := w.aead.Open(nil, rest[:12], rest[12:], []byte("wasmtask store v1\x00"+where))
			if err != nil {
				return nil, errKey
			}
			return plain, nil
		}
	}
	return nil, fmt.Errorf("%w: key ID %q unknown", errKey, id)
}

// ownerTag names an owner in keys without revealing it: 26 characters of
// HMAC-SHA256 under the index key.
func (k *Keys) ownerTag(owner string) string {
	m := hmac.New(sha256.New, k.Index)
	m.Write([]byte("wasmtask store owner\x00"))
	m.Write([]byte(owner))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(m.Sum(nil))[:26]
}

// validTaskID reports whether id can be a task ID (26 characters of
// crypto/rand.Text's alphabet); anything else is never looked up, so a
// client's ID cannot inject subject wildcards or separators into a key.
func validTaskID(id string) bool {
	if len(id) != 26 {
		return false
	}
	for _, c := range id {
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}
