package taskengine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// These tests pin down per-owner retention: an owner makes room only by
// evicting its own finished tasks, least recently used first, and never
// another owner's. Work finishes when the test says so (returning work
// waited for, or gated work released), so nothing depends on timing.

// finish submits work for owner that returns an outcome of size bytes and
// waits until it has finished; it returns the task's ID.
func finish(t *testing.T, e *Engine, owner string, size int64) string {
	t.Helper()
	tk := mustSubmit(t, e, owner, SubmitOptions{}, returning(Outcome{Value: size, Size: size}))
	mustWait(t, e, owner, tk.ID)
	return tk.ID
}

// finishedLRU lists owner's finished tasks, least recently used first,
// without touching their recency.
func finishedLRU(e *Engine, owner string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if oi := e.owners[owner]; oi != nil {
		return oi.finished.Keys()
	}
	return nil
}

func mustGet(t *testing.T, e *Engine, owner, id, what string) {
	t.Helper()
	if _, err := e.Get(context.Background(), owner, id); err != nil {
		t.Errorf("%s: Get(%q, %s): %v, want the task", what, owner, id, err)
	}
}

func mustBeGone(t *testing.T, e *Engine, owner, id, what string) {
	t.Helper()
	if _, err := e.Get(context.Background(), owner, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("%s: Get(%q, %s): %v, want ErrNotFound", what, owner, id, err)
	}
}

// One owner submitting and finishing far more tasks than the store holds
// evicts only its own results: another owner's unexpired result stays.
func TestOwnerFloodKeepsOthersResults(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		step int64 // alice's outcomes are 0, step and 2*step bytes in turn
	}{
		{"per-owner bounds by default", Config{MaxTasks: 8, MaxResultBytes: 800}, 60},
		// alice may take the whole store, so the engine's bounds are hit:
		// the task count with empty outcomes, the bytes with large ones.
		{"engine-wide task count", Config{MaxTasks: 8, MaxResultBytes: 800, MaxTasksPerOwner: 8, MaxResultBytesPerOwner: 800}, 0},
		{"engine-wide bytes", Config{MaxTasks: 8, MaxResultBytes: 800, MaxTasksPerOwner: 8, MaxResultBytesPerOwner: 800}, 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(t, tt.cfg)
			bob := finish(t, e, "bob", 100)
			for i := range 200 {
				finish(t, e, "alice", int64(i%3)*tt.step)
			}
			mustGet(t, e, "bob", bob, "after alice's 200 tasks")
			s := e.Stats()
			if s.Owners != 2 || s.Tasks > tt.cfg.MaxTasks || s.Running != 0 {
				t.Errorf("stats %+v: want 2 owners, at most %d tasks, none running", s, tt.cfg.MaxTasks)
			}
			if n := len(finishedLRU(e, "alice")); n == 0 || n > e.cfg.MaxTasksPerOwner {
				t.Errorf("alice keeps %d tasks, want 1 to %d", n, e.cfg.MaxTasksPerOwner)
			}
		})
	}
}

