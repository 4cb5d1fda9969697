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

// checkInvariants verifies that the store's indexes agree with each other.
func (e *Engine) checkInvariants() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var bytes int64
	for _, k := range e.finished.Keys() {
		t, _ := e.finished.Peek(k)
		if t.isRunning {
			return fmt.Errorf("running task %s in the finished LRU", k.id)
		}
		if !t.status.Terminal() {
			return fmt.Errorf("finished task %s has status %s", k.id, t.status)
		}
		bytes += t.outcome.Size
	}
	if bytes != e.bytes {
		return fmt.Errorf("result bytes: counted %d, sum of finished %d", e.bytes, bytes)
	}
	if e.bytes > e.cfg.MaxResultBytes {
		return fmt.Errorf("result bytes %d > MaxResultBytes %d", e.bytes, e.cfg.MaxResultBytes)
	}
	if n := len(e.running) + e.finished.Len(); n > e.cfg.MaxTasks {
		return fmt.Errorf("%d tasks retained, MaxTasks %d", n, e.cfg.MaxTasks)
	}
	indexed := 0
	for owner, oi := range e.owners {
		running := 0
		if len(oi.tasks) == 0 && oi.running == 0 {
			return fmt.Errorf("owner %q: empty index kept", owner)
		}
		if !slices.IsSortedFunc(oi.tasks, func(a, b *task) int { return bySeq(a, b.seq) }) {
			return fmt.Errorf("owner %q: tasks not in creation order", owner)
		}
		for _, t := range oi.tasks {
			if t.key.owner != owner {
				return fmt.Errorf("owner %q indexes a task of %q", owner, t.key.owner)
			}
			_, inRunning := e.running[t.key]
			inFinished := e.finished.Contains(t.key)
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
	}
	if n := len(e.running) + e.finished.Len(); indexed != n {
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
	task, err := e.Submit(owner, opts, w)
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
