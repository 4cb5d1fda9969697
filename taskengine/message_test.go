package taskengine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The status message of a task ended by the engine is the same in every
// view (watchers, Get) and names no package: it reaches clients.
func TestEngineStatusMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEngine(t, Config{MaxRunTime: time.Second})
		park := func(ctx context.Context, _ *Run) Outcome { <-ctx.Done(); return Outcome{} }

		cancelled := mustSubmit(t, e, "o", SubmitOptions{}, park)
		sub, err := e.Watch("o", cancelled.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Cancel("o", cancelled.ID); err != nil {
			t.Fatal(err)
		}
		var last Task
		for s := range sub.C() {
			last = s
		}
		got, _ := e.Get("o", cancelled.ID)
		for _, v := range []Task{last, got} {
			if v.Status != StatusCancelled || v.StatusMessage != "cancelled by the requestor" {
				t.Errorf("cancelled task: got %s %q, want cancelled %q", v.Status, v.StatusMessage, "cancelled by the requestor")
			}
		}

		// A work that ignores its context: the deadline alone ends the task.
		release := make(chan struct{})
		defer close(release)
		late := mustSubmit(t, e, "o", SubmitOptions{}, func(context.Context, *Run) Outcome { <-release; return Outcome{} })
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got, _ = e.Get("o", late.ID)
		if got.Status != StatusFailed || got.StatusMessage != "run time limit reached" {
			t.Errorf("task past its run time: got %s %q, want failed %q", got.Status, got.StatusMessage, "run time limit reached")
		}
	})
}
