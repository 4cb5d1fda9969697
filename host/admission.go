package host

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// admission is the server's one admission controller. Every call, from
// tools/call or Server.Call, enters it before its instance exists and
// leaves it when the instance is gone. It owns four bounds and checks them
// together, under one mutex:
//
//   - the tool's slots (its policy's maxConcurrency),
//   - the module's slots (the module's maxInstances), so that one module
//     with many tools cannot take the server's slots,
//   - the server's instance slots (the policy's maxInstances),
//   - the server's memory budget: the sum of the reservations of the
//     running calls (see reservation).
//
// A call that cannot start at once waits, within three queue bounds (its
// tool's maxQueue, queuePerSlot × the module's slots, queuePerSlot × the
// server's slots), until a slot frees or its context ends; a call beyond a
// bound is refused at once with a *busyError, and a call that could never
// fit the memory budget with a *budgetError.
//
// # Fairness
//
// When a slot frees, the call admitted next is, among the modules with a
// waiting call that their own bounds allow, one of the module running the
// fewest calls; within a module, the oldest such call (first in, first
// out); between modules running as many, the oldest call. That call may
// still wait for memory; then no call starts before it (a large
// reservation is not starved by small ones) — stalled records that state,
// and while it holds, arrivals queue behind it instead of taking the fast
// path.
//
// # Concurrency
//
// No goroutine waits on behalf of a call: the caller blocks on its
// waiter's channel, which whoever frees the slot (a call leaving, a waiter
// giving up, a reload raising a bound) closes under the mutex. The state
// of toolSlot and moduleSlot values is guarded by the mutex of the
// admission that made them.
type admission struct {
	mu       sync.Mutex
	slots    int    // server-wide instance slots
	queue    int    // bound on the calls waiting, server-wide
	budget   uint64 // memory budget, bytes
	running  int
	reserved uint64 // bytes reserved by the running calls
	waiting  int
	modules  []*moduleSlot // the modules with waiting calls
	stalled  bool          // the next call to admit waits for server slots or memory
	seq      uint64        // arrival order of waiters
}

// toolSlot is one tool's share of the admission. A catalog holds one per
// served tool, and a reload carries it over while the same module serves
// the tool, so that calls running on the old catalog count against the new
// one's bounds.
type toolSlot struct {
	mod          *moduleSlot
	slots, queue int // guarded by admission.mu, as the counts are
	running      int
	waiting      int
}

// moduleSlot is one module's share of the admission, carried over by
// module name as toolSlot is.
type moduleSlot struct {
	name         string
	slots, queue int
	running      int
	waiters      []*waiter // in arrival order
	listed       bool      // in admission.modules
}

// waiter is a call waiting for admission.
type waiter struct {
	tool     *toolSlot
	bytes    uint64
	seq      uint64
	ready    chan struct{} // closed when admitted
	admitted bool
}

func newAdmission(slots int, budget uint64) *admission {
	return &admission{slots: slots, queue: queuePerSlot * slots, budget: budget}
}

// newModule makes the share of a module allowed slots calls at once.
func (a *admission) newModule(name string, slots int) *moduleSlot {
	return &moduleSlot{name: name, slots: slots, queue: queuePerSlot * slots}
}

// newTool makes the share of a tool of module m.
func (a *admission) newTool(m *moduleSlot, slots, queue int) *toolSlot {
	return &toolSlot{mod: m, slots: slots, queue: queue}
}

// resizeModule sets the bound of a carried-over module (a new version may
// be under another policy entry: a digest pin), and admits the waiters a
// raised bound lets in.
func (a *admission) resizeModule(m *moduleSlot, slots int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m.slots, m.queue = slots, queuePerSlot*slots
	a.dispatch()
}

// resizeTool is resizeModule for a carried-over tool.
func (a *admission) resizeTool(t *toolSlot, slots, queue int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t.slots, t.queue = slots, queue
	a.dispatch()
}

// busyError is a refusal by a full queue; it wraps ErrBusy.
type busyError struct {
	scope           string // "" for the tool's own bound
	running, queued int
}

func (e *busyError) Error() string { return fmt.Sprintf("%s%v: %s", e.scope, ErrBusy, e.detail()) }
func (e *busyError) Unwrap() error { return ErrBusy }
func (e *busyError) detail() string {
	return fmt.Sprintf("%d calls running and %d waiting, the most its policy allows; try again later", e.running, e.queued)
}

// budgetError is the refusal of a call that could never fit the memory
// budget; it wraps ErrMemoryBudget.
type budgetError struct{ need, budget uint64 }

func (e *budgetError) Error() string { return fmt.Sprintf("%v: %s", ErrMemoryBudget, e.detail()) }
func (e *budgetError) Unwrap() error { return ErrMemoryBudget }
func (e *budgetError) detail() string {
	return fmt.Sprintf("one call reserves %d MiB, more than the server's memory budget of %d MiB", mib(e.need), mib(e.budget))
}

