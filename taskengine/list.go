package taskengine

import (
	"context"
	"slices"
	"time"
)

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
		if after, err = e.decodeCursor(owner, cursor); err != nil {
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
	return out, e.cursors.Encode(owner, oi.tasks[i-1].seq), nil
}

// decodeCursor is the position in a List cursor, or ErrBadCursor.
func (e *Engine) decodeCursor(owner, cursor string) (uint64, error) {
	after, ok := e.cursors.Decode(owner, cursor)
	if !ok {
		return 0, ErrBadCursor
	}
	return after, nil
}
