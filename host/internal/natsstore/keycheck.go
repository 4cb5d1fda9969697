package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// The key check: a record in the tasks bucket that says which index key
// and which encryption key the store's records are written with, so that a
// replica whose key file cannot read them refuses to start instead of
// taking every task for missing or failing each request. Each lease also
// names the keys its replica reads, so that no replica starts writing with
// a key a running one cannot read (rotation, step by step, in README).

// ErrKeys: this replica's key file cannot read the store's records, or
// would write records a running replica cannot read.
var ErrKeys = errors.New("task store keys")

const (
	checkKey      = "check"          // in the tasks bucket
	checkWhere    = "wasmtask check" // the additional data of the check token
	maxLeaseScans = 1024             // leases read at start: replicas sharing one store
)

// keyCheck is the check record.
type keyCheck struct {
	Index string // indexTag of the index key
	Key   string // ID of the key records are written with
	Token []byte // seal(checkWhere, Index) under that key
}

// leaseValue is what a replica's lease holds.
type leaseValue struct {
	Reads []string // IDs of the keys it decrypts with
}

// indexTag identifies the index key without revealing it.
func (k *Keys) indexTag() string {
	return k.ownerTag("\x00index check")
}

func (k *Keys) ids() []string {
	ids := make([]string, len(k.keys))
	for i, w := range k.keys {
		ids[i] = w.id
	}
	return ids
}

// checkKeys compares this replica's keys with the store's check record and
// the running replicas' leases, and records its own write key when the
// others can read it. It runs at start, before this replica's lease is
// taken.
func (s *Store) checkKeys(ctx context.Context) error {
	k := s.cfg.Keys
	mine := keyCheck{Index: k.indexTag(), Key: k.keys[0].id}
	mine.Token = k.seal(checkWhere, []byte(mine.Index))
	for range 3 {
		entry, err := s.tasks.Get(ctx, checkKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			// No check record yet (a new store, or one written before
			// key checks): the first task record found must read with
			// this key file before it vouches for it.
			if err := s.checkRecords(ctx); err != nil {
				return err
			}
			b, _ := json.Marshal(mine)
			if _, err = s.tasks.Create(ctx, checkKey, b); errors.Is(err, jetstream.ErrKeyExists) {
				continue // another replica came first: check against its record
			}
			if err != nil {
				return fmt.Errorf("task store: key check: %w", err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("task store: key check: %w", err)
		}
		var have keyCheck
		if err := json.Unmarshal(entry.Value(), &have); err != nil {
			return fmt.Errorf("%w: the store's key check record does not decode: %w", ErrKeys, err)
		}
		if have.Index != mine.Index {
			return fmt.Errorf("%w: the key file's index key is not the one the store's records are named with; every replica needs the same key file", ErrKeys)
		}
		if !slices.Contains(k.ids(), have.Key) {
			return fmt.Errorf("%w: the store's records are written with key %q, which the key file lacks (it has %q); add that key's line below the first", ErrKeys, have.Key, k.ids())
		}
		if plain, err := k.open(checkWhere, have.Token); err != nil || string(plain) != have.Index {
			return fmt.Errorf("%w: key %q of the key file is not the key %q the store's records are written with", ErrKeys, have.Key, have.Key)
		}
		if have.Key == mine.Key {
			return nil
		}
		// This replica writes with another key: every running replica
		// must read it first.
		if err := s.othersRead(ctx, mine.Key); err != nil {
			return err
		}
		b, _ := json.Marshal(mine)
		if _, err := s.tasks.Update(ctx, checkKey, b, entry.Revision()); errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return fmt.Errorf("task store: key check: %w", err)
		}
		s.cfg.Log.Info("task store: records are written with a new key from now on", "key", mine.Key, "was", have.Key)
		return nil
	}
	return fmt.Errorf("task store: key check: the record kept changing")
}

// othersRead fails unless every replica holding a lease reads key id.
func (s *Store) othersRead(ctx context.Context, id string) error {
	lister, err := s.leases.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("task store: key check: %w", err)
	}
	defer lister.Stop()
	n := 0
	for replica := range lister.Keys() {
		if n++; n > maxLeaseScans {
			return fmt.Errorf("task store: key check: more than %d leases", maxLeaseScans)
		}
		entry, err := s.leases.Get(ctx, replica)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // lapsed meanwhile
		}
		if err != nil {
			return fmt.Errorf("task store: key check: %w", err)
		}
		var v leaseValue
		_ = json.Unmarshal(entry.Value(), &v) // a lease without keys (an older replica) reads none
		if !slices.Contains(v.Reads, id) {
			return fmt.Errorf("%w: this replica would write with key %q, which running replica %s cannot read (it reads %q); give every replica the key file with that key below its first, then make it the first", ErrKeys, id, replica, v.Reads)
		}
	}
	return nil
}

// checkRecords fails unless the first task record in the store, if any,
// decrypts with this replica's keys and sits under the key its index key
// names it by.
func (s *Store) checkRecords(ctx context.Context) error {
	lister, err := s.tasks.ListKeysFiltered(ctx, "t.>")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("task store: key check: %w", err)
	}
	defer lister.Stop()
	for key := range lister.Keys() {
		entry, err := s.tasks.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // expired meanwhile
		}
		if err != nil {
			return fmt.Errorf("task store: key check: %w", err)
		}
		r, err := s.decode(ctx, key, entry.Value(), false)
		if err != nil {
			return fmt.Errorf("%w: the store holds task records that this key file cannot read (%v); every replica needs the same key file", ErrKeys, err)
		}
		if s.recordKey(r.Owner, r.ID) != key {
			return fmt.Errorf("%w: the key file's index key is not the one the store's records are named with; every replica needs the same key file", ErrKeys)
		}
		return nil
	}
	return nil
}
