package cursor

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
)

// A cursor names a position (for the task engine's List, the creation
// number or time of the last task returned) and is bound to its owner: the
// 16-byte block
// seq || HMAC-SHA256(macKey, "taskengine cursor v1" || seq || owner)[:8]
// is encrypted with AES under a second per-engine key and base64url
// encoded. The MAC makes a cursor unforgeable and useless for another owner
// or another engine; the encryption hides the engine-wide creation counter,
// which would otherwise tell an owner how many tasks others create.

// Len is the length of every cursor.
const Len = 22 // base64url without padding of 16 bytes

var cursorEncoding = base64.RawURLEncoding.Strict()

// Codec makes and reads cursors with its own keys.
type Codec struct {
	block  cipher.Block
	macKey [32]byte
}

// New returns a codec with fresh random keys: its cursors are good for
// this codec only.
func New() Codec {
	var aesKey [16]byte
	var c Codec
	rand.Read(aesKey[:]) // never fails (crypto/rand, Go 1.24+)
	rand.Read(c.macKey[:])
	return c.withAES(aesKey[:])
}

// Shared derives both keys from key, so that a cursor one codec made
// with it reads on every other made with it (replicas sharing a key).
func Shared(key []byte) Codec {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	var c Codec
	copy(c.macKey[:], derive("taskengine cursor mac"))
	return c.withAES(derive("taskengine cursor aes")[:16])
}

func (c Codec) withAES(aesKey []byte) Codec {
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		panic(err) // 16-byte key: cannot happen
	}
	c.block = block
	return c
}

func (c *Codec) tag(dst []byte, owner string, seq uint64) {
	m := hmac.New(sha256.New, c.macKey[:])
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	m.Write([]byte("taskengine cursor v1"))
	m.Write(b[:])
	m.Write([]byte(owner))
	copy(dst, m.Sum(nil))
}

// Encode makes the cursor of position seq for owner.
func (c *Codec) Encode(owner string, seq uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], seq)
	c.tag(b[8:], owner, seq)
	c.block.Encrypt(b[:], b[:])
	return cursorEncoding.EncodeToString(b[:])
}

// Decode returns the position in cursor s, and false if this codec did
// not make s for owner.
func (c *Codec) Decode(owner, s string) (uint64, bool) {
	if len(s) != Len {
		return 0, false
	}
	var b [16]byte
	if n, err := cursorEncoding.Decode(b[:], []byte(s)); err != nil || n != len(b) {
		return 0, false
	}
	c.block.Decrypt(b[:], b[:])
	seq := binary.BigEndian.Uint64(b[:8])
	var want [8]byte
	c.tag(want[:], owner, seq)
	if !hmac.Equal(b[8:], want[:]) {
		return 0, false
	}
	return seq, true
}
