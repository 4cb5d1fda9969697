package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Refusals (wrapped by *BusyError and *BudgetError; use errors.Is).
var (
	// ErrBusy: the tool, its module, the tenant or the server already runs
	// and queues all the calls its bounds allow.
	ErrBusy = errors.New("tool busy")
	// ErrMemoryBudget: one call reserves more memory than the budget it
	// must fit.
	ErrMemoryBudget = errors.New("call larger than the server's memory budget")
)

// QueuePerSlot sizes the queues: the bounds on the plain calls waiting for
// a module's, a tenant's or the server's slots are QueuePerSlot times
// their slots (and a tool's default queue, set by the host's policy).
const QueuePerSlot = 4

// tenantShareDivisor: an authenticated tenant without a share of its own
// may hold 1/tenantShareDivisor of the server's instances and memory
// budget, so a flood from one tenant leaves half of the server to the
// others.
const tenantShareDivisor = 2

// Controller is the server's one admission controller. Every call, from
// tools/call or Server.Call, enters it before its instance exists and
// leaves it when the instance is gone. It owns these bounds and checks them
// together, under one mutex:
//
//   - the tool's slots (its policy's maxConcurrency),
//   - the module's share: its slots and memory (the module's maxInstances
//     and maxMemoryMiB, by default a quarter of the server's), so that one
//     module with many tools cannot take the server,
//   - the caller's tenant's share of the instances and of the memory
//     budget (Caller.Slots, .Memory): the tenant file's, or for an
//     authenticated tenant without one the default, half of the server's
//     (see DefaultTenantShare); a session's or the stdio client's calls
//     have none,
//   - the server's instance slots (the policy's maxInstances),
//   - the server's memory budget: the sum of the reservations of the
//     running calls (each reserves what the host asks).
//
// A module, and a tenant under the default share, with no call running may
// always start one, even one that reserves more than its memory share: a
// default never makes a tool unusable. A tenant file's own memory share is
// strict: a call that could never fit it fails at once.
//
// A plain call that cannot start at once waits, within four queue bounds
// on the plain calls waiting (its tool's maxQueue, QueuePerSlot × the
// slots of its module, of its tenant and of the server), until a slot frees
// or its context ends; a call beyond a bound is refused at once with a
// *BusyError (queued tasks do not count: one tenant's tasks must not make
// another's plain calls busy), and a call that
// could never fit the memory budget with a *BudgetError. A task's call is
// never refused for being busy: the task was accepted, and its tenant's
// quota of running tasks (the task engine's) bounds how many wait. It
// waits however long the queue is, and is told how many calls wait ahead
// of it as that changes (Caller.Queued).
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
// of Tool and Module values is guarded by the mutex of the
// admission that made them.
type Controller struct {
	mu       sync.Mutex
	slots    int    // server-wide instance slots
	queue    int    // bound on the calls waiting, server-wide
	budget   uint64 // memory budget, bytes
	running  int
	reserved uint64 // bytes reserved by the running calls
	waiting  int
	plain    int       // plain calls among the waiting: what the queue bounds count
	modules  []*Module // the modules with waiting calls
	stalled  bool      // the next call to admit waits for server slots or memory
	seq      uint64    // arrival order of waiters

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
type Caller struct {
	Tenant string
	Slots  int             // the tenant's share of the instances; 0: none
	Memory uint64          // the tenant's share of the memory budget, bytes; 0: none
	Strict bool            // Memory is the tenant file's own: no call may pass it, even alone
	Queued func(ahead int) // ahead < 0: admitted
}

// queueNote is one report to a waiting task's caller.
type queueNote struct {
	f     func(int)
	ahead int
}

// Tool is one tool's share of the admission. A catalog holds one per
// served tool, and a reload carries it over while the same module serves
// the tool, so that calls running on the old catalog count against the new
// one's bounds.
type Tool struct {
	mod          *Module
	slots, queue int // guarded by admission.mu, as the counts are
	running      int
	waiting      int // calls waiting, plain and tasks'
	plain        int // plain calls waiting: what the queue bound counts
}

// Module is one module's share of the admission, carried over by
// module name as Tool is.
type Module struct {
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
	tool     *Tool
	tenant   *tenantShare
	bytes    uint64
	seq      uint64
	ready    chan struct{} // closed when admitted
	admitted bool
	queued   func(int) // a task's report, or nil
	told     int       // the last ahead reported
}

func New(slots int, budget uint64) *Controller {
	return &Controller{slots: slots, queue: QueuePerSlot * slots, budget: budget,
		tenants: map[string]*tenantShare{}, anon: &tenantShare{}}
}

// share returns the share of tenant, made when it has none. mu is held.
func (a *Controller) share(tenant string) *tenantShare {
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
func (a *Controller) forget(ts *tenantShare) {
	if ts != a.anon && ts.running == 0 && ts.waiting == 0 {
		delete(a.tenants, ts.name)
	}
}

// tenantFits reports whether ts may start one more call.
func (a *Controller) tenantFits(ts *tenantShare, bytes uint64) bool {
	return (ts.slots <= 0 || ts.running < ts.slots) &&
		(ts.memory == 0 || ts.reserved+bytes <= ts.memory || !ts.strict && ts.running == 0)
}

// moduleFits reports whether module m may start one more call.
func moduleFits(m *Module, bytes uint64) bool {
	return m.running < m.slots && (m.memory == 0 || m.running == 0 || m.reserved+bytes <= m.memory)
}

// unlock releases mu, then makes the queue reports gathered under it.
func (a *Controller) unlock() {
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

// DefaultTenantShare is the share of the instances and of the memory
// budget of an authenticated tenant the tenant file gives none of its own.
// It is not strict: such a tenant with nothing running may start one call
// that reserves more.
func (a *Controller) DefaultTenantShare() (slots int, memory uint64) {
	return max(1, a.slots/tenantShareDivisor), a.budget / tenantShareDivisor
}

// newModule makes the share of a module allowed slots calls at once,
// reserving memory bytes together (0: no bound but the server's).
func (a *Controller) NewModule(name string, slots int, memory uint64) *Module {
	return &Module{name: name, slots: slots, queue: QueuePerSlot * slots, memory: memory}
}

// newTool makes the share of a tool of module m.
func (a *Controller) NewTool(m *Module, slots, queue int) *Tool {
	return &Tool{mod: m, slots: slots, queue: queue}
}

// resizeModule sets the bound of a carried-over module (a new version may
// be under another policy entry: a digest pin), and admits the waiters a
// raised bound lets in.
func (a *Controller) ResizeModule(m *Module, slots int, memory uint64) {
	a.mu.Lock()
	m.slots, m.queue, m.memory = slots, QueuePerSlot*slots, memory
	a.dispatch()
	a.unlock()
}

// resizeTool is resizeModule for a carried-over tool.
func (a *Controller) ResizeTool(t *Tool, slots, queue int) {
	a.mu.Lock()
	t.slots, t.queue = slots, queue
	a.dispatch()
	a.unlock()
}

// BusyError is a refusal by a full queue; it wraps ErrBusy.
type BusyError struct {
	scope           string // "" for the tool's own bound
	running, queued int
}

func (e *BusyError) Error() string { return fmt.Sprintf("%s%v: %s", e.scope, ErrBusy, e.Detail()) }
func (e *BusyError) Unwrap() error { return ErrBusy }
func (e *BusyError) Detail() string {
	return fmt.Sprintf("%d calls running and %d waiting, the most its policy allows; try again later", e.running, e.queued)
}

// BudgetError is the refusal of a call that could never fit the memory
// budget; it wraps ErrMemoryBudget.
type BudgetError struct {
	Need, Budget uint64 // bytes
	Tenant       bool   // the budget is the caller's tenant's share
}

func (e *BudgetError) Error() string { return fmt.Sprintf("%v: %s", ErrMemoryBudget, e.Detail()) }
func (e *BudgetError) Unwrap() error { return ErrMemoryBudget }
func (e *BudgetError) Detail() string {
	whose := "the server's memory budget"
	if e.Tenant {
		whose = "this tenant's share of the memory budget"
	}
	return fmt.Sprintf("one call reserves %d MiB, more than %s of %d MiB", mib(e.Need), whose, mib(e.Budget))
}

func mib(b uint64) uint64 { return (b + 1<<20 - 1) >> 20 }

// Enter admits a call of tool t reserving bytes of the memory budget, or
// makes it wait until it can start or ctx is done. A nil error means the
// call holds its slots and reservation until Leave. The call has no
// tenant; EnterAs names one.
func (a *Controller) Enter(ctx context.Context, t *Tool, bytes uint64) error {
	return a.EnterAs(ctx, t, bytes, Caller{})
}

// EnterAs is Enter for a call made by c: a call admitted this way leaves
// with LeaveAs(t, bytes, c.Tenant).
func (a *Controller) EnterAs(ctx context.Context, t *Tool, bytes uint64, c Caller) error {
	a.mu.Lock()
	ts := a.share(c.Tenant)
	if ts != a.anon {
		ts.slots, ts.memory, ts.strict = c.Slots, c.Memory, c.Strict && c.Memory > 0 // the tenant file in force when the call came
	}
	if !a.stalled && a.fits(t, ts, bytes) {
		a.take(t, ts, bytes)
		a.unlock()
		return nil
	}
	if err := a.refusal(t, ts, bytes, c.Queued != nil); err != nil {
		a.forget(ts)
		a.unlock()
		return err
	}
	a.seq++
	w := &waiter{tool: t, tenant: ts, bytes: bytes, seq: a.seq, ready: make(chan struct{}), queued: c.Queued, told: -1}
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

// Leave ends a call that Enter admitted, and admits the next ones.
func (a *Controller) Leave(t *Tool, bytes uint64) { a.LeaveAs(t, bytes, "") }

// LeaveAs ends a call that EnterAs admitted for tenant.
func (a *Controller) LeaveAs(t *Tool, bytes uint64, tenant string) {
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
func (a *Controller) fits(t *Tool, ts *tenantShare, bytes uint64) bool {
	return t.running < t.slots && moduleFits(t.mod, bytes) && a.tenantFits(ts, bytes) && a.serverFits(bytes)
}

func (a *Controller) serverFits(bytes uint64) bool {
	return a.running < a.slots && bytes <= a.budget-a.reserved
}

func (a *Controller) take(t *Tool, ts *tenantShare, bytes uint64) {
	t.running++
	t.mod.running++
	t.mod.reserved += bytes
	ts.running++
	ts.reserved += bytes
	a.running++
	a.reserved += bytes
}

func (a *Controller) release(t *Tool, ts *tenantShare, bytes uint64) {
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
func (a *Controller) refusal(t *Tool, ts *tenantShare, bytes uint64, waits bool) error {
	m := t.mod
	switch {
	case bytes > a.budget:
		return &BudgetError{Need: bytes, Budget: a.budget}
	case ts.strict && bytes > ts.memory:
		return &BudgetError{Need: bytes, Budget: ts.memory, Tenant: true}
	case waits:
		return nil
	case t.plain >= t.queue:
		return &BusyError{running: t.running, queued: t.plain}
	case m.plain >= m.queue:
		return &BusyError{scope: fmt.Sprintf("module %q instance limit: ", m.name), running: m.running, queued: m.plain}
	case ts.slots > 0 && ts.plain >= QueuePerSlot*ts.slots:
		return &BusyError{scope: fmt.Sprintf("tenant %q instance share: ", ts.name), running: ts.running, queued: ts.plain}
	case a.plain >= a.queue:
		return &BusyError{scope: "server-wide instance limit: ", running: a.running, queued: a.plain}
	}
	return nil
}

// push queues w.
func (a *Controller) push(w *waiter) {
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
func (a *Controller) pull(w *waiter) {
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
		a.modules = slices.DeleteFunc(a.modules, func(x *Module) bool { return x == m })
	}
}

// dispatch admits waiting calls, in the fair order, for as long as the
// next one fits; it is run after every change that may let one start.
// Its work is bounded by the calls waiting times the calls it admits.
func (a *Controller) dispatch() {
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
func (a *Controller) tellPlaces() {
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
func (a *Controller) next() *waiter {
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

// Stats is what the controller holds now, for metrics.
type Stats struct {
	Slots    int    // the server's instance slots
	Budget   uint64 // the server's memory budget, bytes
	Running  int    // calls running
	Waiting  int    // calls waiting, plain and tasks'
	Reserved uint64 // bytes reserved by the running calls
}

// Stats returns what the controller holds now.
func (a *Controller) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Stats{Slots: a.slots, Budget: a.budget, Running: a.running, Waiting: a.waiting, Reserved: a.reserved}
}

// Budget returns the server's memory budget, bytes (fixed at New).
func (a *Controller) Budget() uint64 { return a.budget }

// Slots returns the server's instance slots (fixed at New).
func (a *Controller) Slots() int { return a.slots }

// ModuleShare returns m's share of the instances and of the memory budget
// (bytes; 0: no bound), as its last resize set them.
func (a *Controller) ModuleShare(m *Module) (slots int, memory uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return m.slots, m.memory
}

// Module returns the module whose share t is part of.
func (t *Tool) Module() *Module { return t.mod }

// Name returns the module's name, as given to NewModule.
func (m *Module) Name() string { return m.name }
