package taskengine

import (
	"context"
	"slices"
	"time"
)

// Subscription delivers snapshots of one task as it changes. Its channel
// has capacity 1 and coalesces: a slow reader misses intermediate snapshots
// but always finds the latest one, so the engine never blocks on it and
// never buffers more than one snapshot per subscription. The first value is
// the task's state when Watch was called. The channel is closed after the
// terminal snapshot has been put in it, or by Stop. A Subscription is safe
// for concurrent use.
type Subscription struct {
	e      *Engine
	t      *task
	ch     chan Task
	fn     func(Task) // OnChange's callback, instead of ch
	closed bool       // guarded by Engine.mu
	// stop ends the goroutine that follows another replica's task (t is
	// nil then).
	stop func()
}

// Watch subscribes to changes of owner's task id: status (including every
// move to and from input_required), status message and progress. A consumer
// that must act when a task needs input or ends reads C until it sees
// StatusInputRequired or a terminal status. Callers must Stop a
// subscription they abandon before the task ends; at most
// MaxWatchersPerTask may be open per task ([ErrTooManyWatchers]). ctx
// bounds the first read of another replica's task; the subscription
// itself lasts until Stop or the task's end.
func (e *Engine) Watch(ctx context.Context, owner, id string) (*Subscription, error) {
	e.mu.Lock()
	t, err := e.lookupLocked(owner, id, time.Now())
	if err != nil {
		e.mu.Unlock()
		if e.isRemote(err) {
			s, err := e.watchRemote(ctx, owner, id)
			return s, callerErr(ctx, err)
		}
		return nil, err
	}
	defer e.mu.Unlock()
	if len(t.subs) >= e.cfg.MaxWatchersPerTask {
		return nil, ErrTooManyWatchers
	}
	s := &Subscription{e: e, t: t, ch: make(chan Task, 1)}
	s.ch <- e.snapshotLocked(t)
	if t.status.Terminal() {
		s.closed = true
		close(s.ch)
		return s, nil
	}
	t.subs = append(t.subs, s)
	return s, nil
}

// OnChange calls fn with a snapshot of owner's task id now and on each
// later change, as Watch delivers them, without a channel or a goroutine:
// fn runs with the engine's lock held, so it must return at once and must
// not call the engine (hand the snapshot to a goroutine of one's own).
// After the terminal snapshot fn is not called again; stop ends the calls
// earlier and may be called any number of times. It follows tasks this
// replica runs: another replica's task is ErrNotFound. It counts against
// MaxWatchersPerTask ([ErrTooManyWatchers]).
func (e *Engine) OnChange(owner, id string, fn func(Task)) (stop func(), err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.lookupLocked(owner, id, time.Now())
	if err != nil {
		if e.isRemote(err) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	if len(t.subs) >= e.cfg.MaxWatchersPerTask {
		return nil, ErrTooManyWatchers
	}
	s := &Subscription{e: e, t: t, fn: fn}
	fn(e.snapshotLocked(t))
	if t.status.Terminal() {
		s.closed = true
		return s.Stop, nil
	}
	t.subs = append(t.subs, s)
	return s.Stop, nil
}

// C returns the channel of snapshots.
func (s *Subscription) C() <-chan Task { return s.ch }

// Stop ends the subscription and closes its channel (if not closed yet).
func (s *Subscription) Stop() {
	if s.stop != nil {
		s.stop()
	}
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.ch != nil {
		close(s.ch)
	}
	if s.t == nil {
		return
	}
	if i := slices.Index(s.t.subs, s); i >= 0 {
		s.t.subs = slices.Delete(s.t.subs, i, i+1)
	}
}

// offerLocked puts snap in the channel, replacing an unread older one. Only
// the goroutine holding Engine.mu sends, so after the drain the buffer is
// empty and the send cannot block.
func (s *Subscription) offerLocked(snap Task) {
	if s.fn != nil {
		s.fn(snap)
		return
	}
	select {
	case <-s.ch:
	default:
	}
	s.ch <- snap
}

// notifyLocked offers the current snapshot to every subscriber, replacing
// an unread older one; after a terminal snapshot it closes them all.
func (e *Engine) notifyLocked(t *task) {
	e.queueWriteLocked(t)
	if len(t.subs) == 0 {
		return
	}
	snap := e.snapshotLocked(t)
	for _, s := range t.subs {
		s.offerLocked(snap)
	}
	if t.status.Terminal() {
		for _, s := range t.subs {
			s.closed = true
			if s.ch != nil {
				close(s.ch)
			}
		}
		t.subs = nil
	}
}
