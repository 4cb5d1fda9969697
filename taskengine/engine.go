package taskengine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/wasmtask/wasmtask/taskengine/internal/cursor"
)

// Task is a snapshot of a task's state. It is a plain value, safe to keep and
// to share; it never changes after it is returned.
type Task struct {
	ID, Owner                string
	Status                   Status
	StatusMessage            string // last one the work set through Run; the engine sets none
	CreatedAt, LastUpdatedAt time.Time
	TTL                      time.Duration // granted retention from CreatedAt; 0 = unlimited
	PollInterval             time.Duration // suggested
	Progress, Total          float64       // last progress report (Total 0 = unknown)
	Meta                     any           // SubmitOptions.Meta, as given
	// Err is why a terminal task ended, when an error ended it: the
	// Outcome.Err that [Engine.Wait] returns. That is [ErrCancelled],
	// [ErrDeadline] or [ErrClosed] when the engine ended the task, an error
	// wrapping [ErrPanic] or [ErrTooLarge] when the work's end went wrong,
	// or the work's own Outcome.Err. It is nil while the task runs and when
	// it completed or failed without an error (Outcome.Failed). The engine
	// words nothing for clients: callers turn Err into their own text.
	Err error
}

// SubmitOptions are the per-task choices of the submitter.
type SubmitOptions struct {
	// TTL is the requested retention, measured from creation: 0 asks for
	// Config.DefaultTTL, a negative value asks for unlimited (granted only
	// when Config.MaxTTL is negative), anything is clamped to Config.MaxTTL.
	TTL time.Duration
	// Meta is opaque to the engine and returned in every [Task] snapshot
	// (for example a progress token or a tool name).
	Meta any
}

// Outcome is what work produced. The engine never looks inside Value.
type Outcome struct {
	Value  any   // what the work produced (opaque)
	Err    error // a failure of the work itself; the task ends failed
	Failed bool  // the work produced a value but the task should end failed (e.g. a tool error result)
	Size   int64 // bytes this outcome holds, for MaxResultBytes accounting
}

// Work is a unit of work run as a task. ctx is the task's own context: it is
// detached from whoever submitted the task, and it is done when the task is
// cancelled, when its run time limit passes, or when the engine closes
// ([context.Cause] tells which: [ErrCancelled], [context.DeadlineExceeded],
// [ErrClosed]). Work should return promptly once ctx is done; the engine
// already considers the task over by then and discards what it returns.
type Work func(ctx context.Context, run *Run) Outcome

// Stats is a snapshot of the engine's occupancy.
type Stats struct {
	Tasks       int   // retained tasks, running and finished
	Running     int   // tasks whose work has not returned yet
	ResultBytes int64 // sum of Outcome.Size over retained tasks
	Owners      int   // owners with at least one retained task

	// With a shared store: calls into it (and to the other replicas)
	// that failed, a missing record or a lost compare-and-set not counted;
	// and tasks this engine failed because their runner's lease had
	// expired (ErrReplicaLost).
	StoreErrors, RunnersLost uint64
}

// StatusCounts returns how many retained tasks are in each status. It
// visits every retained task (O(n), at most Config.MaxTasks): meant for a
// metrics scrape, not a hot path.
func (e *Engine) StatusCounts() map[Status]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expireLocked(time.Now())
	counts := map[Status]int{StatusWorking: 0, StatusInputRequired: 0, StatusCompleted: 0, StatusFailed: 0, StatusCancelled: 0}
	for _, oi := range e.owners {
		for _, t := range oi.tasks {
			counts[t.status]++
		}
	}
	return counts
}

