package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// serverSlots is the host's default maxInstances, the size the tests of
// fairness under floods measure at.
const serverSlots = 64

// pending is a call of the admission under test, entered on a goroutine of
// its own: done receives enter's error once it is admitted or refused.
type pending struct {
	name string
	tool *Tool
	size uint64
	done chan error
	stop context.CancelFunc

	returned bool  // enter returned, with err
	err      error // (see result)
	reported bool  // by admitted
}

// result is enter's error, and whether it returned, without waiting.
func (p *pending) result() (err error, returned bool) {
	if !p.returned {
		select {
		case p.err = <-p.done:
			p.returned = true
		default:
		}
	}
	return p.err, p.returned
}

func enterAsync(a *Controller, name string, t *Tool, size uint64) *pending {
	ctx, stop := context.WithCancel(context.Background())
	p := &pending{name: name, tool: t, size: size, done: make(chan error, 1), stop: stop}
	go func() { p.done <- a.Enter(ctx, t, size) }()
	return p
}

// admitted returns the names of the calls among ps whose enter returned
// since the last admitted that looked at them, with their errors; inside a
// synctest bubble, after synctest.Wait, the others are blocked in the
// queue.
func admitted(ps ...*pending) (names []string, errs map[string]error) {
	errs = map[string]error{}
	for _, p := range ps {
		if err, ok := p.result(); ok && !p.reported {
			p.reported = true
			names = append(names, p.name)
			errs[p.name] = err
		}
	}
	return names, errs
}

// A module with eight tools saturates the server's slots and queues more
// calls; a call of another module that arrives later is the next admitted
// when a slot frees, and the module's own calls then go in arrival order.
func TestAdmissionFairAcrossModules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(4, 1<<30)
		modA := a.NewModule("a", 4, 0) // as many as the server: fairness alone must make room
		modB := a.NewModule("b", 4, 0)
		var toolsA []*Tool
		for range 8 {
			toolsA = append(toolsA, a.NewTool(modA, 8, 32))
		}
		toolB := a.NewTool(modB, 8, 32)

		var running, queuedA []*pending
		for i := range 4 {
			running = append(running, enterAsync(a, fmt.Sprintf("a-run%d", i), toolsA[i], 1))
			synctest.Wait()
		}
		if names, _ := admitted(running...); len(names) != 4 {
			t.Fatalf("admitted %v, want the 4 first calls of module a", names)
		}
		for i := range 8 {
			queuedA = append(queuedA, enterAsync(a, fmt.Sprintf("a-wait%d", i), toolsA[i], 1))
			synctest.Wait() // queued in this order
		}
		b := enterAsync(a, "b", toolB, 1)
		synctest.Wait()
		if names, _ := admitted(append(queuedA, b)...); len(names) != 0 {
			t.Fatalf("admitted %v while the server's 4 slots are taken, want none", names)
		}

		a.Leave(toolsA[0], 1)
		synctest.Wait()
		if names, _ := admitted(append(queuedA, b)...); len(names) != 1 || names[0] != "b" {
			t.Fatalf("a slot freed: admitted %v, want [b] (module b runs nothing, a runs 3)", names)
		}
		// Module a's calls now go first in, first out.
		for i := range 3 {
			a.Leave(toolsA[i+1], 1)
			synctest.Wait()
			if names, _ := admitted(queuedA...); len(names) != 1 || names[0] != queuedA[i].name {
				t.Fatalf("slot %d freed: admitted %v, want [%s]", i+2, names, queuedA[i].name)
			}
		}
		for _, p := range queuedA[3:] {
			p.stop()
		}
		synctest.Wait()
		if _, errs := admitted(queuedA[3:]...); len(errs) != 5 {
			t.Fatalf("cancelled waiters returned %d times, want 5", len(errs))
		}
		checkIdle(t, a, 4) // b and queuedA[0..2] still run
	})
}

