package taskengine

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A task ended by the engine carries why in Err, the same in every view
// (watchers, Get), and no status message: the engine writes no client text.
func TestEngineEndedTaskErr(t *testing.T) {
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
			if v.Status != StatusCancelled || !errors.Is(v.Err, ErrCancelled) || v.StatusMessage != "" {
				t.Errorf("cancelled task: got %s, Err %v, message %q; want cancelled, ErrCancelled, no message", v.Status, v.Err, v.StatusMessage)
			}
		}

		// A work that ignores its context: the deadline alone ends the task.
		release := make(chan struct{})
		defer close(release)
		late := mustSubmit(t, e, "o", SubmitOptions{}, func(context.Context, *Run) Outcome { <-release; return Outcome{} })
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got, _ = e.Get("o", late.ID)
		if got.Status != StatusFailed || !errors.Is(got.Err, ErrDeadline) || got.StatusMessage != "" {
			t.Errorf("task past its run time: got %s, Err %v, message %q; want failed, ErrDeadline, no message", got.Status, got.Err, got.StatusMessage)
		}

		// The work's own error is the task's Err; a status message the
		// work set is kept.
		boom := errors.New("boom")
		failed := mustSubmit(t, e, "o", SubmitOptions{}, func(_ context.Context, r *Run) Outcome {
			r.SetStatusMessage("tried")
			return Outcome{Err: boom}
		})
		synctest.Wait()
		got, _ = e.Get("o", failed.ID)
		if got.Status != StatusFailed || got.Err != boom || got.StatusMessage != "tried" {
			t.Errorf("failed work: got %s, Err %v, message %q; want failed, boom, %q", got.Status, got.Err, got.StatusMessage, "tried")
		}
	})
}