// Engine runs work as tasks and keeps their state and outcomes. All methods
// are safe for concurrent use. The owner that creates an Engine must call
// Close, which stops all work and waits for every goroutine of the engine.
type Engine struct {
	cfg     Config
	cursors cursor.Codec
	closing chan struct{} // closed by Close; wakes waiters
	wg      sync.WaitGroup

	storeErrors atomic.Uint64 // failed calls into the shared store and to peers
	runnersLost atomic.Uint64 // tasks this engine failed because their runner lost its lease

	mu       sync.Mutex
	closed   bool
	seq      uint64                 // creation counter, orders tasks for List
	running  map[taskKey]*task      // work not returned yet; never evicted
	finished int                    // tasks in the owners' finished LRUs
	expiry   expiryHeap             // every retained task with a TTL, soonest first
	owners   map[string]*ownerIndex // per owner: its finished LRU, counts, tasks by seq
	bytes    int64                  // sum of outcome.Size over finished

	// With Config.Shared (shared.go): changed tasks wait in writes for a
	// writer, which records them in the shared store.
	replica     string
	queue       []*task         // guarded by mu; each task at most once (task.queued)
	wake        chan struct{}   // capacity 1: the queue has work
	writersStop chan struct{}   // closed by Close once no work runs
	drain       context.Context // set by Close: the writers' last deadline
	// Subscriptions to other replicas' tasks, by task and in all.
	remoteWatches    map[taskKey]int
	remoteWatchTotal int
	writers          sync.WaitGroup
	stopWriters      sync.Once
}

// taskKey indexes running tasks by owner and ID together, so that a lookup
// with the wrong owner is an ordinary miss: the same code path as an
// unknown ID. Finished tasks are found by owner, then ID.
type taskKey struct{ owner, id string }

// ownerIndex is an owner's share of the store. An owner has one while it
// has a retained task, and no longer.
type ownerIndex struct {
	running  int                           // tasks of this owner whose work has not returned
	tasks    []*task                       // retained tasks in creation (seq) order
	finished *simplelru.LRU[string, *task] // work returned; by ID, evictable, recency-ordered
	bytes    int64                         // sum of outcome.Size over finished
}

// newOwnerIndex returns an empty index. Its LRU never evicts by itself:
// its size is the engine's MaxTasks, which no owner's finished tasks reach
// (the engine evicts explicitly, before a task is added).
func newOwnerIndex(maxTasks int) *ownerIndex {
	finished, err := simplelru.NewLRU[string, *task](maxTasks, nil)
	if err != nil {
		panic(err) // maxTasks > 0 after withDefaults: cannot happen
	}
	return &ownerIndex{finished: finished}
}

// task is the engine's record of one task. Fields below mu are guarded by
// Engine.mu; the others are set at Submit and never change.
type task struct {
	key       taskKey
	seq       uint64
	meta      any
	createdAt time.Time
	ttl       time.Duration
	expiresAt time.Time     // zero when the TTL is unlimited
	done      chan struct{} // closed when the status becomes terminal

	// ctx is the work's own context (not a request's); RequestInput watches
	// it. cancel ends it with a cause. Both are dropped when work returns.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// mu: Engine.mu
	status    Status
	msg       string
	updatedAt time.Time
	progress  float64
	total     float64
	outcome   Outcome
	isRunning bool // work has not returned
	heapIdx   int  // index in Engine.expiry, -1 when absent
	inputs    []*inputWait
	inputSeq  int
	subs      []*Subscription
	queued    bool   // in Engine.queue
	skipWrite bool   // the change about to be announced is already written
	writing   bool   // a writer is writing its record
	dirty     bool   // changed while being written: write again
	deleted   bool   // evicted: delete its record
	persisted Status // the terminal status persistOutcome wrote, if any
	stored    Status // the status its last record write that succeeded holds
	lost      bool   // the store says another replica declared it lost
	metaBytes []byte // with Config.Shared: meta, encoded

	// With Config.Shared: wmu orders the writes of this task's record;
	// rev is the revision of its last write.
	wmu sync.Mutex
	rev uint64 // guarded by wmu

	// epoch is the lease epoch (Peers.Lease) in which the store last
	// confirmed this replica still runs the task; guarded by Engine.mu.
	epoch uint64
}