// At its MaxTasksPerOwner, an owner's Submit evicts that owner's least
// recently used finished task (by use, not by creation; List is no use),
// and fails with ErrOwnerLimit once all of its tasks are running.
func TestOwnerMaxTasksEvictsOwnLRU(t *testing.T) {
	e := newTestEngine(t, Config{MaxTasks: 100, MaxTasksPerOwner: 3, MaxRunningPerOwner: 10})
	bob := finish(t, e, "bob", 0)
	a, b, c := finish(t, e, "alice", 0), finish(t, e, "alice", 0), finish(t, e, "alice", 0)
	mustGet(t, e, "alice", a, "touch a") // a becomes alice's most recently used
	if _, _, err := e.List(context.Background(), "alice", "", 10); err != nil {
		t.Fatal(err)
	}
	d := finish(t, e, "alice", 0) // evicts b, alice's least recently used
	if got, want := finishedLRU(e, "alice"), []string{c, a, d}; !slices.Equal(got, want) {
		t.Errorf("alice's tasks, least recently used first: got %v, want %v (b evicted)", got, want)
	}
	mustBeGone(t, e, "alice", b, "alice's least recently used task")

	release := make(chan struct{})
	defer close(release)
	for i, gone := range []string{c, a, d} { // each running task takes the place of a finished one
		mustSubmit(t, e, "alice", SubmitOptions{}, gated(release, Outcome{}))
		if got := finishedLRU(e, "alice"); len(got) != 2-i || slices.Contains(got, gone) {
			t.Errorf("running task %d: alice keeps %v, want %s evicted", i+1, got, gone)
		}
	}
	_, err := e.Submit(context.Background(), "alice", SubmitOptions{}, gated(release, Outcome{}))
	wantErr(t, "Submit with all of alice's tasks running", err, ErrOwnerLimit)
	mustGet(t, e, "bob", bob, "after alice's evictions")
	if s := e.Stats(); s.Tasks != 4 || s.Running != 3 {
		t.Errorf("stats %+v: want 4 tasks (alice's 3 running, bob's 1), 3 running", s)
	}
}

// When the engine is full and the submitting owner has no finished task of
// its own, Submit fails with ErrFull rather than evict another owner's.
func TestFullOfOtherOwnersTasks(t *testing.T) {
	e := newTestEngine(t, Config{MaxTasks: 4, MaxTasksPerOwner: 4})
	var bobs []string
	for range 3 {
		bobs = append(bobs, finish(t, e, "bob", 0))
	}
	carol := finish(t, e, "carol", 0)

	_, err := e.Submit(context.Background(), "alice", SubmitOptions{}, returning(Outcome{}))
	wantErr(t, "alice's Submit into a store full of others' finished tasks", err, ErrFull)

	// carol has a finished task of her own to give up: her Submit replaces it.
	release := make(chan struct{})
	defer close(release)
	mustSubmit(t, e, "carol", SubmitOptions{}, gated(release, Outcome{}))
	mustBeGone(t, e, "carol", carol, "carol's own finished task")
	// Now carol's only task is running: she cannot make room either.
	_, err = e.Submit(context.Background(), "carol", SubmitOptions{}, returning(Outcome{}))
	wantErr(t, "carol's second Submit", err, ErrFull)
	for _, id := range bobs {
		mustGet(t, e, "bob", id, "after the others' Submits")
	}
	if s := e.Stats(); s.Tasks != 4 || s.Owners != 2 {
		t.Errorf("stats %+v: want 4 tasks of 2 owners", s)
	}
}