// A module's cap holds even when the server has free slots, and leaves
// them to other modules.
func TestAdmissionModuleCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(8, 1<<30)
		modA, modB := a.NewModule("a", 2, 0), a.NewModule("b", 2, 0)
		ta1, ta2, tb := a.NewTool(modA, 8, 32), a.NewTool(modA, 8, 32), a.NewTool(modB, 8, 32)
		ps := []*pending{
			enterAsync(a, "a1", ta1, 1), enterAsync(a, "a2", ta2, 1), enterAsync(a, "a3", ta1, 1),
			enterAsync(a, "b1", tb, 1), enterAsync(a, "b2", tb, 1),
		}
		synctest.Wait()
		names, _ := admitted(ps...)
		if len(names) != 4 || !strings.Contains(strings.Join(names, ","), "b1,b2") {
			t.Fatalf("admitted %v, want two calls of a and both of b (a's cap is 2 of the server's 8)", names)
		}
		for _, p := range ps {
			p.stop()
		}
		synctest.Wait()
	})
}

// The memory budget holds calls back; the call next in turn waits for
// memory and no smaller call passes it; a call larger than the whole
// budget fails at once.
func TestAdmissionMemoryBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(8, 100)
		mx, my, mz := a.NewModule("x", 8, 0), a.NewModule("y", 8, 0), a.NewModule("z", 8, 0)
		tx, ty, tz := a.NewTool(mx, 8, 32), a.NewTool(my, 8, 32), a.NewTool(mz, 8, 32)
		if err := a.Enter(context.Background(), tx, 60); err != nil {
			t.Fatal(err)
		}
		big := enterAsync(a, "big", ty, 60) // 40 left: waits
		synctest.Wait()
		small := enterAsync(a, "small", tz, 10) // would fit, but big is first
		synctest.Wait()
		if names, _ := admitted(big, small); len(names) != 0 {
			t.Fatalf("admitted %v with 40 of 100 bytes free, want none: big waits for memory and small waits behind it", names)
		}
		a.Leave(tx, 60)
		synctest.Wait()
		if names, errs := admitted(big, small); len(names) != 2 || errs["big"] != nil || errs["small"] != nil {
			t.Fatalf("60 bytes freed: admitted %v (%v), want big then small", names, errs)
		}
		if a.reserved != 70 {
			t.Errorf("reserved %d bytes, want 70", a.reserved)
		}

		err := a.Enter(context.Background(), tx, 101)
		var be *BudgetError
		if !errors.Is(err, ErrMemoryBudget) || !errors.As(err, &be) || !strings.Contains(err.Error(), "more than the server's memory budget") {
			t.Fatalf("a call of 101 bytes with a budget of 100: got %v, want ErrMemoryBudget at once", err)
		}
		a.Leave(ty, 60)
		a.Leave(tz, 10)
		checkIdle(t, a, 0)
	})
}

// Each queue bound refuses with its own scope; a waiter whose context ends
// leaves the queue and frees its place.
func TestAdmissionQueuesAndCancel(t *testing.T) {
	for _, tc := range []struct {
		name               string
		server, mod, tool  int // slots
		toolQueue          int
		wantScope          string
		wantQueued, wantOK int
	}{
		{"tool", 4, 4, 1, 2, "", 2, 1},
		{"module", 4, 1, 4, 16, `module "m" instance limit: `, QueuePerSlot * 1, 1},
		{"server", 1, 4, 4, 16, "server-wide instance limit: ", QueuePerSlot * 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := New(tc.server, 1<<30)
				tl := a.NewTool(a.NewModule("m", tc.mod, 0), tc.tool, tc.toolQueue)
				var ps []*pending
				for i := range tc.wantOK + tc.wantQueued {
					ps = append(ps, enterAsync(a, fmt.Sprint(i), tl, 1))
					synctest.Wait() // in this order
				}
				if names, _ := admitted(ps...); len(names) != tc.wantOK || names[0] != "0" {
					t.Fatalf("admitted %v, want the first %d", names, tc.wantOK)
				}
				err := a.Enter(context.Background(), tl, 1)
				var be *BusyError
				if !errors.As(err, &be) || !errors.Is(err, ErrBusy) || be.scope != tc.wantScope {
					t.Fatalf("one call more than the queue holds: got %v, want busy with scope %q", err, tc.wantScope)
				}
				// A queued call cancelled: its place is free for another.
				ps[len(ps)-1].stop()
				synctest.Wait()
				if err := <-ps[len(ps)-1].done; !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled while queued: got %v, want context.Canceled", err)
				}
				again := enterAsync(a, "again", tl, 1)
				synctest.Wait()
				select {
				case err := <-again.done:
					t.Fatalf("a call after the cancel: got %v, want it queued in the freed place", err)
				default:
				}
				for _, p := range append(ps[tc.wantOK:len(ps)-1], again) {
					p.stop()
				}
				synctest.Wait()
				for range tc.wantOK {
					a.Leave(tl, 1)
				}
				checkIdle(t, a, 0)
			})
		})
	}
}

