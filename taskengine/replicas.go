package taskengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wasmtask/wasmtask/taskengine/internal/cursor"
)

// writerCount is how many goroutines write records: enough that one slow
// write does not hold up every task's, few enough to bound the store's load.
const writerCount = 4

func (e *Engine) startShared() error {
	e.cfg.Shared = countedStore{e.cfg.Shared, &e.storeErrors}
	e.cfg.Peers = countedPeers{e.cfg.Peers, &e.storeErrors}
	e.replica = e.cfg.Peers.Replica()
	e.cursors = cursor.Shared(e.cfg.SharedKey)
	e.wake = make(chan struct{}, 1)
	e.writersStop = make(chan struct{})
	if err := e.cfg.Peers.Serve(e.serveControl); err != nil {
		return sharedErr("serve", err)
	}
	for range writerCount {
		e.writers.Go(e.writeLoop)
	}
	_, epoch := e.cfg.Peers.Lease()
	e.wg.Go(func() { e.recheckLoop(epoch) })
	return nil
}

// recheckLoop checks, whenever this replica's lease epoch has grown (its
// lease may have lapsed: a pause, or the store away longer than a lease),
// each task it is running against the store, so that one the cluster
// declared lost meanwhile stops running here at once rather than at its
// next write. seen is the epoch at start; it runs until Close.
func (e *Engine) recheckLoop(seen uint64) {
	tick := time.NewTicker(e.cfg.LivenessCheck)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-e.closing:
			return
		}
		held, epoch := e.cfg.Peers.Lease()
		if !held || epoch == seen {
			continue
		}
		e.recheck(epoch)
		seen = epoch
	}
}

// recheck confirms each running task not yet confirmed in epoch.
func (e *Engine) recheck(epoch uint64) {
	e.mu.Lock()
	var stale []*task
	for _, t := range e.running {
		if t.epoch != epoch && !t.status.Terminal() {
			stale = append(stale, t)
		}
	}
	e.mu.Unlock()
	for _, t := range stale {
		select {
		case <-e.closing:
			return
		default:
		}
		_, _, _ = e.confirmed(context.Background(), t) // fails it here if it was lost
	}
}

// sharedCtx bounds one call into the shared store or to a peer made for a
// caller: its ctx, capped by SharedTimeout.
func (e *Engine) sharedCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.SharedTimeout)
}

// callerErr is err, or the caller's own context error when ctx ended: a
// caller that gave up learns that, not a store failure.
func callerErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// queueWriteLocked queues t's record for writing, once: a task whose
// record is being written is marked dirty instead, and its writer writes
// it again, so one busy task holds at most one writer.
func (e *Engine) queueWriteLocked(t *task) {
	switch {
	case e.wake == nil || t.queued || t.skipWrite:
		return
	case t.writing:
		t.dirty = true
		return
	}
	t.queued = true
	e.queue = append(e.queue, t)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// evictLocked drops a finished task to make room, and deletes its record:
// an evicted task is gone on every replica, as in one process.
func (e *Engine) evictLocked(t *task) {
	e.dropLocked(t)
	if e.wake != nil {
		t.deleted = true
		e.queueWriteLocked(t)
	}
}

// writeLoop writes queued records until Close has stopped the work and
// the queue is empty (or the drain deadline passed).
func (e *Engine) writeLoop() {
	for {
		t, ok := e.nextWrite()
		if !ok {
			return
		}
		for {
			e.writeRecord(t)
			e.mu.Lock()
			again := t.dirty
			t.dirty, t.writing = false, again
			e.mu.Unlock()
			if !again {
				break
			}
		}
	}
}

// nextWrite takes the next task to write, marking it as being written.
func (e *Engine) nextWrite() (*task, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		for len(e.queue) > 0 {
			t := e.queue[0]
			e.queue[0] = nil
			e.queue = e.queue[1:]
			t.queued = false
			if t.writing {
				t.dirty = true
				continue
			}
			t.writing = true
			if len(e.queue) > 0 { // pass the wake-up on to another writer
				select {
				case e.wake <- struct{}{}:
				default:
				}
			}
			return t, true
		}
		e.mu.Unlock()
		select {
		case <-e.wake:
			e.mu.Lock()
		case <-e.writersStop:
			e.mu.Lock()
			if len(e.queue) == 0 || e.drain.Err() != nil {
				return nil, false
			}
		}
	}
}

