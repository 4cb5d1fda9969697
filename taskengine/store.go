package taskengine

import (
	"cmp"
	"container/heap"
	"slices"
	"time"
)

// Retention: running tasks live in Engine.running, finished ones in the
// Engine.finished LRU. Expiry is lazy: every engine call first drops the
// finished tasks whose TTL has passed (expireLocked), using a heap ordered by
// expiry time, so no sweeper goroutine is needed.

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
	e.finished.Remove(t.key)
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