// New returns an engine with the limits of cfg.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:     cfg,
		cursors: cursor.New(),
		closing: make(chan struct{}),
		running: make(map[taskKey]*task),
		owners:  make(map[string]*ownerIndex),
	}
	if cfg.Shared != nil {
		if err := e.startShared(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Submit creates a task for owner and starts work on it in its own
// goroutine. It returns at once with the new task, whose status is working.
// To make room it may evict owner's own least recently used finished tasks,
// never another owner's. It fails with ErrOwnerLimit, ErrFull or ErrClosed.
// With Config.Shared the task's record is written before Submit returns,
// within ctx (capped by SharedTimeout); the work itself never sees ctx: it
// runs from the engine's own context.
func (e *Engine) Submit(ctx context.Context, owner string, opts SubmitOptions, work Work) (Task, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return Task{}, ErrClosed
	}
	now := time.Now()
	e.expireLocked(now)
	if err := e.makeRoomLocked(owner, e.cfg.ownerLimits(owner)); err != nil {
		return Task{}, err
	}
	oi := e.owners[owner] // making room may have removed an empty index
	if oi == nil {
		oi = newOwnerIndex(e.cfg.MaxTasks)
		e.owners[owner] = oi
	}

	e.seq++
	ttl := e.cfg.grantTTL(opts.TTL)
	t := &task{
		key:       taskKey{owner: owner, id: rand.Text()},
		seq:       e.seq,
		meta:      opts.Meta,
		createdAt: now,
		ttl:       ttl,
		done:      make(chan struct{}),
		status:    StatusWorking,
		updatedAt: now,
		isRunning: true,
		heapIdx:   -1,
	}
	if ttl > 0 {
		t.expiresAt = now.Add(ttl)
		e.expiry.push(t)
	}
	if e.cfg.Shared != nil {
		_, t.epoch = e.cfg.Peers.Lease() // its record is written in this epoch
	}
	base, cancel := context.WithCancelCause(context.Background())
	runCtx, release := base, context.CancelFunc(func() {})
	if d := e.cfg.runTime(ttl); d > 0 {
		runCtx, release = context.WithDeadline(base, now.Add(d))
	}
	t.ctx, t.cancel = runCtx, cancel
	e.running[t.key] = t
	oi.running++
	oi.tasks = append(oi.tasks, t) // seq grows, so the slice stays sorted
	snap := e.snapshotLocked(t)
	if e.cfg.Shared == nil {
		e.startLocked(t, runCtx, work, release, cancel)
		return snap, nil
	}
	// Shared: the record exists before Submit returns, so any replica
	// answers for the task as soon as its ID is known. The task counts as
	// running meanwhile, so Close waits for this Submit (wg).
	e.wg.Add(1)
	defer e.wg.Done()
	e.mu.Unlock()
	err := callerErr(ctx, e.createRecord(ctx, t))
	e.mu.Lock()
	if err != nil {
		release()
		cancel(nil)
		e.abandonLocked(t)
		return Task{}, err
	}
	e.startLocked(t, runCtx, work, release, cancel)
	return snap, nil
}

// startLocked starts t's work, and the goroutine that applies its deadline.
func (e *Engine) startLocked(t *task, ctx context.Context, work Work, release context.CancelFunc, cancel context.CancelCauseFunc) {
	// The deadline makes the task failed at once, even if work is slow to
	// notice; the goroutine that context.AfterFunc starts is counted in wg.
	e.wg.Add(1)
	stopDeadline := context.AfterFunc(ctx, func() {
		defer e.wg.Done()
		e.onContextDone(t, ctx)
	})
	e.wg.Go(func() {
		e.run(t, ctx, work, func() {
			if stopDeadline() {
				e.wg.Done()
			}
			release()
			cancel(nil)
		})
	})
}

// abandonLocked forgets a task whose work never started.
func (e *Engine) abandonLocked(t *task) {
	if !t.status.Terminal() {
		t.status = StatusFailed // no one has seen it: no transition to announce
		close(t.done)
	}
	t.isRunning = false
	delete(e.running, t.key)
	e.owners[t.key.owner].running--
	e.forgetLocked(t)
}

// run calls work and records its outcome. It turns a panic (or
// runtime.Goexit) in work into a failure.
func (e *Engine) run(t *task, ctx context.Context, work Work, cleanup func()) {
	var out Outcome
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				out = Outcome{Err: fmt.Errorf("%w: %v", ErrPanic, r)}
			} else {
				out = Outcome{Err: fmt.Errorf("%w: work exited without returning", ErrPanic)}
			}
		}
		if e.cfg.Shared != nil {
			e.persistOutcome(t, out) // before anyone can see it: a result shown survives a crash
		}
		e.workReturned(t, out) // first, so a deadline at this instant cannot override out
		cleanup()
	}()
	out = work(ctx, &Run{e: e, t: t})
	returned = true
}