// A reload that raises a bound admits the calls it lets in.
func TestAdmissionResize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(8, 1<<30)
		m := a.NewModule("m", 1, 0)
		tl := a.NewTool(m, 1, 8)
		first, second := enterAsync(a, "first", tl, 1), enterAsync(a, "second", tl, 1)
		synctest.Wait()
		if names, _ := admitted(first, second); len(names) != 1 {
			t.Fatalf("admitted %v, want one", names)
		}
		a.ResizeTool(tl, 2, 8)
		synctest.Wait()
		if names, _ := admitted(first, second); len(names) != 0 {
			t.Fatalf("tool bound raised, module's still 1: admitted %v, want none", names)
		}
		a.ResizeModule(m, 2, 0)
		synctest.Wait()
		if names, _ := admitted(first, second); len(names) != 1 {
			t.Fatalf("module bound raised: admitted %v, want the waiting call", names)
		}
		a.Leave(tl, 1)
		a.Leave(tl, 1)
		checkIdle(t, a, 0)
	})
}

// Many goroutines enter, leave and give up at random: no bound is ever
// passed, and all is given back at the end.
func TestAdmissionHammer(t *testing.T) {
	const modules, toolsPer, workers, rounds = 3, 3, 24, 200
	a := New(6, 500)
	var tools []*Tool
	for i := range modules {
		m := a.NewModule(fmt.Sprint(i), 3, 0)
		for range toolsPer {
			tools = append(tools, a.NewTool(m, 2, 4))
		}
	}
	check := func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.running > a.slots || a.reserved > a.budget {
			return fmt.Errorf("server: %d running of %d, %d bytes of %d", a.running, a.slots, a.reserved, a.budget)
		}
		for _, tl := range tools {
			if tl.running > tl.slots || tl.mod.running > tl.mod.slots || tl.waiting > tl.queue || len(tl.mod.waiters) > tl.mod.queue {
				return fmt.Errorf("module %s: tool %d/%d running %d waiting, module %d/%d running", tl.mod.name, tl.running, tl.slots, tl.waiting, tl.mod.running, tl.mod.slots)
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				tl, size := tools[r.IntN(len(tools))], uint64(1+r.IntN(200))
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(4) == 0 {
					cancel() // gives up at once if it must wait
				}
				err := a.Enter(ctx, tl, size)
				if err == nil {
					if err := check(); err != nil {
						errc <- err
						cancel()
						return
					}
					a.Leave(tl, size)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	checkIdle(t, a, 0)
}

// checkIdle asserts that a has running calls and nothing waiting.
func checkIdle(t *testing.T, a *Controller, running int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running != running || a.waiting != 0 || len(a.modules) != 0 || a.stalled {
		t.Errorf("admission: %d running, %d waiting, %d modules listed, stalled %v; want %d running and nothing waiting",
			a.running, a.waiting, len(a.modules), a.stalled, running)
	}
}

// BenchmarkAdmission is the cost of admission alone: enter and leave one
// call, with nothing waiting (serial), from every P at once within the
// bounds (parallel), and with one server slot for every P, so that each
// call but one waits and is handed the slot (contended).
//
//	go test -run '^$' -bench Admission ./host/
func BenchmarkAdmission(b *testing.B) {
	ctx := context.Background()
	for _, bm := range []struct {
		name  string
		slots int
		par   bool
	}{
		{"serial", serverSlots, false},
		{"parallel", serverSlots, true},
		{"contended", 1, true},
	} {
		b.Run(bm.name, func(b *testing.B) {
			a := New(bm.slots, 1<<40)
			tl := a.NewTool(a.NewModule("m", bm.slots, 0), bm.slots, 1<<20)
			a.queue = 1 << 20
			tl.mod.queue = 1 << 20
			call := func() {
				if err := a.Enter(ctx, tl, 1<<20); err != nil {
					b.Error(err)
				}
				a.Leave(tl, 1<<20)
			}
			if !bm.par {
				for b.Loop() {
					call()
				}
				return
			}
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					call()
				}
			})
		})
	}
}

