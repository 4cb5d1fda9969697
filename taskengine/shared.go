package taskengine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// SharedStore is a store of task records that several engines (replicas of
// one server) use together, so that any of them answers for any task of
// the same owner. The engine that runs a task writes its record; every
// other engine only reads it, and asks the runner to act on it through
// [Peers]. An implementation persists records outside the process (the
// server's NATS JetStream store) or in memory (tests).
//
// Every method must honour ctx and be safe for concurrent use. Records are
// addressed by owner and ID together, like the engine's own lookups: a
// record of another owner is ErrNotFound.
type SharedStore interface {
	// Create stores a new record and returns its revision.
	Create(ctx context.Context, r *Record) (rev uint64, err error)
	// Update replaces the record if its latest revision is still rev, and
	// returns the new revision; [ErrConflict] if another write came first.
	Update(ctx context.Context, r *Record, rev uint64) (uint64, error)
	// Load returns the record and its revision, or [ErrNotFound]. Without
	// outcome the store may leave a large outcome out (Record.Outcome nil,
	// Record.OutcomeOmitted set).
	Load(ctx context.Context, owner, id string, outcome bool) (*Record, uint64, error)
	// Delete removes the record (the engine evicted the task).
	Delete(ctx context.Context, owner, id string) error
	// List returns owner's records, in no particular order, at most max of
	// them, large outcomes left out.
	List(ctx context.Context, owner string, max int) ([]*Record, error)
	// Watch delivers the record's versions from its current one on, large
	// outcomes left out, until ctx ends; the channel is closed then (or
	// when the record is deleted or the store fails).
	Watch(ctx context.Context, owner, id string) (<-chan *Record, error)
}

// Peers is the control channel between the engines sharing a
// [SharedStore]: who is alive, and requests to the engine running a task.
// Every method must honour ctx and be safe for concurrent use.
type Peers interface {
	// Replica names this engine's replica among those sharing the store. It
	// must be unique per process start, so that a restarted replica is not
	// mistaken for the one that died.
	Replica() string
	// Alive reports whether replica holds its lease: it is running and
	// reachable. A task whose runner is not alive never finishes.
	Alive(ctx context.Context, replica string) (bool, error)
	// Lease reports whether this replica's own lease is certainly held
	// now, and its epoch: a count that grows each time the lease may have
	// lapsed (renewed after a gap as long as the lease). While it is held
	// in the same epoch, no other replica can have failed this replica's
	// tasks, so the engine answers them from memory; otherwise it checks
	// the store first.
	Lease() (held bool, epoch uint64)
	// Ask delivers a control request to the replica running a task and
	// returns its reply.
	// An error means the request may not have reached the runner.
	Ask(ctx context.Context, replica string, c Control) (Reply, error)
	// Serve hands control requests addressed to this replica to h until the
	// channel is closed; the engine calls it once, from New.
	Serve(h func(ctx context.Context, c Control) Reply) error
}

// Record is the shared form of a task: everything another engine needs to
// answer for it. The opaque parts (Meta, the outcome, input payloads) are
// encoded by the [Codec] the engines share.
type Record struct {
	ID, Owner     string
	Runner        string // replica whose engine runs (or ran) the task
	Status        Status
	StatusMessage string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	TTL           time.Duration // granted retention from CreatedAt; 0 = unlimited
	Progress      float64
	Total         float64
	Meta          []byte        // Codec.Encode(KindMeta, SubmitOptions.Meta)
	Inputs        []RecordInput // pending input requests, oldest first
	Outcome       []byte        // Codec.Encode(KindOutcome, …) of a terminal task's work outcome
	Size          int64         // Outcome.Size
	Ended         string        // why the engine ended it: an engineEnds name, or ""
	EndText       string        // that error's text
	// OutcomeOmitted is set by a store that read the record without its
	// (large) outcome; it is never written.
	OutcomeOmitted bool `json:"-"`
}

// RecordInput is a pending input request in a [Record].
type RecordInput struct {
	ID      string
	Payload []byte // Codec.Encode(KindInput, InputRequest.Payload)
}

// Control is a request one engine makes of the engine running a task.
type Control struct {
	Op        string // ControlCancel or ControlAnswer
	Owner, ID string
	RequestID string // ControlAnswer: the input request answered
	Answer    []byte // ControlAnswer: Codec.Encode(KindAnswer, answer)
}

// Control operations.
const (
	ControlCancel = "cancel"
	ControlAnswer = "answer"
)

// Kind says what a [Codec] encodes.
type Kind int

// What crosses replicas besides the engine's own fields.
const (
	KindMeta    Kind = iota // SubmitOptions.Meta
	KindOutcome             // an Outcome the work returned: Value, Failed and Err (not an engine error)
	KindInput               // InputRequest.Payload
	KindAnswer              // an answer to an input request
)

