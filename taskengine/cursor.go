package taskengine

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"time"
)

// Cursors. A List cursor names a position (the creation number of the last
// task returned) and is bound to its owner: the 16-byte block
// seq || HMAC-SHA256(macKey, "taskengine cursor v1" || seq || owner)[:8]
// is encrypted with AES under a second per-engine key and base64url
// encoded. The MAC makes a cursor unforgeable and useless for another owner
// or another engine; the encryption hides the engine-wide creation counter,
// which would otherwise tell an owner how many tasks others create.

const cursorLen = 22 // base64url without padding of 16 bytes

var cursorEncoding = base64.RawURLEncoding.Strict()

type cursorCodec struct {
	block  cipher.Block
	macKey [32]byte
}

func newCursorCodec() cursorCodec {
	var aesKey [16]byte
	var c cursorCodec
	rand.Read(aesKey[:]) // never fails (crypto/rand, Go 1.24+)
	rand.Read(c.macKey[:])
	return c.withAES(aesKey[:])
}

// sharedCursorCodec derives both keys from a key the replicas share, so a
// cursor one of them issued pages on any other.
func sharedCursorCodec(key []byte) cursorCodec {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	var c cursorCodec
	copy(c.macKey[:], derive("taskengine cursor mac"))
	return c.withAES(derive("taskengine cursor aes")[:16])
}

func (c cursorCodec) withAES(aesKey []byte) cursorCodec {
	block, err := aes.NewCipher(aesKey)
	if err != nil {
		panic(err) // 16-byte key: cannot happen
	}
	c.block = block
	return c
}

func (c *cursorCodec) tag(dst []byte, owner string, seq uint64) {
	m := hmac.New(sha256.New, c.macKey[:])
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	m.Write([]byte("taskengine cursor v1"))
	m.Write(b[:])
	m.Write([]byte(owner))
	copy(dst, m.Sum(nil))
}

func (c *cursorCodec) encode(owner string, seq uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], seq)
	c.tag(b[8:], owner, seq)
	c.block.Encrypt(b[:], b[:])
	return cursorEncoding.EncodeToString(b[:])
}

// decode returns the position in cursor s, or ErrBadCursor if this codec
// did not make s for owner.
func (c *cursorCodec) decode(owner, s string) (uint64, error) {
	if len(s) != cursorLen {
		return 0, ErrBadCursor
	}
	var b [16]byte
	if n, err := cursorEncoding.Decode(b[:], []byte(s)); err != nil || n != len(b) {
		return 0, ErrBadCursor
	}
	c.block.Decrypt(b[:], b[:])
	seq := binary.BigEndian.Uint64(b[:8])
	var want [8]byte
	c.tag(want[:], owner, seq)
	if !hmac.Equal(b[8:], want[:]) {
		return 0, ErrBadCursor
	}
	return seq, nil
}

// List page sizes.
const (
	DefaultListLimit = 100  // used when limit <= 0
	MaxListLimit     = 1000 // larger limits are clamped
)

// List returns a page of owner's tasks, oldest first (by creation), and the
// cursor of the next page, "" after the last one. Pass "" to start. Tasks
// created while paging appear on later pages; tasks that expire or are
// evicted simply drop out, and no task appears twice. A cursor that this
// engine did not issue for this owner gives ErrBadCursor. limit <= 0 means
// DefaultListLimit; it is clamped to MaxListLimit. List does not count as a
// use of the tasks for LRU retention. ctx bounds the read of the shared
// store.
func (e *Engine) List(ctx context.Context, owner, cursor string, limit int) ([]Task, string, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	if e.cfg.Shared != nil {
		e.mu.Lock()
		closed := e.closed
		e.mu.Unlock()
		if closed {
			return nil, "", ErrClosed
		}
		ts, next, err := e.listShared(ctx, owner, cursor, limit)
		return ts, next, callerErr(ctx, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, "", ErrClosed
	}
	var after uint64
	if cursor != "" {
		var err error
		if after, err = e.cursors.decode(owner, cursor); err != nil {
			return nil, "", err
		}
	}
	now := time.Now()
	e.expireLocked(now)
	out := []Task{}
	oi := e.owners[owner]
	if oi == nil {
		return out, "", nil
	}
	i, found := slices.BinarySearchFunc(oi.tasks, after, bySeq)
	if found {
		i++
	}
	for ; i < len(oi.tasks) && len(out) < limit; i++ {
		if t := oi.tasks[i]; !t.expiredAt(now) {
			out = append(out, e.snapshotLocked(t))
		}
	}
	if i == len(oi.tasks) {
		return out, "", nil
	}
	return out, e.cursors.encode(owner, oi.tasks[i-1].seq), nil
}