// enterAsAsync is enterAsync for a call made by c.
func enterAsAsync(a *Controller, name string, t *Tool, size uint64, c Caller) *pending {
	ctx, stop := context.WithCancel(context.Background())
	p := &pending{name: name, tool: t, size: size, done: make(chan error, 1), stop: stop}
	go func() { p.done <- a.EnterAs(ctx, t, size, c) }()
	return p
}

// places records the queue reports a task's call hears.
type places struct {
	mu    sync.Mutex
	heard []int
}

func (p *places) report(ahead int) { p.mu.Lock(); p.heard = append(p.heard, ahead); p.mu.Unlock() }
func (p *places) all() []int       { p.mu.Lock(); defer p.mu.Unlock(); return append([]int(nil), p.heard...) }

// A tenant that floods the queue does not starve another: when a slot
// frees, the call of the tenant running fewer calls goes first, however
// many of the flooding tenant's calls are older.
func TestAdmissionFairAcrossTenants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(2, 1<<30)
		tool := a.NewTool(a.NewModule("m", 2, 0), 2, 64)
		flood := Caller{Tenant: "user:a", Queued: func(int) {}}
		var runA, waitA []*pending
		for i := range 2 {
			runA = append(runA, enterAsAsync(a, fmt.Sprintf("a-run%d", i), tool, 1, flood))
			synctest.Wait()
		}
		if names, _ := admitted(runA...); len(names) != 2 {
			t.Fatalf("admitted %v, want tenant a's first two calls", names)
		}
		for i := range 20 {
			waitA = append(waitA, enterAsAsync(a, fmt.Sprintf("a-wait%d", i), tool, 1, flood))
			synctest.Wait() // queued in this order
		}
		b := enterAsAsync(a, "b", tool, 1, Caller{Tenant: "user:b", Queued: func(int) {}})
		synctest.Wait()
		if names, _ := admitted(append(waitA, b)...); len(names) != 0 {
			t.Fatalf("admitted %v with both slots taken", names)
		}
		a.LeaveAs(tool, 1, "user:a")
		synctest.Wait()
		if names, _ := admitted(append(waitA, b)...); len(names) != 1 || names[0] != "b" {
			t.Fatalf("a slot freed: admitted %v, want [b] (tenant b runs nothing, a runs 1)", names)
		}
		a.LeaveAs(tool, 1, "user:a")
		synctest.Wait()
		if names, _ := admitted(waitA...); len(names) != 1 || names[0] != "a-wait0" {
			t.Fatalf("next slot: admitted %v, want a's oldest, a-wait0", names)
		}
		for _, p := range waitA[1:] {
			p.stop()
		}
		synctest.Wait()
		a.LeaveAs(tool, 1, "user:a")
		a.LeaveAs(tool, 1, "user:b")
		checkIdle(t, a, 0)
		if n := len(a.tenants); n != 0 {
			t.Errorf("%d tenant shares left with nothing in flight, want 0", n)
		}
	})
}

// A task's call is never refused for being busy: where a plain call beyond
// the queue bound gets a busy error, the task waits, hears its place in
// the queue as it changes, and hears -1 when it starts.
func TestAdmissionTaskWaitsAndHearsItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(1, 1<<30)
		tool := a.NewTool(a.NewModule("m", 1, 0), 1, 1) // one running, one waiting
		if err := a.Enter(context.Background(), tool, 1); err != nil {
			t.Fatal(err)
		}
		plain := enterAsync(a, "plain", tool, 1)
		synctest.Wait()
		if err := a.Enter(context.Background(), tool, 1); !errors.Is(err, ErrBusy) {
			t.Fatalf("a plain call beyond the queue bound: %v, want ErrBusy", err)
		}
		var heard places
		task := enterAsAsync(a, "task", tool, 1, Caller{Tenant: "user:t", Queued: heard.report})
		synctest.Wait()
		if names, errs := admitted(task); len(names) != 0 {
			t.Fatalf("the task's call returned %v while the tool is busy, want it waiting", errs)
		}
		if got := heard.all(); len(got) != 1 || got[0] != 1 {
			t.Fatalf("the task heard %v on arrival, want [1] (the plain call waits ahead of it)", got)
		}
		a.Leave(tool, 1) // the plain call starts: the task is now first
		synctest.Wait()
		if got := heard.all(); len(got) != 2 || got[1] != 0 {
			t.Fatalf("the task heard %v once the call ahead started, want [1 0]", got)
		}
		<-plain.done
		a.Leave(tool, 1)
		synctest.Wait()
		if _, errs := admitted(task); errs["task"] != nil || len(errs) != 1 {
			t.Fatalf("the task's call: %v, want admitted", errs)
		}
		if got := heard.all(); len(got) != 3 || got[2] != -1 {
			t.Errorf("the task heard %v, want [1 0 -1]", got)
		}
		a.LeaveAs(tool, 1, "user:t")
		checkIdle(t, a, 0)
	})
}

