package host

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// admission is the server's one admission controller. Every call, from
// tools/call or Server.Call, enters it before its instance exists and
// leaves it when the instance is gone. It owns these bounds and checks them
// together, under one mutex:
//
//   - the tool's slots (its policy's maxConcurrency),
//   - the module's share: its slots and memory (the module's maxInstances
//     and maxMemoryMiB, by default a quarter of the server's), so that one
//     module with many tools cannot take the server,
//   - the caller's tenant's share of the instances and of the memory
//     budget (caller.slots, .memory): the tenant file's, or for an
//     authenticated tenant without one the default, half of the server's
//     (see defaultTenantShare); a session's or the stdio client's calls
//     have none,
//   - the server's instance slots (the policy's maxInstances),
//   - the server's memory budget: the sum of the reservations of the
//     running calls (see reservation).
//
// A module, and a tenant under the default share, with no call running may
// always start one, even one that reserves more than its memory share: a
// default never makes a tool unusable. A tenant file's own memory share is
// strict: a call that could never fit it fails at once.
//
// A plain call that cannot start at once waits, within four queue bounds
// on the plain calls waiting (its tool's maxQueue, queuePerSlot × the
// slots of its module, of its tenant and of the server), until a slot frees
// or its context ends; a call beyond a bound is refused at once with a
// *busyError (queued tasks do not count: one tenant's tasks must not make
// another's plain calls busy), and a call that
// could never fit the memory budget with a *budgetError. A task's call is
// never refused for being busy: the task was accepted, and its tenant's
// quota of running tasks (the task engine's) bounds how many wait. It
// waits however long the queue is, and is told how many calls wait ahead
// of it as that changes (caller.queued).
//
// # Fairness
//
// When a slot frees, the call admitted next is, among the waiting calls
// that their tool's, module's and tenant's bounds allow, one of the tenant
// running the fewest calls; among those, one of the module running the
// fewest; among those, the oldest. So a tenant that floods the queue gets
// its turn after each other tenant with a call waiting, and within a
// tenant, modules share as they did before tenants existed. That call may
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
	plain    int           // plain calls among the waiting: what the queue bounds count
	modules  []*moduleSlot // the modules with waiting calls
	stalled  bool          // the next call to admit waits for server slots or memory
	seq      uint64        // arrival order of waiters

	// tenants are the shares of the tenants with calls running or
	// waiting (anon, the calls without a tenant, is not in it): bounded by
	// the calls in flight.
	tenants map[string]*tenantShare
	anon    *tenantShare

	notes   []queueNote // position reports to make once mu is released
	notesMu sync.Mutex  // taken before mu is released: reports go out in the order made
}

// tenantShare is one tenant's calls in the admission.
type tenantShare struct {
	name             string
	slots            int    // the tenant's share of the instances; 0: no bound
	memory           uint64 // the tenant's share of the memory budget, bytes; 0: no bound
	strict           bool   // memory is the tenant file's own: no call may pass it, even alone
	running, waiting int
	plain            int    // plain calls among the waiting: what the tenant's queue bound counts
	reserved         uint64 // bytes reserved by the tenant's running calls
}

// caller is who makes a call: its tenant ("" for none), and for a task's
// call the report of its place in the queue (nil for a plain call, which
// may be refused for being busy instead).
type caller struct {
	tenant string
	slots  int             // the tenant's share of the instances; 0: none
	memory uint64          // the tenant's share of the memory budget, bytes; 0: none
	strict bool            // memory is the tenant file's own: no call may pass it, even alone
	queued func(ahead int) // ahead < 0: admitted
}

// queueNote is one report to a waiting task's caller.
type queueNote struct {
	f     func(int)
	ahead int
}

// toolSlot is one tool's share of the admission. A catalog holds one per
// served tool, and a reload carries it over while the same module serves
// the tool, so that calls running on the old catalog count against the new
// one's bounds.
type toolSlot struct {
	mod          *moduleSlot
	slots, queue int // guarded by admission.mu, as the counts are
	running      int
	waiting      int // calls waiting, plain and tasks'
	plain        int // plain calls waiting: what the queue bound counts
}