// writeCtx bounds one write: SharedTimeout, and once Close has begun, the
// drain deadline too.
func (e *Engine) writeCtx() (context.Context, context.CancelFunc) {
	select {
	case <-e.writersStop:
		return context.WithTimeout(e.drain, e.cfg.SharedTimeout)
	default:
		return e.sharedCtx(context.Background())
	}
}

// writeRecord writes t's current state over its record (or deletes it),
// retrying until it is written: a task's last state is never dropped while
// the engine runs (after Close, until the drain deadline). A conflict is
// resolved by reading the record: if another replica declared the task
// lost, the runner ends it the same way; otherwise it was this replica's
// own write whose answer was lost, and it writes again on top of it. It
// holds t.wmu for one attempt at a time, never while it backs off.
func (e *Engine) writeRecord(t *task) {
	for attempt := 0; ; attempt++ {
		ctx, cancel := e.writeCtx()
		done, conflict := e.writeOnce(ctx, t)
		again := false
		if conflict {
			again, _, _ = e.resolveConflict(ctx, t)
		}
		cancel()
		switch {
		case again:
			continue
		case conflict || done:
			return
		}
		select {
		case <-time.After(backoff(attempt)):
		case <-e.writersStop:
			if attempt > 0 || e.drain.Err() != nil {
				return // closing: the replica's lease ends and others fail what is left
			}
		}
	}
}

// backoff is how long a writer waits before its next attempt: 50ms,
// 100ms, … 2s.
func backoff(attempt int) time.Duration {
	return min(50*time.Millisecond<<min(attempt, 6), 2*time.Second)
}

// writeNow writes t's record before its caller answers (a cancel is
// acknowledged only once it is stored), retrying within ctx capped by
// SharedTimeout. If another replica declared t lost first, t is failed
// here too and the store's record is returned: that is the task's state.
func (e *Engine) writeNow(ctx context.Context, t *task) (*Record, error) {
	ctx, cancel := e.sharedCtx(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		done, conflict := e.writeOnce(ctx, t)
		if conflict {
			again, lost, err := e.resolveConflict(ctx, t)
			switch {
			case lost != nil:
				return lost, nil
			case again:
				continue
			case err != nil:
				return nil, sharedErr("load", err)
			}
			return nil, nil // the record is gone with its TTL
		}
		if done {
			return nil, nil
		}
		select {
		case <-time.After(backoff(attempt)):
		case <-ctx.Done():
			return nil, sharedErr("update", context.Cause(ctx))
		}
	}
}

// writeOnce makes one attempt at writing t's record within ctx: done when
// there is nothing more to write, conflict when another write came first.
func (e *Engine) writeOnce(ctx context.Context, t *task) (done, conflict bool) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	e.mu.Lock()
	if t.rev == 0 || t.persisted != "" && !t.status.Terminal() && !t.deleted {
		// Not created yet: createRecord writes it and queues any change
		// since. Or persistOutcome wrote a newer state than this one.
		e.mu.Unlock()
		return true, false
	}
	del := t.deleted
	r := e.recordLocked(t)
	out := t.outcome
	e.mu.Unlock()
	var err error
	if del {
		err = e.cfg.Shared.Delete(ctx, t.key.owner, t.key.id)
	} else if err = e.encodeOutcome(r, out); err != nil {
		return true, false // our own codec cannot encode it: no retry helps
	} else {
		var rev uint64
		if rev, err = e.cfg.Shared.Update(ctx, r, t.rev); err == nil {
			t.rev = rev
			e.mu.Lock()
			t.stored = r.Status
			e.mu.Unlock()
		}
	}
	switch {
	case err == nil || errors.Is(err, ErrNotFound):
		return true, false
	case errors.Is(err, ErrConflict):
		return false, true
	}
	return false, false
}