// A tenant's share of the instances holds while the server has free
// slots, and leaves them to other tenants.
func TestAdmissionTenantShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(4, 1<<30)
		tool := a.NewTool(a.NewModule("m", 4, 0), 4, 8)
		small := Caller{Tenant: "user:small", Slots: 1}
		s1 := enterAsAsync(a, "s1", tool, 1, small)
		synctest.Wait()
		s2 := enterAsAsync(a, "s2", tool, 1, small)
		other := enterAsAsync(a, "other", tool, 1, Caller{Tenant: "user:other"})
		synctest.Wait()
		if names, _ := admitted(s1, s2, other); !slices.Equal(names, []string{"s1", "other"}) {
			t.Fatalf("admitted %v, want [s1 other]: small's second call waits for its share", names)
		}
		a.LeaveAs(tool, 1, "user:small")
		synctest.Wait()
		if names, _ := admitted(s2); len(names) != 1 {
			t.Fatal("small's second call did not start when its first ended")
		}
		a.LeaveAs(tool, 1, "user:small")
		a.LeaveAs(tool, 1, "user:other")
		checkIdle(t, a, 0)
	})
}

// A tenant's share of the memory budget holds while the server has room,
// and a call that could never fit it fails at once.
func TestAdmissionTenantMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(8, 1<<30)
		tool := a.NewTool(a.NewModule("m", 8, 0), 8, 8)
		small := Caller{Tenant: "user:small", Memory: 100, Strict: true}
		s1 := enterAsAsync(a, "s1", tool, 60, small)
		synctest.Wait()
		s2 := enterAsAsync(a, "s2", tool, 60, small)
		other := enterAsAsync(a, "other", tool, 60, Caller{Tenant: "user:other"})
		synctest.Wait()
		if names, _ := admitted(s1, s2, other); !slices.Equal(names, []string{"s1", "other"}) {
			t.Fatalf("admitted %v, want [s1 other]: small's second call waits for its memory share", names)
		}
		if err := a.EnterAs(context.Background(), tool, 101, small); !errors.Is(err, ErrMemoryBudget) || !strings.Contains(err.Error(), "tenant's share") {
			t.Errorf("a call larger than the tenant's share: %v, want ErrMemoryBudget naming the share", err)
		}
		a.LeaveAs(tool, 60, "user:small")
		synctest.Wait()
		if names, _ := admitted(s2); len(names) != 1 {
			t.Fatal("small's second call did not start when its first ended")
		}
		a.LeaveAs(tool, 60, "user:small")
		a.LeaveAs(tool, 60, "user:other")
		checkIdle(t, a, 0)
	})
}

