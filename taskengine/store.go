package taskengine

import (
	"cmp"
	"container/heap"
	"slices"
	"time"
)

// Retention: running tasks live in Engine.running, finished ones in their
// owner's LRU (ownerIndex.finished). Room is made only by evicting the
// owner's own finished tasks, least recently used first: at Submit
// (makeRoomLocked) for the task counts, and when work returns
// (workReturned) for the result bytes. Expiry is lazy: every engine call
// first drops the finished tasks whose TTL has passed (expireLocked), using
// a heap ordered by expiry time, so no sweeper goroutine is needed.

// makeRoomLocked makes room for one more task of owner, whose bounds are
// lim: it fails with ErrOwnerLimit if owner has lim.MaxRunning running
// tasks, or holds lim.MaxTasks tasks and too few of them are finished to
// evict; with ErrFull if the engine holds MaxTasks tasks and owner has too
// few finished ones to give up. Otherwise it evicts as many of owner's own
// least recently used finished tasks as both bounds need (usually none or
// one), and only then, so a failed Submit evicts nothing.
func (e *Engine) makeRoomLocked(owner string, lim OwnerLimits) error {
	oi := e.owners[owner]
	var retained, running, finished int
	if oi != nil {
		retained, running, finished = len(oi.tasks), oi.running, oi.finished.Len()
	}
	if running >= lim.MaxRunning {
		return ErrOwnerLimit
	}
	own := retained + 1 - lim.MaxTasks                         // evictions the owner's bound needs
	global := len(e.running) + e.finished + 1 - e.cfg.MaxTasks // evictions the engine's bound needs
	switch {
	case own > finished:
		return ErrOwnerLimit
	case global > finished:
		return ErrFull
	}
	for range max(own, global) { // a negative count runs no iteration
		_, oldest, _ := oi.finished.GetOldest()
		e.evictLocked(oldest)
	}
	return nil
}

// expireLocked drops every finished task whose TTL has passed by now. An
// expired task whose work is still running stays until the work returns
// (lookups already treat it as unknown); workReturned then drops it.
func (e *Engine) expireLocked(now time.Time) {
	for len(e.expiry) > 0 && e.expiry[0].expiredAt(now) {
		t := heap.Pop(&e.expiry).(*task)
		if !t.isRunning {
			e.dropLocked(t)
		}
	}
}

// dropLocked removes a finished task from the store.
func (e *Engine) dropLocked(t *task) {
	oi := e.owners[t.key.owner]
	oi.finished.Remove(t.key.id)
	oi.bytes -= t.outcome.Size
	e.finished--
	e.bytes -= t.outcome.Size
	e.forgetLocked(t)
}

// forgetLocked removes t from the expiry heap and its owner's index, and
// the owner's index itself once it is empty.
func (e *Engine) forgetLocked(t *task) {
	if t.heapIdx >= 0 {
		heap.Remove(&e.expiry, t.heapIdx)
	}
	oi := e.owners[t.key.owner]
	if i, ok := slices.BinarySearchFunc(oi.tasks, t.seq, bySeq); ok {
		oi.tasks[i] = nil
		oi.tasks = slices.Delete(oi.tasks, i, i+1)
	}
	if len(oi.tasks) == 0 && oi.running == 0 {
		delete(e.owners, t.key.owner)
	}
}

func bySeq(t *task, seq uint64) int { return cmp.Compare(t.seq, seq) }

// expiryHeap is a min-heap of tasks by expiresAt (container/heap).
type expiryHeap []*task

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expiresAt.Before(h[j].expiresAt) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *expiryHeap) Push(x any) {
	t := x.(*task)
	t.heapIdx = len(*h)
	*h = append(*h, t)
}
func (h *expiryHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.heapIdx = -1
	return t
}
func (h *expiryHeap) push(t *task) { heap.Push(h, t) }