// onContextDone runs when the work's context ends. Cancel and Close make the
// task terminal before they cancel, so a task still live here has passed its
// run time limit.
func (e *Engine) onContextDone(t *task, ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.status.Terminal() {
		return
	}
	e.finishLocked(t, StatusFailed, Outcome{Err: causeOf(ctx)}, time.Now())
}

// workReturned records what work returned and moves the task from running
// to its owner's finished LRU (or drops it if it has expired or the engine
// closed), evicting the owner's own least recently used finished tasks
// until the owner's and the engine's result bytes fit.
func (e *Engine) workReturned(t *task, out Outcome) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	oi := e.owners[t.key.owner]
	lim := e.cfg.ownerLimits(t.key.owner)
	if !t.status.Terminal() {
		if err := e.unkeepableLocked(oi, lim, max(out.Size, 0)); err != nil {
			out = Outcome{Err: err}
		}
		// The record persistOutcome wrote says the same: no second write.
		t.skipWrite = t.persisted == outcomeStatus(out) && out.Err == nil
		e.finishLocked(t, outcomeStatus(out), out, now)
		t.skipWrite = false
	}
	t.isRunning = false
	t.ctx, t.cancel = nil, nil
	delete(e.running, t.key)
	oi.running--
	if e.closed || t.expiredAt(now) {
		e.forgetLocked(t)
		return
	}
	// unkeepableLocked let through only an outcome that fits once enough
	// of the owner's own finished tasks are gone (an outcome the engine set
	// has size 0), so the loop ends by the time the owner's LRU is empty.
	// It also trims an owner whose Limits were lowered.
	size := t.outcome.Size
	for oi.bytes+size > lim.MaxResultBytes || e.bytes+size > e.cfg.MaxResultBytes {
		_, oldest, ok := oi.finished.GetOldest()
		if !ok {
			break // cannot happen: see above
		}
		e.evictLocked(oldest) // t is still in oi.tasks, so oi stays indexed
	}
	oi.finished.Add(t.key.id, t)
	oi.bytes += size
	e.finished++
	e.bytes += size
}

// unkeepableLocked says why an outcome of size bytes cannot be kept for
// the owner of oi, whose bounds are lim, or returns nil if evicting that
// owner's own finished tasks makes room for it. Other owners' results are
// never evicted: if they alone leave too little of MaxResultBytes, the
// server's result store is full and the outcome is not kept either.
func (e *Engine) unkeepableLocked(oi *ownerIndex, lim OwnerLimits, size int64) error {
	switch {
	case size > e.cfg.MaxResultBytes:
		return fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, size, e.cfg.MaxResultBytes)
	case size > lim.MaxResultBytes:
		return fmt.Errorf("%w: %d > %d bytes, the owner's limit", ErrTooLarge, size, lim.MaxResultBytes)
	case e.bytes-oi.bytes+size > e.cfg.MaxResultBytes:
		return fmt.Errorf("%w: %d bytes: the server's result store is full", ErrTooLarge, size)
	}
	return nil
}

// outcomeStatus is the terminal status of a task whose work returned out.
func outcomeStatus(out Outcome) Status {
	if out.Err != nil || out.Failed {
		return StatusFailed
	}
	return StatusCompleted
}

// finishLocked makes a live task terminal with status to and outcome out.
func (e *Engine) finishLocked(t *task, to Status, out Outcome, now time.Time) {
	out.Size = max(out.Size, 0)
	t.outcome = out
	if err := e.setStatusLocked(t, to, now); err != nil {
		panic(err) // callers check Terminal first; reaching this is a bug
	}
}

// setStatusLocked moves t to status to, refusing illegal transitions.
// Reaching a terminal state closes done, drops pending input requests and
// closes every subscription after it has received the final snapshot.
func (e *Engine) setStatusLocked(t *task, to Status, now time.Time) error {
	if !t.status.CanBecome(to) {
		return fmt.Errorf("%w: %s to %s", ErrIllegalTransition, t.status, to)
	}
	t.status = to
	t.updatedAt = now
	if to.Terminal() {
		close(t.done)
		t.inputs = nil
	}
	e.notifyLocked(t)
	return nil
}