// resolveConflict reads the record a write conflicted with. It reports
// whether to write again (t.rev now names the stored revision), or the
// record that says another replica declared t lost (t is failed here
// too), or why the record could not be read (ErrNotFound: it expired).
func (e *Engine) resolveConflict(ctx context.Context, t *task) (again bool, lost *Record, err error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	r, rev, err := e.cfg.Shared.Load(ctx, t.key.owner, t.key.id, false)
	if errors.Is(err, ErrNotFound) {
		return false, nil, nil // gone with its TTL: nothing to write over
	}
	if err != nil {
		return false, nil, err
	}
	if e.lostHere(t, r) {
		return false, r, nil
	}
	t.rev = rev
	return true, nil, nil
}

// lostHere reports whether r, t's record, says this replica no longer runs
// t (another replica declared it lost, or took it); t is then failed here
// too and its work cancelled.
func (e *Engine) lostHere(t *task, r *Record) bool {
	if r.Runner == e.replica && r.Ended != endName(ErrReplicaLost) {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.lost = true
	if !t.status.Terminal() {
		e.finishLocked(t, StatusFailed, Outcome{Err: ErrReplicaLost}, time.Now())
		t.cancel(ErrReplicaLost)
	}
	return true
}

// vouchedLocked reports whether this replica may answer for its task t
// from memory: without a shared store always; with one, while its lease
// is held in the epoch the store last confirmed t in. Otherwise another
// replica may have failed t meanwhile (this one paused, or the store was
// away longer than a lease), and the store's record is the truth.
func (e *Engine) vouchedLocked(t *task) bool {
	if e.cfg.Shared == nil {
		return true
	}
	held, epoch := e.cfg.Peers.Lease()
	return held && t.epoch == epoch && !t.lost
}

// unstoredLocked reports whether t's state is terminal but not yet in
// the store (its final write failed and is being retried): memory alone
// must not answer for it, since another replica may still declare it lost.
func (e *Engine) unstoredLocked(t *task) bool {
	return e.cfg.Shared != nil && t.status.Terminal() && t.stored != t.status
}

// settled answers for t, whose end is not yet stored, once it is: it
// writes the record now, and answers from memory once that is done, or
// with the store's record when another replica declared t lost first.
func (e *Engine) settled(ctx context.Context, t *task) (Task, Outcome, error) {
	lost, err := e.writeNow(ctx, t)
	switch {
	case lost != nil:
		return e.taskOf(lost)
	case err != nil:
		return Task{}, Outcome{}, callerErr(ctx, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshotLocked(t), t.outcome, nil
}

// confirmed reads t's record and answers from it: a task the cluster
// declared lost is failed here too (its work cancelled), and the record's
// state and outcome are returned, now and at every later read (t.lost:
// its epoch is never confirmed again); one the record still gives this
// replica is confirmed for the current epoch and answered from memory.
func (e *Engine) confirmed(ctx context.Context, t *task) (Task, Outcome, error) {
	_, epoch := e.cfg.Peers.Lease()
	sctx, cancel := e.sharedCtx(ctx)
	defer cancel()
	r, _, err := e.cfg.Shared.Load(sctx, t.key.owner, t.key.id, true)
	if errors.Is(err, ErrNotFound) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if t.lost { // its record expired: so has the task
			return Task{}, Outcome{}, ErrNotFound
		}
		// Not written yet (createRecord is on its way), or gone with
		// its TTL: memory is all there is.
		return e.snapshotLocked(t), t.outcome, nil
	}
	if err != nil {
		return Task{}, Outcome{}, callerErr(ctx, sharedErr("load", err))
	}
	if e.lostHere(t, r) {
		return e.taskOf(r)
	}
	e.mu.Lock()
	if held, now := e.cfg.Peers.Lease(); held && now == epoch {
		t.epoch = epoch
	}
	if e.unstoredLocked(t) {
		e.mu.Unlock()
		return e.settled(ctx, t)
	}
	defer e.mu.Unlock()
	return e.snapshotLocked(t), t.outcome, nil
}

// persistOutcome writes the record of a task whose work returned out, as
// workReturned is about to make it, before it does: a result that anyone
// has seen is in the store, so it survives a crash of this replica. If the
// task changes meanwhile (a cancel), the writer writes that over it.
func (e *Engine) persistOutcome(t *task, out Outcome) {
	e.mu.Lock()
	if t.status.Terminal() {
		e.mu.Unlock()
		return // ended by the engine: the writer records that
	}
	if err := e.unkeepableLocked(e.owners[t.key.owner], e.cfg.ownerLimits(t.key.owner), max(out.Size, 0)); err != nil {
		e.mu.Unlock()
		return // not kept: workReturned fails it, the writer records that
	}
	r := e.recordLocked(t)
	e.mu.Unlock()
	r.Status, r.UpdatedAt, r.Inputs = outcomeStatus(out), time.Now().Round(0), nil
	out.Size = max(out.Size, 0)
	if err := e.encodeOutcome(r, out); err != nil {
		return
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	ctx, cancel := e.sharedCtx(context.Background())
	defer cancel()
	rev, err := e.cfg.Shared.Update(ctx, r, t.rev)
	if errors.Is(err, ErrConflict) {
		// Another replica may have declared the task lost: then it is
		// failed here before workReturned could make it completed, so
		// that no answer of this replica disagrees with the store's.
		if stored, _, err := e.cfg.Shared.Load(ctx, t.key.owner, t.key.id, false); err == nil {
			e.lostHere(t, stored)
		}
		return
	}
	if err != nil {
		return // the writer tries again with the final state
	}
	t.rev = rev
	e.mu.Lock()
	t.persisted, t.stored = r.Status, r.Status
	e.mu.Unlock()
}

// createRecord writes a new task's first record, within ctx.
func (e *Engine) createRecord(ctx context.Context, t *task) error {
	e.mu.Lock()
	r := e.recordLocked(t)
	e.mu.Unlock()
	ctx, cancel := e.sharedCtx(ctx)
	defer cancel()
	meta, err := e.cfg.Codec.Encode(KindMeta, t.meta)
	if err != nil {
		return fmt.Errorf("%w: encode: %w", ErrShared, err)
	}
	e.mu.Lock()
	t.metaBytes = meta
	e.mu.Unlock()
	r.Meta = meta
	t.wmu.Lock()
	defer t.wmu.Unlock()
	rev, err := e.cfg.Shared.Create(ctx, r)
	if err != nil {
		return sharedErr("create", err)
	}
	t.rev = rev
	e.mu.Lock()
	t.stored = r.Status
	if t.status != r.Status || !t.updatedAt.Round(0).Equal(r.UpdatedAt) {
		e.queueWriteLocked(t) // changed while it was created
	}
	e.mu.Unlock()
	return nil
}

// recordLocked is t's record but for the outcome (encodeOutcome). Meta
// and input payloads were encoded once, when they were given.
func (e *Engine) recordLocked(t *task) *Record {
	r := &Record{
		ID:            t.key.id,
		Owner:         t.key.owner,
		Runner:        e.replica,
		Status:        t.status,
		StatusMessage: t.msg,
		CreatedAt:     t.createdAt.Round(0),
		UpdatedAt:     t.updatedAt.Round(0),
		TTL:           t.ttl,
		Progress:      t.progress,
		Total:         t.total,
		Meta:          t.metaBytes,
	}
	for _, w := range t.inputs {
		r.Inputs = append(r.Inputs, RecordInput{ID: w.req.ID, Payload: w.payload})
	}
	return r
}

// encodeOutcome fills a terminal record's outcome fields from out.
func (e *Engine) encodeOutcome(r *Record, out Outcome) error {
	if !r.Status.Terminal() {
		return nil
	}
	if name := endName(out.Err); name != "" {
		r.Ended, r.EndText = name, out.Err.Error()
		out.Err = nil
		if out.Value == nil && !out.Failed {
			return nil
		}
	}
	b, err := e.cfg.Codec.Encode(KindOutcome, out)
	if err != nil {
		return fmt.Errorf("%w: encode outcome: %w", ErrShared, err)
	}
	r.Outcome, r.Size = b, out.Size
	return nil
}

// remote is a task another replica runs (or ran), as its record says.
type remote struct {
	r   *Record
	rev uint64
}

// loadRemote loads owner's task id from the shared store (with its
// outcome if outcome is set). A task that is not terminal but whose runner
// lost its lease is failed first.
func (e *Engine) loadRemote(ctx context.Context, owner, id string, outcome bool) (remote, error) {
	r, rev, err := e.cfg.Shared.Load(ctx, owner, id, outcome)
	if err != nil {
		return remote{}, sharedErr("load", err)
	}
	if r.Owner != owner || r.ID != id {
		return remote{}, ErrNotFound // a store that mixes up keys must not leak
	}
	if r.TTL > 0 && !time.Now().Before(r.CreatedAt.Add(r.TTL)) {
		return remote{}, ErrNotFound
	}
	return e.checkRunner(ctx, remote{r, rev})
}

// checkRunner fails a live remote task whose runner does not hold its
// lease. A live task whose runner is this replica is an orphan (this
// engine would hold it otherwise: a Create whose answer was lost): it is
// failed the same way.
func (e *Engine) checkRunner(ctx context.Context, rt remote) (remote, error) {
	if rt.r.Status.Terminal() {
		return rt, nil
	}
	if rt.r.Runner != e.replica {
		alive, err := e.cfg.Peers.Alive(ctx, rt.r.Runner)
		if err != nil {
			return remote{}, sharedErr("lease", err)
		}
		if alive {
			return rt, nil
		}
	}
	return e.markLost(ctx, rt)
}

// markLost fails a live task whose runner no longer runs it, by
// compare-and-set: if the record changed meanwhile, the newer one is read
// and judged again.
func (e *Engine) markLost(ctx context.Context, rt remote) (remote, error) {
	for range 3 {
		if rt.r.Status.Terminal() {
			return rt, nil
		}
		lost := *rt.r
		lost.Status = StatusFailed
		lost.UpdatedAt = time.Now().Round(0)
		lost.Inputs = nil
		lost.Ended, lost.EndText = endName(ErrReplicaLost), ErrReplicaLost.Error()
		rev, err := e.cfg.Shared.Update(ctx, &lost, rt.rev)
		if err == nil {
			e.runnersLost.Add(1)
			return remote{&lost, rev}, nil
		}
		if !errors.Is(err, ErrConflict) {
			return remote{}, sharedErr("update", err)
		}
		r, rev, err := e.cfg.Shared.Load(ctx, rt.r.Owner, rt.r.ID, false)
		if err != nil {
			return remote{}, sharedErr("load", err)
		}
		rt = remote{r, rev}
		if !rt.r.Status.Terminal() && rt.r.Runner != e.replica {
			if alive, err := e.cfg.Peers.Alive(ctx, rt.r.Runner); err != nil || alive {
				return rt, sharedErrOrNil("lease", err)
			}
		}
	}
	return rt, nil
}

func sharedErrOrNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return sharedErr(op, err)
}

// taskOf is the snapshot a record describes.
func (e *Engine) taskOf(r *Record) (Task, Outcome, error) {
	t := Task{
		ID:            r.ID,
		Owner:         r.Owner,
		Status:        r.Status,
		StatusMessage: r.StatusMessage,
		CreatedAt:     r.CreatedAt,
		LastUpdatedAt: r.UpdatedAt,
		TTL:           r.TTL,
		PollInterval:  e.cfg.PollInterval,
		Progress:      r.Progress,
		Total:         r.Total,
	}
	var err error
	if len(r.Meta) > 0 {
		if t.Meta, err = e.cfg.Codec.Decode(KindMeta, r.Meta); err != nil {
			return Task{}, Outcome{}, fmt.Errorf("%w: decode meta: %w", ErrShared, err)
		}
	}
	var out Outcome
	if len(r.Outcome) > 0 {
		v, err := e.cfg.Codec.Decode(KindOutcome, r.Outcome)
		if err != nil {
			return Task{}, Outcome{}, fmt.Errorf("%w: decode outcome: %w", ErrShared, err)
		}
		out, _ = v.(Outcome)
		out.Size = r.Size
	}
	if r.Ended != "" {
		out.Err = endError(r.Ended, r.EndText)
	}
	t.Err = out.Err
	return t, out, nil
}

// getRemote is Get for a task the engine does not hold.
func (e *Engine) getRemote(ctx context.Context, owner, id string) (Task, error) {
	ctx, cancel := e.sharedCtx(ctx)
	defer cancel()
	rt, err := e.loadRemote(ctx, owner, id, false)
	if err != nil {
		return Task{}, err
	}
	t, _, err := e.taskOf(rt.r)
	return t, err
}

// waitRemote is Wait for a task the engine does not hold.
func (e *Engine) waitRemote(ctx context.Context, owner, id string) (Task, Outcome, error) {
	lctx, cancel := e.sharedCtx(ctx)
	rt, err := e.loadRemote(lctx, owner, id, false)
	cancel()
	if err != nil {
		return Task{}, Outcome{}, err
	}
	if rt, err = e.follow(ctx, rt, nil); err != nil {
		return Task{}, Outcome{}, err
	}
	if rt.r.OutcomeOmitted { // a large outcome: read only now, once
		lctx, cancel := e.sharedCtx(ctx)
		rt, err = e.loadRemote(lctx, owner, id, true)
		cancel()
		if err != nil {
			return Task{}, Outcome{}, err
		}
	}
	return e.taskOf(rt.r)
}

// follow reads the versions of a remote task's record until one is
// terminal, calling each (if not nil) with every version, and fails the
// task if its runner's lease lapses first. It returns the terminal record.
func (e *Engine) follow(ctx context.Context, rt remote, each func(*Record)) (remote, error) {
	if rt.r.Status.Terminal() {
		return rt, nil
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := e.cfg.Shared.Watch(wctx, rt.r.Owner, rt.r.ID)
	if err != nil {
		return remote{}, sharedErr("watch", err)
	}
	tick := time.NewTicker(e.cfg.LivenessCheck)
	defer tick.Stop()
	for !rt.r.Status.Terminal() {
		select {
		case r, ok := <-ch:
			if !ok {
				if ctx.Err() != nil {
					return remote{}, ctx.Err()
				}
				return remote{}, fmt.Errorf("%w: watch ended", ErrShared)
			}
			if r.Owner != rt.r.Owner || r.ID != rt.r.ID {
				continue
			}
			rt.r = r
		case <-tick.C:
			lctx, cancel := e.sharedCtx(ctx)
			rt, err = e.loadRemote(lctx, rt.r.Owner, rt.r.ID, false)
			cancel()
			if err != nil {
				return remote{}, err
			}
		case <-ctx.Done():
			return remote{}, ctx.Err()
		case <-e.closing:
			return remote{}, ErrClosed
		}
		if each != nil {
			each(rt.r)
		}
	}
	return rt, nil
}

// watchRemote is Watch for a task the engine does not hold: a goroutine
// (counted in wg, so Close waits for it) follows the record and offers
// each version to the subscription.
func (e *Engine) watchRemote(ctx context.Context, owner, id string) (*Subscription, error) {
	ctx, cancel := e.sharedCtx(ctx)
	rt, err := e.loadRemote(ctx, owner, id, false)
	cancel()
	if err != nil {
		return nil, err
	}
	t, _, err := e.taskOf(rt.r)
	if err != nil {
		return nil, err
	}
	s := &Subscription{e: e, ch: make(chan Task, 1)}
	s.ch <- t
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || t.Status.Terminal() {
		s.closed = true
		close(s.ch)
		return s, nil
	}
	// Each costs a goroutine here and a consumer in the store: bounded per
	// task as a local task's are, and in all.
	key := taskKey{owner, id}
	if e.remoteWatches[key] >= e.cfg.MaxWatchersPerTask || e.remoteWatchTotal >= maxRemoteWatches {
		return nil, ErrTooManyWatchers
	}
	if e.remoteWatches == nil {
		e.remoteWatches = map[taskKey]int{}
	}
	e.remoteWatches[key]++
	e.remoteWatchTotal++
	fctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	e.wg.Go(func() {
		defer stop()
		defer func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.remoteWatches[key]--; e.remoteWatches[key] == 0 {
				delete(e.remoteWatches, key)
			}
			e.remoteWatchTotal--
		}()
		_, _ = e.follow(fctx, rt, func(r *Record) {
			t, _, err := e.taskOf(r)
			if err != nil {
				stop()
				return
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if !s.closed {
				s.offerLocked(t)
			}
		})
		e.mu.Lock()
		defer e.mu.Unlock()
		if !s.closed { // ended, failed or stopped: the channel closes
			s.closed = true
			close(s.ch)
		}
	})
	return s, nil
}

// askRunner sends a control request for a live remote task to its runner.
// A runner that does not answer and no longer holds its lease lost the
// task: it is failed, and the request meets a terminal task.
func (e *Engine) askRunner(ctx context.Context, owner, id string, c Control) (Task, error) {
	ctx, cancel := e.sharedCtx(ctx)
	defer cancel()
	rt, err := e.loadRemote(ctx, owner, id, false)
	if err != nil {
		return Task{}, err
	}
	if rt.r.Status.Terminal() {
		t, _, err := e.taskOf(rt.r)
		if err != nil {
			return Task{}, err
		}
		return t, ErrTerminal
	}
	reply, err := e.cfg.Peers.Ask(ctx, rt.r.Runner, c)
	if err != nil {
		if rt, lerr := e.checkRunner(ctx, rt); lerr == nil && rt.r.Status.Terminal() {
			t, _, err := e.taskOf(rt.r)
			if err != nil {
				return Task{}, err
			}
			return t, ErrTerminal
		}
		return Task{}, sharedErr("ask", err)
	}
	if reply.Record == nil {
		if reply.Err == controlErrName(ErrNotFound) {
			// The runner holds its lease but not the task (it expired or
			// was evicted there before its end was written, or its create
			// was never confirmed): it runs nowhere. Fail it.
			if rt, err = e.markLost(ctx, rt); err != nil {
				return Task{}, err
			}
			t, _, err := e.taskOf(rt.r)
			if err != nil {
				return Task{}, err
			}
			return t, ErrTerminal
		}
		return Task{}, controlError(reply.Err)
	}
	t, _, derr := e.taskOf(reply.Record)
	if derr != nil {
		return Task{}, derr
	}
	return t, controlError(reply.Err)
}

// maxReplyOutcome bounds the outcome bytes a control reply carries.
const maxReplyOutcome = 4 << 10

// Reply is a runner's answer to a [Control] request.
type Reply struct {
	Record *Record // the task's record after the request
	Err    string  // "" or a controlErrors name
}

// controlErrors name the errors a control request can meet, so that they
// cross replicas as themselves.
var controlErrors = []struct {
	name string
	err  error
}{
	{"not_found", ErrNotFound},
	{"terminal", ErrTerminal},
	{"no_such_input", ErrNoSuchInput},
	{"closed", ErrClosed},
}

func controlErrName(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range controlErrors {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "failed"
}

func controlError(name string) error {
	if name == "" {
		return nil
	}
	for _, c := range controlErrors {
		if c.name == name {
			return c.err
		}
	}
	return fmt.Errorf("%w: the runner failed the request", ErrShared)
}

// serveControl applies a control request of another replica to a task this
// engine runs, writes the record, and replies with it.
func (e *Engine) serveControl(ctx context.Context, c Control) Reply {
	e.mu.Lock()
	t, err := e.lookupLocked(c.Owner, c.ID, time.Now())
	e.mu.Unlock()
	if err != nil {
		return Reply{Err: controlErrName(err)}
	}
	switch c.Op {
	case ControlCancel:
		_, err = e.Cancel(ctx, c.Owner, c.ID)
	case ControlAnswer:
		var v any
		if v, err = e.cfg.Codec.Decode(KindAnswer, c.Answer); err == nil {
			err = e.Answer(ctx, c.Owner, c.ID, c.RequestID, v)
		} else {
			err = fmt.Errorf("%w: decode answer: %w", ErrShared, err)
		}
	default:
		err = fmt.Errorf("%w: unknown control %q", ErrShared, c.Op)
	}
	if c.Op != ControlCancel { // Cancel wrote its record itself
		e.writeRecord(t) // before the reply: the caller reads the store next
	}
	e.mu.Lock()
	r := e.recordLocked(t)
	out := t.outcome
	e.mu.Unlock()
	if eerr := e.encodeOutcome(r, out); eerr != nil && err == nil {
		err = eerr
	}
	if len(r.Outcome) > maxReplyOutcome { // the asker needs the task, not its result
		r.Outcome, r.OutcomeOmitted = nil, true
	}
	return Reply{Record: r, Err: controlErrName(err)}
}

// pendingRemote is PendingInput for a task the engine does not hold.
func (e *Engine) pendingRemote(ctx context.Context, owner, id string) ([]InputRequest, error) {
	ctx, cancel := e.sharedCtx(ctx)
	defer cancel()
	rt, err := e.loadRemote(ctx, owner, id, false)
	if err != nil {
		return nil, err
	}
	reqs := make([]InputRequest, 0, len(rt.r.Inputs))
	for _, in := range rt.r.Inputs {
		v, err := e.cfg.Codec.Decode(KindInput, in.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: decode input: %w", ErrShared, err)
		}
		reqs = append(reqs, InputRequest{ID: in.ID, Payload: v})
	}
	return reqs, nil
}

// answerRemote is Answer for a task the engine does not hold.
func (e *Engine) answerRemote(ctx context.Context, owner, id, requestID string, answer any) error {
	b, err := e.cfg.Codec.Encode(KindAnswer, answer)
	if err != nil {
		return fmt.Errorf("%w: encode answer: %w", ErrShared, err)
	}
	_, err = e.askRunner(ctx, owner, id, Control{Op: ControlAnswer, Owner: owner, ID: id, RequestID: requestID, Answer: b})
	if errors.Is(err, ErrTerminal) {
		return ErrNoSuchInput
	}
	return err
}

// listShared is List over the shared store: every replica's tasks of
// owner, oldest first by creation time (then ID). The cursor holds the
// creation time of the last task returned; a page never ends inside a run
// of tasks created in the same nanosecond, so none is skipped.
func (e *Engine) listShared(ctx context.Context, owner, cursor string, limit int) ([]Task, string, error) {
	var after uint64
	if cursor != "" {
		var err error
		if after, err = e.decodeCursor(owner, cursor); err != nil {
			return nil, "", err
		}
	}
	ctx, cancel := e.sharedCtx(ctx)
	defer cancel()
	recs, err := e.cfg.Shared.List(ctx, owner, e.cfg.ownerLimits(owner).MaxTasks*replicaSpread)
	if err != nil {
		return nil, "", sharedErr("list", err)
	}
	now := time.Now()
	recs = slices.DeleteFunc(recs, func(r *Record) bool {
		return r.Owner != owner || (r.TTL > 0 && !now.Before(r.CreatedAt.Add(r.TTL))) ||
			uint64(r.CreatedAt.UnixNano()) <= after
	})
	slices.SortFunc(recs, func(a, b *Record) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	alive := map[string]bool{} // runner → holds its lease, asked once per List
	out := []Task{}
	for i, r := range recs {
		if len(out) >= limit && !r.CreatedAt.Equal(recs[i-1].CreatedAt) {
			return out, e.cursors.Encode(owner, uint64(recs[i-1].CreatedAt.UnixNano())), nil
		}
		if r.Runner == e.replica && !r.Status.Terminal() {
			e.mu.Lock()
			lt, err := e.lookupLocked(owner, r.ID, now)
			var snap Task
			unstored := err == nil && e.unstoredLocked(lt)
			if err == nil {
				snap = e.snapshotLocked(lt)
			}
			e.mu.Unlock()
			if unstored {
				if snap, _, err = e.settled(ctx, lt); err != nil {
					return nil, "", err
				}
			}
			if err == nil { // this engine's own state is the newest
				out = append(out, snap)
				continue
			}
			if rt, err := e.loadRemote(ctx, owner, r.ID, false); err == nil {
				r = rt.r // an orphan: failed now
			}
		} else if !r.Status.Terminal() {
			ok, seen := alive[r.Runner]
			if !seen {
				if ok, err = e.cfg.Peers.Alive(ctx, r.Runner); err != nil {
					return nil, "", sharedErr("lease", err)
				}
				alive[r.Runner] = ok
			}
			if !ok { // fail it in the store, as a Get would
				if rt, err := e.loadRemote(ctx, owner, r.ID, false); err == nil {
					r = rt.r
				}
			}
		}
		t, _, err := e.taskOf(r)
		if err != nil {
			return nil, "", err
		}
		out = append(out, t)
	}
	return out, "", nil
}

// maxRemoteWatches bounds the subscriptions to other replicas' tasks
// that one engine holds at once.
const maxRemoteWatches = 1024

// replicaSpread bounds how many of an owner's records List reads from the
// shared store, as a multiple of the owner's retained-task bound on one
// replica: an owner's tasks may be spread over several replicas.
const replicaSpread = 8