// moduleSlot is one module's share of the admission, carried over by
// module name as toolSlot is.
type moduleSlot struct {
	name         string
	slots, queue int
	memory       uint64 // the module's share of the memory budget, bytes; 0: no bound
	running      int
	reserved     uint64    // bytes reserved by the module's running calls
	waiters      []*waiter // in arrival order
	plain        int       // plain calls among waiters
	listed       bool      // in admission.modules
}

// waiter is a call waiting for admission.
type waiter struct {
	tool     *toolSlot
	tenant   *tenantShare
	bytes    uint64
	seq      uint64
	ready    chan struct{} // closed when admitted
	admitted bool
	queued   func(int) // a task's report, or nil
	told     int       // the last ahead reported
}

func newAdmission(slots int, budget uint64) *admission {
	return &admission{slots: slots, queue: queuePerSlot * slots, budget: budget,
		tenants: map[string]*tenantShare{}, anon: &tenantShare{}}
}

// share returns the share of tenant, made when it has none. mu is held.
func (a *admission) share(tenant string) *tenantShare {
	if tenant == "" {
		return a.anon
	}
	ts := a.tenants[tenant]
	if ts == nil {
		ts = &tenantShare{name: tenant}
		a.tenants[tenant] = ts
	}
	return ts
}

// forget drops a tenant's share once it has nothing in flight.
func (a *admission) forget(ts *tenantShare) {
	if ts != a.anon && ts.running == 0 && ts.waiting == 0 {
		delete(a.tenants, ts.name)
	}
}

// tenantFits reports whether ts may start one more call.
func (a *admission) tenantFits(ts *tenantShare, bytes uint64) bool {
	return (ts.slots <= 0 || ts.running < ts.slots) &&
		(ts.memory == 0 || ts.reserved+bytes <= ts.memory || !ts.strict && ts.running == 0)
}

// moduleFits reports whether module m may start one more call.
func moduleFits(m *moduleSlot, bytes uint64) bool {
	return m.running < m.slots && (m.memory == 0 || m.running == 0 || m.reserved+bytes <= m.memory)
}

// unlock releases mu, then makes the queue reports gathered under it.
func (a *admission) unlock() {
	notes := a.notes
	a.notes = nil
	if len(notes) == 0 {
		a.mu.Unlock()
		return
	}
	// notesMu is taken before mu is let go, so two goroutines deliver
	// their reports in the order they were made (a task never ends up
	// showing "queued" once it runs). The reports run outside mu: they
	// take the task engine's lock, which never calls back in here.
	a.notesMu.Lock()
	a.mu.Unlock()
	defer a.notesMu.Unlock()
	for _, n := range notes {
		n.f(n.ahead)
	}
}

// defaultTenantShare is the share of the instances and of the memory
// budget of an authenticated tenant the tenant file gives none of its own.
// It is not strict: such a tenant with nothing running may start one call
// that reserves more.
func (a *admission) defaultTenantShare() (slots int, memory uint64) {
	return max(1, a.slots/tenantShareDivisor), a.budget / tenantShareDivisor
}

// newModule makes the share of a module allowed slots calls at once,
// reserving memory bytes together (0: no bound but the server's).
func (a *admission) newModule(name string, slots int, memory uint64) *moduleSlot {
	return &moduleSlot{name: name, slots: slots, queue: queuePerSlot * slots, memory: memory}
}

// newTool makes the share of a tool of module m.
func (a *admission) newTool(m *moduleSlot, slots, queue int) *toolSlot {
	return &toolSlot{mod: m, slots: slots, queue: queue}
}

// resizeModule sets the bound of a carried-over module (a new version may
// be under another policy entry: a digest pin), and admits the waiters a
// raised bound lets in.
func (a *admission) resizeModule(m *moduleSlot, slots int, memory uint64) {
	a.mu.Lock()
	m.slots, m.queue, m.memory = slots, queuePerSlot*slots, memory
	a.dispatch()
	a.unlock()
}

