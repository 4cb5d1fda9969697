package taskengine

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// These tests run in a synctest bubble: time is fake and advances only
// when every goroutine of the bubble is blocked, and the bubble fails the
// test if any goroutine is left behind after Close.

func TestTTLExpiryOfFinishedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEngine(t, Config{})
		tk := mustSubmit(t, e, "alice", SubmitOptions{TTL: time.Minute}, returning(Outcome{Value: "v", Size: 7}))
		mustWait(t, e, "alice", tk.ID)

		time.Sleep(time.Minute - time.Nanosecond)
		if _, err := e.Get(context.Background(), "alice", tk.ID); err != nil {
			t.Fatalf("just before TTL: got %v, want the task", err)
		}
		if s := e.Stats(); s.Tasks != 1 || s.ResultBytes != 7 {
			t.Errorf("before TTL: stats %+v, want 1 task of 7 bytes", s)
		}
		time.Sleep(time.Nanosecond)
		if _, err := e.Get(context.Background(), "alice", tk.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("at TTL: Get got %v, want ErrNotFound", err)
		}
		if _, _, err := e.Wait(t.Context(), "alice", tk.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("at TTL: Wait got %v, want ErrNotFound", err)
		}
		if page, _, _ := e.List(context.Background(), "alice", "", 10); len(page) != 0 {
			t.Errorf("at TTL: List got %d tasks, want 0", len(page))
		}
		if s := e.Stats(); s.Tasks != 0 || s.ResultBytes != 0 {
			t.Errorf("at TTL: stats %+v, want empty", s)
		}
	})
}

func TestUnlimitedTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEngine(t, Config{MaxTTL: -1})
		tk := mustSubmit(t, e, "alice", SubmitOptions{TTL: -1}, returning(Outcome{}))
		if tk.TTL != 0 {
			t.Errorf("granted TTL %v, want 0 (unlimited)", tk.TTL)
		}
		mustWait(t, e, "alice", tk.ID)
		time.Sleep(10000 * time.Hour)
		if _, err := e.Get(context.Background(), "alice", tk.ID); err != nil {
			t.Errorf("after 10000h: got %v, want the task", err)
		}
	})
}

// A running task whose TTL passes fails at that instant (its work's
// deadline is min(MaxRunTime, TTL)), then behaves as unknown; its slot is
// held until the work returns.
func TestTTLPassesWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEngine(t, Config{MaxRunningPerOwner: 1})
		start := time.Now()
		tk := mustSubmit(t, e, "alice", SubmitOptions{TTL: time.Minute}, func(ctx context.Context, _ *Run) Outcome {
			time.Sleep(time.Hour) // ignores ctx, as a badly written tool might
			return Outcome{Value: "too late", Size: 1}
		})
		got, out, err := e.Wait(t.Context(), "alice", tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != time.Minute {
			t.Errorf("Wait returned after %v, want 1m", elapsed)
		}
		if got.Status != StatusFailed || !errors.Is(out.Err, ErrDeadline) || !errors.Is(got.Err, ErrDeadline) {
			t.Errorf("got %s, Outcome.Err %v, Task.Err %v; want failed with ErrDeadline", got.Status, out.Err, got.Err)
		}
		if _, err := e.Get(context.Background(), "alice", tk.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("after TTL: got %v, want ErrNotFound", err)
		}
		if _, err := e.Submit(context.Background(), "alice", SubmitOptions{}, returning(Outcome{})); !errors.Is(err, ErrOwnerLimit) {
			t.Errorf("while the expired task's work still runs: got %v, want ErrOwnerLimit", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if s := e.Stats(); s != (Stats{}) {
			t.Errorf("after the work returned: stats %+v, want empty", s)
		}
	})
}

func TestMaxRunTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEngine(t, Config{MaxRunTime: time.Minute})
		causes := make(chan error, 1)
		tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
			_, err := r.RequestInput(ctx, "never answered")
			causes <- err
			return Outcome{Err: err}
		})
		time.Sleep(time.Minute)
		synctest.Wait()
		if err := <-causes; !errors.Is(err, ErrDeadline) {
			t.Errorf("RequestInput at deadline: got %v, want ErrDeadline", err)
		}
		got, err := e.Get(context.Background(), "alice", tk.ID)
		if err != nil || got.Status != StatusFailed {
			t.Fatalf("after MaxRunTime: got %s, %v; want failed (kept for its TTL)", got.Status, err)
		}
		if want := tk.CreatedAt.Add(time.Minute); !got.LastUpdatedAt.Equal(want) {
			t.Errorf("LastUpdatedAt %v, want %v", got.LastUpdatedAt, want)
		}
		if p, _ := e.PendingInput(context.Background(), "alice", tk.ID); len(p) != 0 {
			t.Errorf("pending inputs after deadline: %v", p)
		}
	})
}

func TestTimestamps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestEngine(t, Config{})
		step := make(chan struct{})
		tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
			<-step
			r.SetProgress(1, 2, "half")
			<-step
			return Outcome{}
		})
		time.Sleep(3 * time.Second)
		step <- struct{}{}
		synctest.Wait()
		got, _ := e.Get(context.Background(), "alice", tk.ID)
		if want := tk.CreatedAt.Add(3 * time.Second); !got.LastUpdatedAt.Equal(want) || !got.CreatedAt.Equal(tk.CreatedAt) {
			t.Errorf("after progress: created %v updated %v, want %v and %v", got.CreatedAt, got.LastUpdatedAt, tk.CreatedAt, want)
		}
		if got.Progress != 1 || got.Total != 2 || got.StatusMessage != "half" {
			t.Errorf("progress: got %v/%v %q, want 1/2 half", got.Progress, got.Total, got.StatusMessage)
		}
		time.Sleep(2 * time.Second)
		step <- struct{}{}
		final, _ := mustWait(t, e, "alice", tk.ID)
		if want := tk.CreatedAt.Add(5 * time.Second); !final.LastUpdatedAt.Equal(want) {
			t.Errorf("at completion: updated %v, want %v", final.LastUpdatedAt, want)
		}
	})
}

// Close stops running work, waiting for it, and leaves no goroutine behind
// (the bubble would fail otherwise).
func TestCloseLeavesNoGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Half the tasks have no TTL and no run time limit: only Close ends them.
		e, err := New(Config{MaxTTL: -1, MaxRunTime: -1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			ttl := time.Duration(-1)
			if i%2 == 1 {
				ttl = time.Duration(i) * time.Second
			}
			tk := mustSubmit(t, e, "alice", SubmitOptions{TTL: ttl}, untilCancelled)
			go e.Wait(context.Background(), "alice", tk.ID)
			if i%2 == 0 {
				go func() {
					s, err := e.Watch(context.Background(), "alice", tk.ID)
					if err == nil {
						for range s.C() {
						}
					}
				}()
			}
		}
		time.Sleep(5 * time.Second) // some tasks pass their TTL
		synctest.Wait()
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if s := e.Stats(); s.Running != 0 {
			t.Errorf("after Close: %d running", s.Running)
		}
	})
}
