package taskengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// newTestEngine returns an engine that is closed, and checked, when the
// test ends.
func newTestEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := e.checkInvariants(); err != nil {
			t.Errorf("before Close: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := e.checkInvariants(); err != nil {
			t.Errorf("after Close: %v", err)
		}
		if s := e.Stats(); s.Running != 0 {
			t.Errorf("after Close: Stats().Running = %d, want 0", s.Running)
		}
	})
	return e
}

// checkInvariants verifies that the store's indexes agree with each other
// and that every bound holds, the engine's and each owner's.
func (e *Engine) checkInvariants() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var bytes int64
	finished, indexed := 0, 0
	for owner, oi := range e.owners {
		running := 0
		var ownBytes int64
		if len(oi.tasks) == 0 && oi.running == 0 {
			return fmt.Errorf("owner %q: empty index kept", owner)
		}
		if !slices.IsSortedFunc(oi.tasks, func(a, b *task) int { return bySeq(a, b.seq) }) {
			return fmt.Errorf("owner %q: tasks not in creation order", owner)
		}
		for _, id := range oi.finished.Keys() {
			t, _ := oi.finished.Peek(id)
			switch {
			case t.key.owner != owner || t.key.id != id:
				return fmt.Errorf("owner %q: finished LRU holds %q of %q under %q", owner, t.key.id, t.key.owner, id)
			case t.isRunning:
				return fmt.Errorf("running task %s in the finished LRU", id)
			case !t.status.Terminal():
				return fmt.Errorf("finished task %s has status %s", id, t.status)
			}
			ownBytes += t.outcome.Size
		}
		for _, t := range oi.tasks {
			if t.key.owner != owner {
				return fmt.Errorf("owner %q indexes a task of %q", owner, t.key.owner)
			}
			_, inRunning := e.running[t.key]
			inFinished := oi.finished.Contains(t.key.id)
			if inRunning == inFinished {
				return fmt.Errorf("task %s: in running %v, in finished %v", t.key.id, inRunning, inFinished)
			}
			if inRunning {
				running++
			}
			indexed++
		}
		if running != oi.running {
			return fmt.Errorf("owner %q: running count %d, %d running tasks indexed", owner, oi.running, running)
		}
		if ownBytes != oi.bytes {
			return fmt.Errorf("owner %q: result bytes counted %d, sum of finished %d", owner, oi.bytes, ownBytes)
		}
		lim := e.cfg.ownerLimits(owner)
		if oi.bytes > lim.MaxResultBytes {
			return fmt.Errorf("owner %q: result bytes %d > its limit %d", owner, oi.bytes, lim.MaxResultBytes)
		}
		if len(oi.tasks) > lim.MaxTasks {
			return fmt.Errorf("owner %q: %d tasks retained > its limit %d", owner, len(oi.tasks), lim.MaxTasks)
		}
		if oi.running > lim.MaxRunning {
			return fmt.Errorf("owner %q: %d tasks running > its limit %d", owner, oi.running, lim.MaxRunning)
		}
		finished += oi.finished.Len()
		bytes += oi.bytes
	}
	if finished != e.finished {
		return fmt.Errorf("finished tasks: counted %d, %d in owners' LRUs", e.finished, finished)
	}
	if bytes != e.bytes {
		return fmt.Errorf("result bytes: counted %d, sum of finished %d", e.bytes, bytes)
	}
	if e.bytes > e.cfg.MaxResultBytes {
		return fmt.Errorf("result bytes %d > MaxResultBytes %d", e.bytes, e.cfg.MaxResultBytes)
	}
	if n := len(e.running) + e.finished; n > e.cfg.MaxTasks {
		return fmt.Errorf("%d tasks retained, MaxTasks %d", n, e.cfg.MaxTasks)
	}
	if n := len(e.running) + e.finished; indexed != n {
		return fmt.Errorf("%d tasks in owner indexes, %d in the store", indexed, n)
	}
	for i, t := range e.expiry {
		if t.heapIdx != i {
			return fmt.Errorf("expiry heap: task at %d has index %d", i, t.heapIdx)
		}
	}
	return nil
}

// returning is work that returns out at once.
func returning(out Outcome) Work {
	return func(context.Context, *Run) Outcome { return out }
}

// untilCancelled is work that blocks until its context ends, then returns
// a value, as a slow tool would.
func untilCancelled(ctx context.Context, _ *Run) Outcome {
	<-ctx.Done()
	return Outcome{Value: "late", Size: 1}
}

// gated is work that returns out when release is closed.
func gated(release <-chan struct{}, out Outcome) Work {
	return func(ctx context.Context, _ *Run) Outcome {
		select {
		case <-release:
			return out
		case <-ctx.Done():
			return Outcome{Err: context.Cause(ctx)}
		}
	}
}

func mustSubmit(t testing.TB, e *Engine, owner string, opts SubmitOptions, w Work) Task {
	t.Helper()
	task, err := e.Submit(context.Background(), owner, opts, w)
	if err != nil {
		t.Fatalf("Submit(%q): %v", owner, err)
	}
	return task
}

func mustWait(t testing.TB, e *Engine, owner, id string) (Task, Outcome) {
	t.Helper()
	task, out, err := e.Wait(context.Background(), owner, id)
	if err != nil {
		t.Fatalf("Wait(%q, %s): %v", owner, id, err)
	}
	return task, out
}

func wantErr(t testing.TB, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Errorf("%s: got error %v, want %v", what, got, want)
	}
}
