package taskengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// memStore is a SharedStore and Peers in memory that several engines of one test
// use as replicas: their contracts, with records deep-copied through
// JSON (so nothing crosses that a real store could not carry).
type memStore struct {
	mu       sync.Mutex
	rev      uint64
	recs     map[string]memEntry
	watchers map[string][]chan *Record
	leases   map[string]bool
	epochs   map[string]uint64 // a replica's lease epoch: grows when it is renewed after a lapse
	cut      map[string]bool   // replicas partitioned from the store: every call of theirs fails
	servers  map[string]func(context.Context, Control) Reply
	writes   int // record writes, for tests that count them
	deletes  int
	// fail, if set, is asked before each Update: it may fail the write
	// before (lost) or after (applied, answer lost) it is applied.
	fail func(r *Record) (before, after error)
}

type memEntry struct {
	b   []byte
	rev uint64
}

func newMemStore() *memStore {
	return &memStore{
		recs:     map[string]memEntry{},
		watchers: map[string][]chan *Record{},
		leases:   map[string]bool{},
		epochs:   map[string]uint64{},
		cut:      map[string]bool{},
		servers:  map[string]func(context.Context, Control) Reply{},
	}
}

// kill makes replica vanish as a crashed process does: its lease lapses and
// it answers no control request. Its engine goes on running (as a process
// cut off from the store would), which the tests close themselves.
func (m *memStore) kill(replica string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.leases, replica)
	delete(m.servers, replica)
}

// lapse makes replica's lease expire as a pause or an outage longer than
// a lease does: others find it dead, it knows its lease is not held; it
// still answers control requests it gets (a process that is running).
func (m *memStore) lapse(replica string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.leases, replica)
}

// partition cuts replica off from the store: its lease lapses, its calls
// fail, and no control request reaches it, while its engine runs on.
func (m *memStore) partition(replica string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.leases, replica)
	m.cut[replica] = true
}

// heal ends a partition: replica reaches the store and renews its lease.
func (m *memStore) heal(replica string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cut, replica)
	m.leases[replica] = true
	m.epochs[replica]++
}

var errCut = errors.New("store unreachable (partitioned)")

// cutLocked is errCut when s's replica is partitioned.
func (s *memShared) cutLocked() error {
	if s.m.cut[s.replica] {
		return errCut
	}
	return nil
}

// renew takes replica's lease again after a lapse, in a new epoch.
func (m *memStore) renew(replica string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leases[replica] = true
	m.epochs[replica]++
}

type memShared struct {
	m       *memStore
	replica string
}

func newMemShared(m *memStore, replica string) *memShared {
	m.mu.Lock()
	m.leases[replica] = true
	m.mu.Unlock()
	return &memShared{m: m, replica: replica}
}

func memKey(owner, id string) string { return owner + "\x00" + id }

func (s *memShared) Replica() string { return s.replica }

// Lease: an in-memory lease is held while it is set; renew starts a new
// epoch.
func (s *memShared) Lease() (bool, uint64) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.m.leases[s.replica], s.m.epochs[s.replica]
}

func (s *memShared) Create(ctx context.Context, r *Record) (uint64, error) {
	return s.write(r, 0, true)
}

func (s *memShared) Update(ctx context.Context, r *Record, rev uint64) (uint64, error) {
	return s.write(r, rev, false)
}

func (s *memShared) write(r *Record, rev uint64, create bool) (uint64, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := s.cutLocked(); err != nil {
		return 0, err
	}
	k := memKey(r.Owner, r.ID)
	cur, ok := m.recs[k]
	switch {
	case create && ok:
		return 0, errors.New("exists")
	case !create && (!ok || cur.rev != rev):
		return 0, ErrConflict
	}
	var after error
	if !create && m.fail != nil {
		var before error
		if before, after = m.fail(r); before != nil {
			return 0, before
		}
	}
	m.rev++
	m.writes++
	m.recs[k] = memEntry{b: b, rev: m.rev}
	for _, ch := range m.watchers[k] {
		r := decodeRecord(b)
		omitLarge(r)
		offerRecord(ch, r)
	}
	if after != nil {
		return 0, after
	}
	return m.rev, nil
}