// Queued tasks do not make other callers' plain calls busy: the queue
// bounds count plain calls only.
func TestAdmissionTasksDoNotFillThePlainQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(1, 1<<30)
		tool := a.NewTool(a.NewModule("m", 1, 0), 1, 1)
		if err := a.Enter(context.Background(), tool, 1); err != nil {
			t.Fatal(err)
		}
		var tasks []*pending
		for i := range 8 {
			tasks = append(tasks, enterAsAsync(a, fmt.Sprintf("task%d", i), tool, 1, Caller{Tenant: "user:a", Queued: func(int) {}}))
		}
		synctest.Wait()
		plain := enterAsAsync(a, "plain", tool, 1, Caller{Tenant: "user:b"})
		synctest.Wait()
		if _, errs := admitted(plain); errs["plain"] != nil {
			t.Fatalf("b's plain call behind a's 8 queued tasks: %v, want it waiting in its own queue place", errs["plain"])
		}
		if err := a.Enter(context.Background(), tool, 1); !errors.Is(err, ErrBusy) {
			t.Errorf("a second plain call past the bound of 1: %v, want ErrBusy", err)
		}
		for _, p := range append(tasks, plain) {
			p.stop()
		}
		synctest.Wait()
		a.Leave(tool, 1)
		checkIdle(t, a, 0)
	})
}

// flood enters n calls of tool tl for c, each reserving size, on
// goroutines of their own, and returns them once they have been admitted
// or queued (inside a synctest bubble).
func flood(a *Controller, name string, tl *Tool, size uint64, c Caller, n int) []*pending {
	var ps []*pending
	for i := range n {
		ps = append(ps, enterAsAsync(a, fmt.Sprintf("%s%d", name, i), tl, size, c))
	}
	synctest.Wait()
	return ps
}

// stopAll gives up the calls of ps still waiting and returns those that
// had been admitted (they still hold their places).
func stopAll(ps []*pending) []*pending {
	for _, p := range ps {
		p.stop()
	}
	synctest.Wait()
	var in []*pending
	for _, p := range ps {
		if err, _ := p.result(); err == nil {
			in = append(in, p)
		}
	}
	return in
}

// free is the server's instances and memory not held by running calls.
func free(a *Controller) (slots int, memory uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.slots - a.running, a.budget - a.reserved
}

// One module that floods the server, through as many tools as it likes,
// holds at most its default share (a quarter of the instances and of the
// memory budget): a newcomer module's call starts at once.
func TestAdmissionHeadroomUnderModuleFlood(t *testing.T) {
	const budget = 1 << 30
	for _, tc := range []struct {
		name      string
		size      uint64 // what each call reserves
		wantSlots int    // instances the flood leaves free
		wantMem   uint64 // memory it leaves free
	}{
		// 16 tools × 8 slots: the module's 16 instances bound it.
		{"instances", 1 << 20, serverSlots * 3 / 4, budget - 16<<20},
		// Calls of 64 MiB: its quarter of the memory (4 calls) bounds it.
		{"memory", 64 << 20, serverSlots - 4, budget * 3 / 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := New(serverSlots, budget)
				module := func(name string) *Module {
					// The host's default module share: a quarter of each.
					return a.NewModule(name, serverSlots/4, budget/4)
				}
				fm := module("flood")
				var ps []*pending
				for range 16 {
					ps = append(ps, flood(a, "flood", a.NewTool(fm, 8, 1<<10), tc.size, Caller{Queued: func(int) {}}, 12)...)
				}
				slots, memory := free(a)
				t.Logf("instances left to a newcomer under one module's flood: %d of %d; memory %d of %d MiB", slots, serverSlots, memory>>20, budget>>20)
				if slots != tc.wantSlots || memory != tc.wantMem {
					t.Fatalf("one module's flood leaves %d instances and %d MiB free, want %d and %d MiB", slots, memory>>20, tc.wantSlots, tc.wantMem>>20)
				}
				newcomer := enterAsync(a, "newcomer", a.NewTool(module("newcomer"), 8, 32), tc.size)
				synctest.Wait()
				if _, errs := admitted(newcomer); len(errs) != 1 || errs["newcomer"] != nil {
					t.Fatalf("a newcomer module's call under the flood: %v, want it started at once", errs)
				}
				a.Leave(newcomer.tool, tc.size)
				for _, p := range stopAll(ps) {
					a.Leave(p.tool, p.size)
				}
				checkIdle(t, a, 0)
			})
		})
	}
}