// A finishing outcome makes room within MaxResultBytesPerOwner and
// MaxResultBytes by evicting the owner's own least recently used results;
// when only other owners' results stand in the way, the task fails with
// ErrTooLarge and nothing is evicted.
func TestOwnerBytesEvictOwn(t *testing.T) {
	t.Run("owner's bound", func(t *testing.T) {
		e := newTestEngine(t, Config{MaxResultBytes: 1000, MaxResultBytesPerOwner: 100})
		bob := finish(t, e, "bob", 90)
		a, b := finish(t, e, "alice", 40), finish(t, e, "alice", 40)
		mustGet(t, e, "alice", a, "touch a")
		c := finish(t, e, "alice", 40) // 120 > 100: evicts b, alice's least recently used
		if got, want := finishedLRU(e, "alice"), []string{a, c}; !slices.Equal(got, want) {
			t.Errorf("alice's tasks: got %v, want %v (b evicted)", got, want)
		}
		mustBeGone(t, e, "alice", b, "alice's least recently used result")
		big := mustSubmit(t, e, "alice", SubmitOptions{}, returning(Outcome{Value: "big", Size: 101}))
		if got, out := mustWait(t, e, "alice", big.ID); got.Status != StatusFailed || !errors.Is(out.Err, ErrTooLarge) || out.Value != nil {
			t.Errorf("outcome above the owner's bound: got %s, %+v; want failed with ErrTooLarge, no value", got.Status, out)
		}
		mustGet(t, e, "bob", bob, "after alice's results")
		if s := e.Stats(); s.ResultBytes != 170 {
			t.Errorf("result bytes %d, want 170 (bob 90, alice 80)", s.ResultBytes)
		}
	})
	t.Run("engine's bound", func(t *testing.T) {
		e := newTestEngine(t, Config{MaxResultBytes: 100, MaxResultBytesPerOwner: 100})
		bob := finish(t, e, "bob", 30)
		a, b := finish(t, e, "alice", 30), finish(t, e, "alice", 30)
		c := finish(t, e, "alice", 30) // 120 > 100 in all: evicts a, alice's own
		if got, want := finishedLRU(e, "alice"), []string{b, c}; !slices.Equal(got, want) {
			t.Errorf("alice's tasks: got %v, want %v (a evicted)", got, want)
		}
		mustBeGone(t, e, "alice", a, "alice's least recently used result")
		mustGet(t, e, "bob", bob, "after alice's results")
	})
	t.Run("store full of others' results", func(t *testing.T) {
		e := newTestEngine(t, Config{MaxResultBytes: 100, MaxResultBytesPerOwner: 100})
		bob := finish(t, e, "bob", 70)
		a := finish(t, e, "alice", 20)
		big := mustSubmit(t, e, "alice", SubmitOptions{}, returning(Outcome{Value: "v", Size: 40})) // 70+40 > 100 even without a
		got, out := mustWait(t, e, "alice", big.ID)
		if got.Status != StatusFailed || !errors.Is(out.Err, ErrTooLarge) || !strings.Contains(out.Err.Error(), "result store is full") {
			t.Errorf("outcome that only other owners' results keep out: got %s, %v; want failed, ErrTooLarge, store full", got.Status, out.Err)
		}
		mustGet(t, e, "bob", bob, "after alice's outcome")
		mustGet(t, e, "alice", a, "alice's result, not evicted in vain")
		if s := e.Stats(); s.ResultBytes != 90 {
			t.Errorf("result bytes %d, want 90", s.ResultBytes)
		}
	})
}

// Config.Limits gives each owner its own bounds; zero fields fall back to
// the Config defaults.
func TestLimitsHook(t *testing.T) {
	limits := map[string]OwnerLimits{
		"small": {MaxRunning: 1, MaxTasks: 5, MaxResultBytes: 10},
		"big":   {MaxRunning: 4, MaxTasks: 6, MaxResultBytes: 500},
		"mixed": {MaxTasks: 1}, // MaxRunning and MaxResultBytes: the defaults
	}
	e := newTestEngine(t, Config{
		MaxTasks:               100,
		MaxRunningPerOwner:     2,
		MaxTasksPerOwner:       3,
		MaxResultBytesPerOwner: 50,
		Limits:                 func(owner string) OwnerLimits { return limits[owner] }, // zero for anyone else
	})

	t.Run("MaxRunning", func(t *testing.T) {
		release := make(chan struct{})
		var running []Task
		for owner, want := range map[string]int{"small": 1, "big": 4, "mixed": 1, "other": 2} {
			for range want {
				running = append(running, mustSubmit(t, e, owner, SubmitOptions{}, gated(release, Outcome{})))
			}
			_, err := e.Submit(context.Background(), owner, SubmitOptions{}, gated(release, Outcome{}))
			wantErr(t, owner+"'s Submit past its MaxRunning", err, ErrOwnerLimit)
		}
		close(release)
		for _, tk := range running {
			mustWait(t, e, tk.Owner, tk.ID)
		}
	})
	t.Run("MaxResultBytes", func(t *testing.T) {
		for _, c := range []struct {
			owner    string
			size     int64
			tooLarge bool
		}{
			{"small", 10, false}, {"small", 11, true},
			{"mixed", 50, false}, {"mixed", 51, true},
			{"other", 50, false}, {"other", 51, true},
			{"big", 500, false}, {"big", 501, true},
		} {
			tk := mustSubmit(t, e, c.owner, SubmitOptions{}, returning(Outcome{Value: "v", Size: c.size}))
			_, out := mustWait(t, e, c.owner, tk.ID)
			if got := errors.Is(out.Err, ErrTooLarge); got != c.tooLarge {
				t.Errorf("%s's outcome of %d bytes: Err %v, want ErrTooLarge %v", c.owner, c.size, out.Err, c.tooLarge)
			}
		}
	})
	t.Run("MaxTasks", func(t *testing.T) {
		for owner, want := range map[string]int{"small": 5, "big": 6, "mixed": 1, "other": 3} {
			for range 10 {
				finish(t, e, owner, 0)
			}
			page, _, err := e.List(context.Background(), owner, "", 100)
			if err != nil || len(page) != want {
				t.Errorf("%s keeps %d tasks (%v), want %d", owner, len(page), err, want)
			}
		}
	})
}