func decodeRecord(b []byte) *Record {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		panic(err) // written by json.Marshal above
	}
	return &r
}

func offerRecord(ch chan *Record, r *Record) {
	select {
	case <-ch:
	default:
	}
	ch <- r
}

func (s *memShared) Load(ctx context.Context, owner, id string, outcome bool) (*Record, uint64, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if err := s.cutLocked(); err != nil {
		return nil, 0, err
	}
	e, ok := s.m.recs[memKey(owner, id)]
	if !ok {
		return nil, 0, ErrNotFound
	}
	r := decodeRecord(e.b)
	if !outcome {
		omitLarge(r)
	}
	return r, e.rev, nil
}

// omitLarge leaves a large outcome out, as a real store may.
func omitLarge(r *Record) {
	if len(r.Outcome) > memInline {
		r.Outcome, r.OutcomeOmitted = nil, true
	}
}

// memInline is the largest outcome memShared returns without being asked.
const memInline = 64

func (s *memShared) Delete(ctx context.Context, owner, id string) error {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := s.cutLocked(); err != nil {
		return err
	}
	k := memKey(owner, id)
	delete(m.recs, k)
	m.deletes++
	for _, ch := range m.watchers[k] {
		close(ch)
	}
	delete(m.watchers, k)
	return nil
}

func (s *memShared) List(ctx context.Context, owner string, max int) ([]*Record, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if err := s.cutLocked(); err != nil {
		return nil, err
	}
	var out []*Record
	for _, e := range s.m.recs {
		if r := decodeRecord(e.b); r.Owner == owner && len(out) < max {
			omitLarge(r)
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *memShared) Watch(ctx context.Context, owner, id string) (<-chan *Record, error) {
	m := s.m
	k := memKey(owner, id)
	ch := make(chan *Record, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := s.cutLocked(); err != nil {
		return nil, err
	}
	if e, ok := m.recs[k]; ok {
		r := decodeRecord(e.b)
		omitLarge(r)
		ch <- r
	}
	m.watchers[k] = append(m.watchers[k], ch)
	context.AfterFunc(ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		ws := m.watchers[k] // gone if Delete closed them
		for i, w := range ws {
			if w == ch {
				m.watchers[k] = append(ws[:i:i], ws[i+1:]...)
				close(ch)
				break
			}
		}
	})
	return ch, nil
}

func (s *memShared) Alive(ctx context.Context, replica string) (bool, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if err := s.cutLocked(); err != nil {
		return false, err
	}
	return s.m.leases[replica], nil
}

func (s *memShared) Ask(ctx context.Context, replica string, c Control) (Reply, error) {
	s.m.mu.Lock()
	h := s.m.servers[replica]
	if s.m.cut[s.replica] || s.m.cut[replica] {
		h = nil
	}
	s.m.mu.Unlock()
	if h == nil {
		return Reply{}, fmt.Errorf("no responders for %s", replica)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return Reply{}, err
	}
	var c2 Control
	if err := json.Unmarshal(b, &c2); err != nil {
		return Reply{}, err
	}
	reply := h(ctx, c2)
	b, err = json.Marshal(reply)
	if err != nil {
		return Reply{}, err
	}
	var out Reply
	return out, json.Unmarshal(b, &out)
}

func (s *memShared) Serve(h func(context.Context, Control) Reply) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.servers[s.replica] = h
	return nil
}

// jsonCodec encodes the test's values: strings as Meta, Values, input
// payloads and answers; work errors by their text.
type jsonCodec struct{}

type jsonOutcome struct {
	Value  any
	Failed bool
	Err    string
}

func (jsonCodec) Encode(k Kind, v any) ([]byte, error) {
	if k == KindOutcome {
		out := v.(Outcome)
		j := jsonOutcome{Value: out.Value, Failed: out.Failed}
		if out.Err != nil {
			j.Err = out.Err.Error()
		}
		return json.Marshal(j)
	}
	return json.Marshal(v)
}

func (jsonCodec) Decode(k Kind, b []byte) (any, error) {
	if k == KindOutcome {
		var j jsonOutcome
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, err
		}
		out := Outcome{Value: j.Value, Failed: j.Failed}
		if j.Err != "" {
			out.Err = errors.New(j.Err)
		}
		return out, nil
	}
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}