// Codec turns the opaque values of tasks into bytes and back, for engines
// sharing a store. KindOutcome encodes an [Outcome] and decodes to one.
type Codec interface {
	Encode(k Kind, v any) ([]byte, error)
	Decode(k Kind, b []byte) (any, error)
}

// Shared-store errors.
var (
	// ErrConflict: a record changed since the revision a write named.
	ErrConflict = errors.New("taskengine: record changed concurrently")
	// ErrReplicaLost ends a task whose runner stopped holding its lease
	// before the task ended: the task is failed, its work lost.
	ErrReplicaLost = errors.New("taskengine: the replica running the task stopped")
	// ErrShared wraps failures of the shared store (unreachable, a record
	// that does not decrypt or decode): the engine fails closed.
	ErrShared = errors.New("taskengine: shared store")
)

// engineEnds names the errors by which the engine itself ends a task, so
// that they cross replicas as themselves (errors.Is holds on the far side).
var engineEnds = []struct {
	name string
	err  error
}{
	{"cancelled", ErrCancelled},
	{"deadline", ErrDeadline},
	{"closed", ErrClosed},
	{"panic", ErrPanic},
	{"too_large", ErrTooLarge},
	{"replica_lost", ErrReplicaLost},
}

// endName is the engineEnds name of err, or "".
func endName(err error) string {
	for _, e := range engineEnds {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return ""
}

// remoteEnd is an engine error read back from a record: it has the text
// the runner's error had and is the same sentinel for errors.Is.
type remoteEnd struct {
	sentinel error
	text     string
}

func (e *remoteEnd) Error() string { return e.text }
func (e *remoteEnd) Unwrap() error { return e.sentinel }

// endError is the error named by a record's Ended and EndText.
func endError(name, text string) error {
	for _, e := range engineEnds {
		if e.name == name {
			if text == e.err.Error() || text == "" {
				return e.err
			}
			return &remoteEnd{sentinel: e.err, text: text}
		}
	}
	return fmt.Errorf("%w: unknown end %q", ErrShared, name)
}

// Its own deadline (SharedTimeout) is such a failure too; a caller's
// context that ends is returned as itself by the callers, not through here.
func sharedErr(op string, err error) error {
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) || errors.Is(err, ErrShared) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrShared, op, err)
}

// countedStore counts the failures of a SharedStore's calls in n: every
// error but a missing record and a lost compare-and-set, which are
// answers, not failures.
type countedStore struct {
	s SharedStore
	n *atomic.Uint64
}

func (c countedStore) count(err error) error {
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) && !errors.Is(err, context.Canceled) {
		c.n.Add(1)
	}
	return err
}

func (c countedStore) Create(ctx context.Context, r *Record) (uint64, error) {
	rev, err := c.s.Create(ctx, r)
	return rev, c.count(err)
}

func (c countedStore) Update(ctx context.Context, r *Record, rev uint64) (uint64, error) {
	rev, err := c.s.Update(ctx, r, rev)
	return rev, c.count(err)
}

func (c countedStore) Load(ctx context.Context, owner, id string, outcome bool) (*Record, uint64, error) {
	r, rev, err := c.s.Load(ctx, owner, id, outcome)
	return r, rev, c.count(err)
}

func (c countedStore) Delete(ctx context.Context, owner, id string) error {
	return c.count(c.s.Delete(ctx, owner, id))
}

func (c countedStore) List(ctx context.Context, owner string, max int) ([]*Record, error) {
	rs, err := c.s.List(ctx, owner, max)
	return rs, c.count(err)
}

func (c countedStore) Watch(ctx context.Context, owner, id string) (<-chan *Record, error) {
	ch, err := c.s.Watch(ctx, owner, id)
	return ch, c.count(err)
}

// countedPeers counts the failures of Peers' calls in n, as countedStore.
type countedPeers struct {
	p Peers
	n *atomic.Uint64
}

func (c countedPeers) Replica() string { return c.p.Replica() }

func (c countedPeers) Lease() (bool, uint64) { return c.p.Lease() }

func (c countedPeers) Alive(ctx context.Context, replica string) (bool, error) {
	ok, err := c.p.Alive(ctx, replica)
	return ok, countedStore{n: c.n}.count(err)
}

func (c countedPeers) Ask(ctx context.Context, replica string, ctl Control) (Reply, error) {
	r, err := c.p.Ask(ctx, replica, ctl)
	return r, countedStore{n: c.n}.count(err)
}

func (c countedPeers) Serve(h func(ctx context.Context, c Control) Reply) error {
	return countedStore{n: c.n}.count(c.p.Serve(h))
}