// One tenant without a share of its own that floods the server, through
// many modules, holds at most half of the instances and of the memory
// budget; a newcomer tenant's call starts at once. Its plain calls wait
// within its own queue bound, so they cannot make the server's queue
// refuse others.
func TestAdmissionHeadroomUnderTenantFlood(t *testing.T) {
	const budget = 1 << 30
	for _, tc := range []struct {
		name      string
		size      uint64
		wantSlots int
		wantMem   uint64
	}{
		{"instances", 1 << 20, serverSlots / 2, budget - 32<<20},
		{"memory", 64 << 20, serverSlots - 8, budget / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := New(serverSlots, budget)
				slots, memory := a.DefaultTenantShare()
				fl := Caller{Tenant: "user:flood", Slots: slots, Memory: memory, Queued: func(int) {}}
				var ps []*pending
				for i := range 8 { // 8 modules of the default share: 128 instances, were it not for the tenant's
					m := a.NewModule(fmt.Sprint(i), serverSlots/4, budget/4)
					ps = append(ps, flood(a, "flood", a.NewTool(m, 16, 1<<10), tc.size, fl, 24)...)
				}
				slots, memory = free(a)
				t.Logf("instances left to a newcomer under one tenant's flood: %d of %d; memory %d of %d MiB", slots, serverSlots, memory>>20, budget>>20)
				if slots != tc.wantSlots || memory != tc.wantMem {
					t.Fatalf("one tenant's flood leaves %d instances and %d MiB free, want %d and %d MiB", slots, memory>>20, tc.wantSlots, tc.wantMem>>20)
				}
				tool := a.NewTool(a.NewModule("shared", serverSlots, 0), 8, 32)
				newcomer := enterAsAsync(a, "newcomer", tool, tc.size, Caller{Tenant: "user:new", Slots: slots, Memory: memory})
				synctest.Wait()
				if _, errs := admitted(newcomer); len(errs) != 1 || errs["newcomer"] != nil {
					t.Fatalf("a newcomer tenant's call under the flood: %v, want it started at once", errs)
				}
				a.LeaveAs(tool, tc.size, "user:new")
				for _, p := range stopAll(ps) {
					a.LeaveAs(p.tool, p.size, "user:flood")
				}
				checkIdle(t, a, 0)
			})
		})
	}

	// Plain calls: the tenant's queue bound is QueuePerSlot × its share.
	synctest.Test(t, func(t *testing.T) {
		a := New(8, 1<<30)
		tool := a.NewTool(a.NewModule("m", 8, 0), 8, 1<<10)
		tool.mod.queue = 1 << 10
		slots, memory := a.DefaultTenantShare()
		fl := Caller{Tenant: "user:flood", Slots: slots, Memory: memory}
		ps := flood(a, "flood", tool, 1, fl, 4+QueuePerSlot*4) // its 4 running and a full queue
		if n, _ := admitted(ps...); len(n) != 4 {
			t.Fatalf("admitted %d of the flood, want its share of 4", len(n))
		}
		err := a.EnterAs(context.Background(), tool, 1, fl)
		var be *BusyError
		if !errors.As(err, &be) || be.scope != `tenant "user:flood" instance share: ` {
			t.Fatalf("one plain call past the tenant's queue bound: %v, want busy by the tenant's share", err)
		}
		other := enterAsAsync(a, "other", tool, 1, Caller{Tenant: "user:other", Slots: slots, Memory: memory})
		synctest.Wait()
		if _, errs := admitted(other); errs["other"] != nil || len(errs) != 1 {
			t.Fatalf("another tenant's plain call: %v, want it started", errs)
		}
		a.LeaveAs(tool, 1, "user:other")
		for range stopAll(ps) {
			a.LeaveAs(tool, 1, "user:flood")
		}
		checkIdle(t, a, 0)
	})
}