func mib(b uint64) uint64 { return (b + 1<<20 - 1) >> 20 }

// enter admits a call of tool t reserving bytes of the memory budget, or
// makes it wait until it can start or ctx is done. A nil error means the
// call holds its slots and reservation until leave.
func (a *admission) enter(ctx context.Context, t *toolSlot, bytes uint64) error {
	a.mu.Lock()
	if !a.stalled && a.fits(t, bytes) {
		a.take(t, bytes)
		a.mu.Unlock()
		return nil
	}
	if err := a.refusal(t, bytes); err != nil {
		a.mu.Unlock()
		return err
	}
	a.seq++
	w := &waiter{tool: t, bytes: bytes, seq: a.seq, ready: make(chan struct{})}
	a.push(w)
	a.dispatch() // the new waiter may be the one to admit
	if w.admitted {
		a.mu.Unlock()
		return nil
	}
	a.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	if w.admitted {
		// Admitted as the context ended: give the place back.
		a.release(t, bytes)
	} else {
		a.pull(w)
	}
	a.dispatch()
	a.mu.Unlock()
	return context.Cause(ctx)
}

// leave ends a call that enter admitted, and admits the next ones.
func (a *admission) leave(t *toolSlot, bytes uint64) {
	a.mu.Lock()
	a.release(t, bytes)
	if a.waiting > 0 {
		a.dispatch()
	}
	a.mu.Unlock()
}

// fits reports whether a call of t reserving bytes may start now, by every
// bound.
func (a *admission) fits(t *toolSlot, bytes uint64) bool {
	return t.running < t.slots && t.mod.running < t.mod.slots && a.serverFits(bytes)
}

func (a *admission) serverFits(bytes uint64) bool {
	return a.running < a.slots && bytes <= a.budget-a.reserved
}

func (a *admission) take(t *toolSlot, bytes uint64) {
	t.running++
	t.mod.running++
	a.running++
	a.reserved += bytes
}

func (a *admission) release(t *toolSlot, bytes uint64) {
	t.running--
	t.mod.running--
	a.running--
	a.reserved -= bytes
}

// refusal is why a call that cannot start now may not wait either, or nil.
func (a *admission) refusal(t *toolSlot, bytes uint64) error {
	m := t.mod
	switch {
	case bytes > a.budget:
		return &budgetError{need: bytes, budget: a.budget}
	case t.waiting >= t.queue:
		return &busyError{running: t.running, queued: t.waiting}
	case len(m.waiters) >= m.queue:
		return &busyError{scope: fmt.Sprintf("module %q instance limit: ", m.name), running: m.running, queued: len(m.waiters)}
	case a.waiting >= a.queue:
		return &busyError{scope: "server-wide instance limit: ", running: a.running, queued: a.waiting}
	}
	return nil
}

// push queues w.
func (a *admission) push(w *waiter) {
	m := w.tool.mod
	m.waiters = append(m.waiters, w)
	w.tool.waiting++
	a.waiting++
	if !m.listed {
		m.listed = true
		a.modules = append(a.modules, m)
	}
}

// pull takes w out of its queue.
func (a *admission) pull(w *waiter) {
	m := w.tool.mod
	m.waiters = slices.DeleteFunc(m.waiters, func(x *waiter) bool { return x == w })
	w.tool.waiting--
	a.waiting--
	if len(m.waiters) == 0 {
		m.listed = false
		a.modules = slices.DeleteFunc(a.modules, func(x *moduleSlot) bool { return x == m })
	}
}

// dispatch admits waiting calls, in the fair order, for as long as the
// next one fits; it is run after every change that may let one start.
// Its work is bounded by the server's queue bound times the calls it
// admits.
func (a *admission) dispatch() {
	for {
		w := a.next()
		if w == nil {
			a.stalled = false
			return
		}
		if !a.serverFits(w.bytes) {
			a.stalled = true
			return
		}
		a.pull(w)
		a.take(w.tool, w.bytes)
		w.admitted = true
		close(w.ready)
	}
}

// next is the waiting call to admit next, whether or not the server has
// room for it: the oldest call its tool and module allow, of the module
// running the fewest calls.
func (a *admission) next() *waiter {
	var best *waiter
	for _, m := range a.modules {
		if m.running >= m.slots {
			continue
		}
		for _, w := range m.waiters {
			if w.tool.running >= w.tool.slots {
				continue
			}
			if best == nil || m.running < best.tool.mod.running ||
				m.running == best.tool.mod.running && w.seq < best.seq {
				best = w
			}
			break // the module's oldest call it allows
		}
	}
	return best
}