// lookupLocked finds owner's task id. Unknown IDs, other owners' tasks and
// expired tasks all give ErrNotFound from the same two map lookups.
func (e *Engine) lookupLocked(owner, id string, now time.Time) (*task, error) {
	if e.closed {
		return nil, ErrClosed
	}
	e.expireLocked(now)
	t, ok := e.running[taskKey{owner: owner, id: id}]
	if !ok {
		if oi := e.owners[owner]; oi != nil {
			t, ok = oi.finished.Get(id) // marks it recently used
		}
	}
	if !ok || t.expiredAt(now) {
		return nil, ErrNotFound
	}
	return t, nil
}

// Get returns a snapshot of owner's task id, or ErrNotFound. ctx bounds
// the read of another replica's task.
func (e *Engine) Get(ctx context.Context, owner, id string) (Task, error) {
	e.mu.Lock()
	t, err := e.lookupLocked(owner, id, time.Now())
	if err != nil {
		e.mu.Unlock()
		if e.isRemote(err) {
			t, err := e.getRemote(ctx, owner, id)
			return t, callerErr(ctx, err)
		}
		return Task{}, err
	}
	if !e.vouchedLocked(t) || e.unstoredLocked(t) {
		e.mu.Unlock()
		snap, _, err := e.confirmed(ctx, t)
		return snap, err
	}
	defer e.mu.Unlock()
	return e.snapshotLocked(t), nil
}

// Local returns a snapshot of owner's task id when this replica holds it,
// without reaching the shared store: a question a caller may ask where it
// must not wait (a connection's read loop).
func (e *Engine) Local(owner, id string) (Task, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.lookupLocked(owner, id, time.Now())
	if err != nil {
		return Task{}, false
	}
	return e.snapshotLocked(t), true
}

// isRemote says whether a lookup that failed with err should try the
// shared store: the task may be another replica's.
func (e *Engine) isRemote(err error) bool {
	return e.cfg.Shared != nil && err == ErrNotFound
}

// Wait blocks until owner's task id is terminal and returns its final
// snapshot and exactly the Outcome its work produced (for a task the engine
// ended, Outcome.Err is ErrCancelled, ErrDeadline or ErrClosed; it is always
// the snapshot's Task.Err). It returns early with ctx's error, with
// ErrNotFound, or with ErrClosed when the engine closes. Waiters hold no
// engine resources besides their own goroutine; any number may wait.
func (e *Engine) Wait(ctx context.Context, owner, id string) (Task, Outcome, error) {
	e.mu.Lock()
	t, err := e.lookupLocked(owner, id, time.Now())
	e.mu.Unlock()
	if e.isRemote(err) {
		t, out, err := e.waitRemote(ctx, owner, id)
		return t, out, callerErr(ctx, err)
	}
	if err != nil {
		return Task{}, Outcome{}, err
	}
	select {
	case <-t.done:
	default:
		select {
		case <-t.done:
		case <-ctx.Done():
			return Task{}, Outcome{}, ctx.Err()
		case <-e.closing:
		}
	}
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return Task{}, Outcome{}, ErrClosed
	case !e.vouchedLocked(t) || e.unstoredLocked(t):
		e.mu.Unlock()
		return e.confirmed(ctx, t)
	}
	defer e.mu.Unlock()
	// A waiter that was already waiting gets the outcome even if the task
	// expired or was evicted the moment it ended.
	return e.snapshotLocked(t), t.outcome, nil
}