// When every instance is held, a newcomer's call — of a module, or of a
// tenant, that runs nothing — takes the next slot that frees, ahead of the
// calls queued by the parties that hold slots: its wait is that of the
// first running call to end, not that of the queue.
func TestAdmissionNewcomerTakesTheNextSlot(t *testing.T) {
	t.Run("module", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a := New(8, 1<<30)
			var ps []*pending
			var tools []*Tool
			for i := range 4 { // four modules of 2 slots fill the server, each with a queue
				tl := a.NewTool(a.NewModule(fmt.Sprint(i), 2, 0), 2, 8)
				tools = append(tools, tl)
				ps = append(ps, flood(a, fmt.Sprintf("m%d-", i), tl, 1, Caller{}, 2+6)...) // 24 of the server's 32 queue places
			}
			if slots, _ := free(a); slots != 0 {
				t.Fatalf("%d slots free, want the server full", slots)
			}
			nc := a.NewTool(a.NewModule("newcomer", 2, 0), 2, 8)
			newcomer := enterAsync(a, "newcomer", nc, 1)
			synctest.Wait()
			if names, errs := admitted(newcomer); len(names) != 0 {
				t.Fatalf("the newcomer on a full server: %v, want it waiting", errs)
			}
			var ended *pending // a running call of module 2
			for _, p := range ps {
				if err, ok := p.result(); ok && err == nil && p.tool == tools[2] {
					ended = p
					break
				}
			}
			a.Leave(ended.tool, 1)
			synctest.Wait()
			if names, errs := admitted(newcomer); len(names) != 1 || errs["newcomer"] != nil {
				t.Fatalf("the first slot to free went elsewhere: newcomer %v, want it admitted ahead of 24 queued calls", errs)
			}
			a.Leave(nc, 1)
			for _, p := range stopAll(ps) {
				if p != ended {
					a.Leave(p.tool, 1)
				}
			}
			checkIdle(t, a, 0)
		})
	})
	t.Run("tenant", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a := New(8, 1<<30)
			tool := a.NewTool(a.NewModule("m", 8, 0), 8, 1<<10)
			tool.mod.queue = 1 << 10
			// Two tenants of the default share (half each) fill the
			// server; one queues its whole bound, the other a few.
			slots, memory := a.DefaultTenantShare()
			pa := flood(a, "a", tool, 1, Caller{Tenant: "user:a", Slots: slots, Memory: memory}, 4+QueuePerSlot*4)
			pb := flood(a, "b", tool, 1, Caller{Tenant: "user:b", Slots: slots, Memory: memory, Queued: func(int) {}}, 4+3)
			if slots, _ := free(a); slots != 0 {
				t.Fatalf("%d slots free, want the server full", slots)
			}
			newcomer := enterAsAsync(a, "newcomer", tool, 1, Caller{Tenant: "user:new", Slots: slots, Memory: memory})
			synctest.Wait()
			if names, errs := admitted(newcomer); len(names) != 0 {
				t.Fatalf("the newcomer on a full server: %v, want it waiting (not busy: one tenant cannot fill the server's queue)", errs)
			}
			a.LeaveAs(tool, 1, "user:a") // one of a's calls ends
			synctest.Wait()
			if names, errs := admitted(newcomer); len(names) != 1 || errs["newcomer"] != nil {
				t.Fatalf("the first slot to free: newcomer %v, want it admitted ahead of 19 queued calls", errs)
			}
			a.LeaveAs(tool, 1, "user:new")
			for range len(stopAll(pa)) - 1 {
				a.LeaveAs(tool, 1, "user:a")
			}
			for range stopAll(pb) {
				a.LeaveAs(tool, 1, "user:b")
			}
			checkIdle(t, a, 0)
		})
	})
}

// A default share never makes a tool unusable: a module, or a tenant
// without a share of its own, that runs nothing may start one call that
// reserves more than its memory share; a second waits for the first.
func TestAdmissionDefaultShareAdmitsOneLargeCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(8, 100)
		slots, memory := a.DefaultTenantShare() // 4 and 50
		tc := Caller{Tenant: "user:t", Slots: slots, Memory: memory}
		m := a.NewModule("m", 8, 25)
		tool := a.NewTool(m, 8, 8)
		first := enterAsAsync(a, "first", tool, 40, tc)
		synctest.Wait()
		second := enterAsAsync(a, "second", tool, 40, tc)
		synctest.Wait()
		if names, errs := admitted(first, second); !slices.Equal(names, []string{"first"}) || errs["first"] != nil {
			t.Fatalf("admitted %v (%v), want the first call alone: 40 bytes pass the module's 25 and the tenant's 50, but nothing else runs", names, errs)
		}
		a.LeaveAs(tool, 40, "user:t")
		synctest.Wait()
		if _, errs := admitted(second); errs["second"] != nil || len(errs) != 1 {
			t.Fatalf("the second call once the first ended: %v, want it admitted", errs)
		}
		a.LeaveAs(tool, 40, "user:t")
		checkIdle(t, a, 0)
	})
}
