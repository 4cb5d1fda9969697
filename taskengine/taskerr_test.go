package taskengine

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A task the engine ends says why in Err, the same in every view (the last
// snapshot a watcher gets, Get, Wait's Outcome), and keeps the status
// message its work set: the engine writes no client text of its own.
func TestEngineEndedTaskErr(t *testing.T) {
	tests := []struct {
		name       string
		ignoresCtx bool                             // the work never looks at its context
		end        func(e *Engine, id string) error // what ends the task
		wantStatus Status
		wantErr    error
	}{
		{"cancelled", false, func(e *Engine, id string) error {
			_, err := e.Cancel(context.Background(), "o", id)
			return err
		}, StatusCancelled, ErrCancelled},
		// The deadline alone ends the task: the work has not noticed.
		{"run time limit", true, func(*Engine, string) error {
			time.Sleep(time.Minute)
			return nil
		}, StatusFailed, ErrDeadline},
		{"engine closed", false, func(e *Engine, _ string) error { return e.Close() }, StatusCancelled, ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newTestEngine(t, Config{MaxRunTime: time.Minute})
				release := make(chan struct{})
				defer close(release) // before the engine's Close in cleanup
				tk := mustSubmit(t, e, "o", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
					r.SetStatusMessage("halfway")
					if tt.ignoresCtx {
						<-release
					} else {
						<-ctx.Done()
					}
					return Outcome{Value: "late"}
				})
				synctest.Wait() // the work has set its message
				sub, err := e.Watch(context.Background(), "o", tk.ID)
				if err != nil {
					t.Fatal(err)
				}
				if err := tt.end(e, tk.ID); err != nil {
					t.Fatalf("ending the task: %v", err)
				}
				var last Task
				for s := range sub.C() {
					last = s
				}
				views := map[string]Task{"watcher": last}
				var out Outcome
				if tt.wantErr != ErrClosed { // after Close, Get and Wait say ErrClosed
					if views["Get"], err = e.Get(context.Background(), "o", tk.ID); err != nil {
						t.Fatalf("Get: %v", err)
					}
					if views["Wait"], out, err = e.Wait(t.Context(), "o", tk.ID); err != nil {
						t.Fatalf("Wait: %v", err)
					}
					if out.Err != views["Wait"].Err {
						t.Errorf("Wait: Outcome.Err %v, Task.Err %v; want the same", out.Err, views["Wait"].Err)
					}
				}
				for view, v := range views {
					if v.Status != tt.wantStatus || !errors.Is(v.Err, tt.wantErr) || v.StatusMessage != "halfway" {
						t.Errorf("%s: got %s, Err %v, message %q; want %s, Err %v, message %q (the work's)",
							view, v.Status, v.Err, v.StatusMessage, tt.wantStatus, tt.wantErr, "halfway")
					}
				}
			})
		})
	}
}

// ErrDeadline is also a context.DeadlineExceeded, for callers that only
// know the context package.
func TestErrDeadlineIsDeadlineExceeded(t *testing.T) {
	if !errors.Is(ErrDeadline, context.DeadlineExceeded) {
		t.Errorf("errors.Is(ErrDeadline, context.DeadlineExceeded) = false, want true")
	}
}