// Cancel moves owner's live task id to cancelled, then cancels its work's
// context (with cause ErrCancelled), and returns the cancelled snapshot.
// Whatever the work returns afterwards is discarded. On a terminal task it
// returns the current snapshot and ErrTerminal. ctx bounds the request to
// the replica running another replica's task.
func (e *Engine) Cancel(ctx context.Context, owner, id string) (Task, error) {
	e.mu.Lock()
	t, err := e.lookupLocked(owner, id, time.Now())
	if err != nil {
		e.mu.Unlock()
		if e.isRemote(err) {
			t, err := e.askRunner(ctx, owner, id, Control{Op: ControlCancel, Owner: owner, ID: id})
			return t, callerErr(ctx, err)
		}
		return Task{}, err
	}
	if !e.vouchedLocked(t) {
		e.mu.Unlock()
		if snap, _, err := e.confirmed(ctx, t); err != nil || snap.Status.Terminal() {
			if err == nil {
				err = ErrTerminal
			}
			return snap, err
		}
		e.mu.Lock()
	}
	// With a shared store a cancel is acknowledged once its record is
	// written (so every replica reads it); a cancel whose write failed is
	// written when asked again.
	unwritten := e.cfg.Shared != nil && t.status == StatusCancelled && t.stored != StatusCancelled && errors.Is(t.outcome.Err, ErrCancelled)
	if t.status.Terminal() && !unwritten {
		if e.unstoredLocked(t) {
			e.mu.Unlock()
			snap, _, err := e.settled(ctx, t)
			if err == nil {
				err = ErrTerminal
			}
			return snap, err
		}
		defer e.mu.Unlock()
		return e.snapshotLocked(t), ErrTerminal
	}
	if !unwritten {
		t.skipWrite = e.cfg.Shared != nil // written below, not by a writer
		e.finishLocked(t, StatusCancelled, Outcome{Err: ErrCancelled}, time.Now())
		t.skipWrite = false
		t.cancel(ErrCancelled)
	}
	snap := e.snapshotLocked(t)
	e.mu.Unlock()
	if e.cfg.Shared == nil {
		return snap, nil
	}
	lost, err := e.writeNow(ctx, t)
	switch {
	case lost != nil:
		snap, _, err := e.taskOf(lost)
		if err == nil {
			err = ErrTerminal
		}
		return snap, err
	case err != nil:
		e.mu.Lock()
		e.queueWriteLocked(t) // the writers keep trying
		e.mu.Unlock()
		return Task{}, callerErr(ctx, err)
	}
	return snap, nil
}

// Stats returns the engine's current occupancy.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expireLocked(time.Now())
	return Stats{
		Tasks:       len(e.running) + e.finished,
		Running:     len(e.running),
		ResultBytes: e.bytes,
		Owners:      len(e.owners),
		StoreErrors: e.storeErrors.Load(),
		RunnersLost: e.runnersLost.Load(),
	}
}

// Close cancels every live task (status cancelled, cause ErrClosed), wakes
// every waiter with ErrClosed, closes every subscription, and returns once
// all goroutines the engine started have exited. That includes work: Close
// waits for each Work function to return, so work must honour its context.
// After Close every method but Stats returns ErrClosed. Close is
// idempotent.
func (e *Engine) Close() error {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.closing)
		now := time.Now()
		for _, t := range e.running {
			if !t.status.Terminal() {
				e.finishLocked(t, StatusCancelled, Outcome{Err: ErrClosed}, now)
			}
			t.cancel(ErrClosed)
		}
	}
	e.mu.Unlock()
	e.wg.Wait()
	if e.writersStop != nil {
		e.stopWriters.Do(func() {
			drain, cancel := context.WithTimeout(context.Background(), e.cfg.SharedTimeout)
			defer cancel()
			e.drain = drain // before the close that the writers read it after
			close(e.writersStop)
			e.writers.Wait() // every record written, or the drain deadline passed
		})
	}
	return nil
}

func (t *task) expiredAt(now time.Time) bool {
	return !t.expiresAt.IsZero() && !now.Before(t.expiresAt)
}

func (e *Engine) snapshotLocked(t *task) Task {
	return Task{
		ID:            t.key.id,
		Owner:         t.key.owner,
		Status:        t.status,
		StatusMessage: t.msg,
		CreatedAt:     t.createdAt.Round(0),
		LastUpdatedAt: t.updatedAt.Round(0),
		TTL:           t.ttl,
		PollInterval:  e.cfg.PollInterval,
		Progress:      t.progress,
		Total:         t.total,
		Meta:          t.meta,
		Err:           t.outcome.Err,
	}
}