// Bounds that Config.Limits lowers are enforced at the owner's next Submit
// (task count) and its next finishing task (bytes), on its own tasks only.
func TestLimitsLowered(t *testing.T) {
	var maxTasks, maxBytes atomic.Int64
	maxTasks.Store(4)
	maxBytes.Store(100)
	e := newTestEngine(t, Config{
		MaxTasks: 100,
		Limits: func(owner string) OwnerLimits {
			if owner != "alice" {
				return OwnerLimits{}
			}
			return OwnerLimits{MaxTasks: int(maxTasks.Load()), MaxResultBytes: maxBytes.Load()}
		},
	})
	bob := finish(t, e, "bob", 10)
	var ids []string
	for range 4 {
		ids = append(ids, finish(t, e, "alice", 20))
	}
	maxTasks.Store(2)
	release := make(chan struct{})
	tk := mustSubmit(t, e, "alice", SubmitOptions{}, gated(release, Outcome{Value: "v", Size: 10}))
	if got, want := finishedLRU(e, "alice"), ids[3:]; !slices.Equal(got, want) {
		t.Errorf("after MaxTasks 4 → 2: alice keeps %v, want %v", got, want)
	}
	maxBytes.Store(25) // 20 + 10 no longer fit
	close(release)
	mustWait(t, e, "alice", tk.ID)
	if got, want := finishedLRU(e, "alice"), []string{tk.ID}; !slices.Equal(got, want) {
		t.Errorf("after MaxResultBytes 100 → 25: alice keeps %v, want %v", got, want)
	}
	mustGet(t, e, "bob", bob, "after alice's limits were lowered")
	if s := e.Stats(); s.Tasks != 2 || s.ResultBytes != 20 {
		t.Errorf("stats %+v: want 2 tasks of 20 bytes", s)
	}
}

func TestStatusCounts(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	release := make(chan struct{})
	if _, err := e.Submit(context.Background(), "a", SubmitOptions{}, func(ctx context.Context, _ *Run) Outcome {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return Outcome{}
	}); err != nil {
		t.Fatal(err)
	}
	done, err := e.Submit(context.Background(), "b", SubmitOptions{}, func(context.Context, *Run) Outcome { return Outcome{Failed: true} })
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Wait(context.Background(), "b", done.ID); err != nil {
		t.Fatal(err)
	}
	got := e.StatusCounts()
	if got[StatusWorking] != 1 || got[StatusFailed] != 1 || got[StatusCompleted] != 0 || len(got) != 5 {
		t.Errorf("StatusCounts = %v, want 1 working, 1 failed, every status present", got)
	}
	close(release)
}