// resizeTool is resizeModule for a carried-over tool.
func (a *admission) resizeTool(t *toolSlot, slots, queue int) {
	a.mu.Lock()
	t.slots, t.queue = slots, queue
	a.dispatch()
	a.unlock()
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
type budgetError struct {
	need, budget uint64
	tenant       bool // the budget is the caller's tenant's share
}

func (e *budgetError) Error() string { return fmt.Sprintf("%v: %s", ErrMemoryBudget, e.detail()) }
func (e *budgetError) Unwrap() error { return ErrMemoryBudget }
func (e *budgetError) detail() string {
	whose := "the server's memory budget"
	if e.tenant {
		whose = "this tenant's share of the memory budget"
	}
	return fmt.Sprintf("one call reserves %d MiB, more than %s of %d MiB", mib(e.need), whose, mib(e.budget))
}

func mib(b uint64) uint64 { return (b + 1<<20 - 1) >> 20 }

// enter admits a call of tool t reserving bytes of the memory budget, or
// makes it wait until it can start or ctx is done. A nil error means the
// call holds its slots and reservation until leave. The call has no
// tenant; enterAs names one.
func (a *admission) enter(ctx context.Context, t *toolSlot, bytes uint64) error {
	return a.enterAs(ctx, t, bytes, caller{})
}

// enterAs is enter for a call made by c: a call admitted this way leaves
// with leaveAs(t, bytes, c.tenant).
func (a *admission) enterAs(ctx context.Context, t *toolSlot, bytes uint64, c caller) error {
	a.mu.Lock()
	ts := a.share(c.tenant)
	if ts != a.anon {
		ts.slots, ts.memory, ts.strict = c.slots, c.memory, c.strict && c.memory > 0 // the tenant file in force when the call came
	}
	if !a.stalled && a.fits(t, ts, bytes) {
		a.take(t, ts, bytes)
		a.unlock()
		return nil
	}
	if err := a.refusal(t, ts, bytes, c.queued != nil); err != nil {
		a.forget(ts)
		a.unlock()
		return err
	}
	a.seq++
	w := &waiter{tool: t, tenant: ts, bytes: bytes, seq: a.seq, ready: make(chan struct{}), queued: c.queued, told: -1}
	a.push(w)
	a.dispatch() // the new waiter may be the one to admit
	if w.admitted {
		a.unlock()
		return nil
	}
	if w.queued != nil {
		w.told = a.waiting - 1
		a.notes = append(a.notes, queueNote{w.queued, w.told})
	}
	a.unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	if w.admitted {
		// Admitted as the context ended: give the place back.
		a.release(t, ts, bytes)
	} else {
		a.pull(w)
	}
	a.forget(ts)
	a.dispatch()
	a.unlock()
	return context.Cause(ctx)
}

// leave ends a call that enter admitted, and admits the next ones.
func (a *admission) leave(t *toolSlot, bytes uint64) { a.leaveAs(t, bytes, "") }

// leaveAs ends a call that enterAs admitted for tenant.
func (a *admission) leaveAs(t *toolSlot, bytes uint64, tenant string) {
	a.mu.Lock()
	ts := a.share(tenant)
	a.release(t, ts, bytes)
	a.forget(ts)
	if a.waiting > 0 {
		a.dispatch()
	}
	a.unlock()
}

// fits reports whether a call of t reserving bytes may start now, by every
// bound.
func (a *admission) fits(t *toolSlot, ts *tenantShare, bytes uint64) bool {
	return t.running < t.slots && moduleFits(t.mod, bytes) && a.tenantFits(ts, bytes) && a.serverFits(bytes)
}

func (a *admission) serverFits(bytes uint64) bool {
	return a.running < a.slots && bytes <= a.budget-a.reserved
}

func (a *admission) take(t *toolSlot, ts *tenantShare, bytes uint64) {
	t.running++
	t.mod.running++
	t.mod.reserved += bytes
	ts.running++
	ts.reserved += bytes
	a.running++
	a.reserved += bytes
}

func (a *admission) release(t *toolSlot, ts *tenantShare, bytes uint64) {
	t.running--
	t.mod.running--
	t.mod.reserved -= bytes
	ts.running--
	ts.reserved -= bytes
	a.running--
	a.reserved -= bytes
}

// refusal is why a call that cannot start now may not wait either, or nil.
// A task's call (waits) is refused only when it could never fit.
func (a *admission) refusal(t *toolSlot, ts *tenantShare, bytes uint64, waits bool) error {
	m := t.mod
	switch {
	case bytes > a.budget:
		return &budgetError{need: bytes, budget: a.budget}
	case ts.strict && bytes > ts.memory:
		return &budgetError{need: bytes, budget: ts.memory, tenant: true}
	case waits:
		return nil
	case t.plain >= t.queue:
		return &busyError{running: t.running, queued: t.plain}
	case m.plain >= m.queue:
		return &busyError{scope: fmt.Sprintf("module %q instance limit: ", m.name), running: m.running, queued: m.plain}
	case ts.slots > 0 && ts.plain >= queuePerSlot*ts.slots:
		return &busyError{scope: fmt.Sprintf("tenant %q instance share: ", ts.name), running: ts.running, queued: ts.plain}
	case a.plain >= a.queue:
		return &busyError{scope: "server-wide instance limit: ", running: a.running, queued: a.plain}
	}
	return nil
}

// push queues w.
func (a *admission) push(w *waiter) {
	m := w.tool.mod
	m.waiters = append(m.waiters, w)
	w.tool.waiting++
	w.tenant.waiting++
	a.waiting++
	if w.queued == nil {
		w.tool.plain++
		m.plain++
		w.tenant.plain++
		a.plain++
	}
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
	w.tenant.waiting--
	a.waiting--
	if w.queued == nil {
		w.tool.plain--
		m.plain--
		w.tenant.plain--
		a.plain--
	}
	if len(m.waiters) == 0 {
		m.listed = false
		a.modules = slices.DeleteFunc(a.modules, func(x *moduleSlot) bool { return x == m })
	}
}

// dispatch admits waiting calls, in the fair order, for as long as the
// next one fits; it is run after every change that may let one start.
// Its work is bounded by the calls waiting times the calls it admits.
func (a *admission) dispatch() {
	admitted := false
	for {
		w := a.next()
		if w == nil {
			a.stalled = false
			break
		}
		if !a.serverFits(w.bytes) {
			a.stalled = true
			break
		}
		a.pull(w)
		a.take(w.tool, w.tenant, w.bytes)
		w.admitted = true
		close(w.ready)
		if w.queued != nil && w.told >= 0 {
			a.notes = append(a.notes, queueNote{w.queued, -1})
		}
		admitted = true
	}
	if admitted {
		a.tellPlaces()
	}
}

// tellPlaces reports to each waiting task how many calls wait ahead of it
// (older calls: the fair order may let some pass, but never without
// bound), when that has halved since its last report or fallen below
// placeExact: a task hears O(log n) reports however long it waits.
func (a *admission) tellPlaces() {
	var tasks []*waiter
	for _, m := range a.modules {
		for _, w := range m.waiters {
			if w.queued != nil {
				tasks = append(tasks, w)
			}
		}
	}
	if len(tasks) == 0 {
		return
	}
	var seqs []uint64
	for _, m := range a.modules {
		for _, w := range m.waiters {
			seqs = append(seqs, w.seq)
		}
	}
	slices.Sort(seqs)
	for _, w := range tasks {
		ahead, _ := slices.BinarySearch(seqs, w.seq)
		if ahead != w.told && (ahead < placeExact || ahead <= w.told/2) {
			w.told = ahead
			a.notes = append(a.notes, queueNote{w.queued, ahead})
		}
	}
}

// placeExact: below this many calls ahead, a waiting task hears every
// change of its place.
const placeExact = 16

// next is the waiting call to admit next, whether or not the server has
// room for it: among the calls their tool, module and tenant allow, one of
// the tenant running the fewest calls, then of the module running the
// fewest, then the oldest. A party that runs nothing therefore takes the
// next slot that frees, ahead of every call queued by parties that hold
// slots: its wait is that of the first running call to end.
func (a *admission) next() *waiter {
	var best *waiter
	for _, m := range a.modules {
		if m.running >= m.slots {
			continue
		}
		for _, w := range m.waiters {
			if w.tool.running >= w.tool.slots || !moduleFits(m, w.bytes) || !a.tenantFits(w.tenant, w.bytes) {
				continue
			}
			if best == nil || before(w, best) {
				best = w
			}
		}
	}
	return best
}

// before is the fair order of two waiting calls.
func before(w, b *waiter) bool {
	if w.tenant.running != b.tenant.running {
		return w.tenant.running < b.tenant.running
	}
	if w.tool.mod.running != b.tool.mod.running {
		return w.tool.mod.running < b.tool.mod.running
	}
	return w.seq < b.seq
}
