package taskengine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var sharedKey = []byte("0123456789abcdef0123456789abcdef")

// replicas returns n engines sharing one in-memory store, named r0, r1, …
func replicas(t *testing.T, m *memStore, n int) []*Engine {
	t.Helper()
	es := make([]*Engine, n)
	for i := range es {
		s := newMemShared(m, string(rune('A'+i)))
		es[i] = newTestEngine(t, Config{Shared: s, Peers: s, Codec: jsonCodec{}, SharedKey: sharedKey})
	}
	return es
}

// blocking is work that returns "done" once release is closed, or its
// context's cause when the task ends first (sent on ended).
func blocking(release <-chan struct{}, ended chan<- error) Work {
	return func(ctx context.Context, run *Run) Outcome {
		select {
		case <-release:
			return Outcome{Value: "done", Size: 4}
		case <-ctx.Done():
			ended <- context.Cause(ctx)
			return Outcome{Err: context.Cause(ctx)}
		}
	}
}

func TestReplicasAnswerForEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		es := replicas(t, newMemStore(), 3)
		a, b, c := es[0], es[1], es[2]
		ended := make(chan error, 1)
		task, err := a.Submit(context.Background(), "alice", SubmitOptions{Meta: "tool-x"}, blocking(make(chan struct{}), ended))
		if err != nil {
			t.Fatal(err)
		}

		got, err := b.Get(context.Background(), "alice", task.ID)
		if err != nil || got.Status != StatusWorking || got.Meta != "tool-x" || got.ID != task.ID {
			t.Fatalf("B: Get = %+v, %v; want working with meta tool-x", got, err)
		}
		if _, err := b.Get(context.Background(), "mallory", task.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("B: another owner's Get = %v, want ErrNotFound", err)
		}
		if _, err := b.Cancel(context.Background(), "mallory", task.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("B: another owner's Cancel = %v, want ErrNotFound", err)
		}

		// Cancel on C stops the work on A, and answers cancelled.
		got, err = c.Cancel(context.Background(), "alice", task.ID)
		if err != nil || got.Status != StatusCancelled {
			t.Fatalf("C: Cancel = %+v, %v; want cancelled", got, err)
		}
		if cause := <-ended; !errors.Is(cause, ErrCancelled) {
			t.Errorf("A: the work's context ended with %v, want ErrCancelled", cause)
		}
		got, out, err := b.Wait(t.Context(), "alice", task.ID)
		if err != nil || got.Status != StatusCancelled || !errors.Is(out.Err, ErrCancelled) || !errors.Is(got.Err, ErrCancelled) {
			t.Errorf("B: Wait = %+v, %+v, %v; want cancelled with ErrCancelled", got, out, err)
		}
		if _, err := c.Cancel(context.Background(), "alice", task.ID); !errors.Is(err, ErrTerminal) {
			t.Errorf("C: second Cancel = %v, want ErrTerminal", err)
		}
	})
}

func TestReplicaWaitWakesWhenRunnerFinishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		es := replicas(t, newMemStore(), 2)
		a, b := es[0], es[1]
		release := make(chan struct{})
		task, err := a.Submit(context.Background(), "alice", SubmitOptions{}, blocking(release, make(chan error, 1)))
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			t   Task
			out Outcome
			err error
		}
		waited := make(chan result, 1)
		go func() {
			t, out, err := b.Wait(context.Background(), "alice", task.ID)
			waited <- result{t, out, err}
		}()
		synctest.Wait() // B is blocked on the record
		select {
		case r := <-waited:
			t.Fatalf("B: Wait returned before the task ended: %+v", r)
		default:
		}
		close(release)
		r := <-waited
		if r.err != nil || r.t.Status != StatusCompleted || r.out.Value != "done" || r.out.Size != 4 {
			t.Fatalf("B: Wait = %+v; want completed with \"done\" (4 bytes)", r)
		}
	})
}

func TestReplicaLossFailsItsTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		es := replicas(t, m, 3)
		a, b, c := es[0], es[1], es[2]
		ended := make(chan error, 1)
		task, err := a.Submit(context.Background(), "alice", SubmitOptions{}, blocking(make(chan struct{}), ended))
		if err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() {
			got, _, err := c.Wait(context.Background(), "alice", task.ID)
			if err == nil && (got.Status != StatusFailed || !errors.Is(got.Err, ErrReplicaLost)) {
				err = errors.New("C: Wait ended with " + string(got.Status))
			}
			waited <- err
		}()
		synctest.Wait()

		m.kill("A")
		got, err := b.Get(context.Background(), "alice", task.ID)
		if err != nil || got.Status != StatusFailed || !errors.Is(got.Err, ErrReplicaLost) {
			t.Fatalf("B: Get after A died = %+v, %v; want failed with ErrReplicaLost", got, err)
		}
		if err := <-waited; err != nil { // at its next liveness check
			t.Fatal(err)
		}
		if _, err := b.Cancel(context.Background(), "alice", task.ID); !errors.Is(err, ErrTerminal) {
			t.Errorf("B: Cancel of a lost task = %v, want ErrTerminal", err)
		}

		// A was only cut off: its next write meets the lost record and
		// it stops the work itself, without overwriting what B wrote.
		run := a.running[taskKey{"alice", task.ID}]
		(&Run{e: a, t: run}).SetStatusMessage("still here")
		if cause := <-ended; !errors.Is(cause, ErrReplicaLost) {
			t.Errorf("A: the work's context ended with %v, want ErrReplicaLost", cause)
		}
		synctest.Wait()
		got, err = c.Get(context.Background(), "alice", task.ID)
		if err != nil || got.StatusMessage == "still here" || !errors.Is(got.Err, ErrReplicaLost) {
			t.Errorf("C: Get = %+v, %v; want the lost record unchanged", got, err)
		}
	})
}

func TestReplicaAnswersInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		es := replicas(t, newMemStore(), 2)
		a, b := es[0], es[1]
		task, err := a.Submit(context.Background(), "alice", SubmitOptions{}, func(ctx context.Context, run *Run) Outcome {
			v, err := run.RequestInput(ctx, "proceed?")
			if err != nil {
				return Outcome{Err: err}
			}
			return Outcome{Value: v}
		})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := b.Watch(context.Background(), "alice", task.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Stop()
		for s := range sub.C() {
			if s.Status == StatusInputRequired {
				break
			}
		}
		reqs, err := b.PendingInput(context.Background(), "alice", task.ID)
		if err != nil || len(reqs) != 1 || reqs[0].Payload != "proceed?" {
			t.Fatalf("B: PendingInput = %+v, %v; want the one question", reqs, err)
		}
		if err := b.Answer(context.Background(), "alice", task.ID, "nope", "x"); !errors.Is(err, ErrNoSuchInput) {
			t.Errorf("B: Answer to an unknown request = %v, want ErrNoSuchInput", err)
		}
		if err := b.Answer(context.Background(), "alice", task.ID, reqs[0].ID, "yes"); err != nil {
			t.Fatal(err)
		}
		var last Task
		for s := range sub.C() { // closed after the terminal snapshot
			last = s
		}
		if last.Status != StatusCompleted {
			t.Errorf("B: the subscription's last snapshot is %s, want completed", last.Status)
		}
		_, out, err := b.Wait(t.Context(), "alice", task.ID)
		if err != nil || out.Value != "yes" {
			t.Errorf("B: Wait = %+v, %v; want the answer as the value", out, err)
		}
	})
}

func TestReplicaListPagesAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		es := replicas(t, newMemStore(), 3)
		done := func(context.Context, *Run) Outcome { return Outcome{Value: "ok"} }
		var want []string
		for i := range 5 {
			task, err := es[i%2].Submit(context.Background(), "alice", SubmitOptions{}, done)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, task.ID)
			time.Sleep(time.Millisecond) // fake clock: distinct creation times
		}
		if _, err := es[0].Submit(context.Background(), "bob", SubmitOptions{}, done); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		var got []string
		cursor := ""
		for page := 0; ; page++ {
			ts, next, err := es[page%3].List(context.Background(), "alice", cursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range ts {
				got = append(got, tk.ID)
			}
			if next == "" {
				break
			}
			if _, _, err := es[2].List(context.Background(), "bob", next, 2); !errors.Is(err, ErrBadCursor) {
				t.Errorf("another owner's use of a cursor = %v, want ErrBadCursor", err)
			}
			cursor = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages over three replicas = %v, want %v (creation order, each once)", got, want)
		}
	})
}

func TestReplicaRestartKeepsFinishedResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		a, err := New(Config{Shared: newMemShared(m, "A"), Peers: newMemShared(m, "A"), Codec: jsonCodec{}, SharedKey: sharedKey})
		if err != nil {
			t.Fatal(err)
		}
		finished, _ := a.Submit(context.Background(), "alice", SubmitOptions{}, func(context.Context, *Run) Outcome { return Outcome{Value: "kept"} })
		if _, _, err := a.Wait(t.Context(), "alice", finished.ID); err != nil {
			t.Fatal(err)
		}
		// Written before Wait could return: a crash now loses nothing.
		if r, _, err := newMemShared(m, "probe").Load(t.Context(), "alice", finished.ID, true); err != nil || r.Status != StatusCompleted {
			t.Fatalf("the record when Wait returned: %+v, %v; want completed", r, err)
		}
		running, _ := a.Submit(context.Background(), "alice", SubmitOptions{}, blocking(make(chan struct{}), make(chan error, 1)))
		a.Close() // every record is written before Close returns
		m.kill("A")

		a2 := newTestEngine(t, Config{Shared: newMemShared(m, "A2"), Peers: newMemShared(m, "A2"), Codec: jsonCodec{}, SharedKey: sharedKey})
		got, out, err := a2.Wait(t.Context(), "alice", finished.ID)
		if err != nil || got.Status != StatusCompleted || out.Value != "kept" {
			t.Errorf("after restart: Wait(finished) = %+v, %+v, %v; want completed, \"kept\"", got, out, err)
		}
		got, err = a2.Get(context.Background(), "alice", running.ID)
		if err != nil || got.Status != StatusCancelled || !errors.Is(got.Err, ErrClosed) {
			t.Errorf("after restart: Get(running at shutdown) = %+v, %v; want cancelled by ErrClosed", got, err)
		}
	})
}

// stalledShared is a store that answers nothing: every call waits for its
// context to end.
type stalledShared struct {
	*memShared
	calls chan string // each call's method, as it starts waiting
}

func (s stalledShared) stall(ctx context.Context, op string) error {
	s.calls <- op
	<-ctx.Done()
	return ctx.Err()
}

func (s stalledShared) Create(ctx context.Context, _ *Record) (uint64, error) {
	return 0, s.stall(ctx, "create")
}

func (s stalledShared) Load(ctx context.Context, _, _ string, _ bool) (*Record, uint64, error) {
	return nil, 0, s.stall(ctx, "load")
}

func (s stalledShared) List(ctx context.Context, _ string, _ int) ([]*Record, error) {
	return nil, s.stall(ctx, "list")
}

// TestRemotePathsTakeTheCallersContext: every engine method that may reach
// the shared store ends with its caller's context, returning that
// context's error (not a store failure) and keeping nothing; without a
// caller's deadline, SharedTimeout caps the call and the error is
// ErrShared.
func TestRemotePathsTakeTheCallersContext(t *testing.T) {
	m := newMemStore()
	peer := newMemShared(m, "A")
	st := stalledShared{memShared: peer, calls: make(chan string, 1)}
	e := newTestEngine(t, Config{Shared: st, Peers: peer, Codec: jsonCodec{}, SharedKey: sharedKey})
	calls := map[string]func(ctx context.Context) error{
		"Submit": func(ctx context.Context) error {
			_, err := e.Submit(ctx, "alice", SubmitOptions{}, func(context.Context, *Run) Outcome { return Outcome{} })
			return err
		},
		"Get":          func(ctx context.Context) error { _, err := e.Get(ctx, "alice", "elsewhere"); return err },
		"Cancel":       func(ctx context.Context) error { _, err := e.Cancel(ctx, "alice", "elsewhere"); return err },
		"PendingInput": func(ctx context.Context) error { _, err := e.PendingInput(ctx, "alice", "elsewhere"); return err },
		"Answer":       func(ctx context.Context) error { return e.Answer(ctx, "alice", "elsewhere", "q", "a") },
		"Watch":        func(ctx context.Context) error { _, err := e.Watch(ctx, "alice", "elsewhere"); return err },
		"List":         func(ctx context.Context) error { _, _, err := e.List(ctx, "alice", "", 0); return err },
		"Wait":         func(ctx context.Context) error { _, _, err := e.Wait(ctx, "alice", "elsewhere"); return err },
	}
	for name, call := range calls {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- call(ctx) }()
		<-st.calls // the call is waiting on the store
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, ErrShared) {
			t.Errorf("%s with its context cancelled = %v, want context.Canceled", name, err)
		}
	}
	if s := e.Stats(); s.Tasks != 0 || s.Running != 0 {
		t.Errorf("after a Submit whose caller left: %+v, want nothing kept", s)
	}

	capped := newTestEngine(t, Config{Shared: st, Peers: peer, Codec: jsonCodec{}, SharedKey: sharedKey, SharedTimeout: time.Millisecond})
	go func() { <-st.calls }()
	if _, err := capped.Get(t.Context(), "alice", "elsewhere"); !errors.Is(err, ErrShared) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get past SharedTimeout = %v, want ErrShared wrapping the deadline", err)
	}
}

// failingShared refuses every write.
type failingShared struct{ *memShared }

func (failingShared) Create(context.Context, *Record) (uint64, error) {
	return 0, errors.New("store unreachable")
}

func TestReplicaSubmitFailsClosedWhenTheStoreFails(t *testing.T) {
	a := newMemShared(newMemStore(), "A")
	e := newTestEngine(t, Config{Shared: failingShared{a}, Peers: a, Codec: jsonCodec{}, SharedKey: sharedKey})
	started := false
	_, err := e.Submit(context.Background(), "alice", SubmitOptions{}, func(context.Context, *Run) Outcome { started = true; return Outcome{} })
	if !errors.Is(err, ErrShared) {
		t.Fatalf("Submit = %v, want ErrShared", err)
	}
	if s := e.Stats(); s.Tasks != 0 || s.Running != 0 || s.Owners != 0 || started {
		t.Errorf("after a failed Submit: %+v, work started %v; want nothing kept or run", s, started)
	}
}

// TestReplicaWriteWhoseAnswerIsLost: a write the store applied but whose
// answer was lost conflicts when it is retried; the runner reads its own
// record back and writes again, and the task is not taken for lost.
func TestReplicaWriteWhoseAnswerIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		es := replicas(t, m, 2)
		lost := 0
		m.fail = func(r *Record) (error, error) {
			if r.StatusMessage == "halfway" && lost == 0 {
				lost++
				return nil, errors.New("timeout: no answer")
			}
			return nil, nil
		}
		release := make(chan struct{})
		task, err := es[0].Submit(context.Background(), "alice", SubmitOptions{}, func(ctx context.Context, run *Run) Outcome {
			run.SetStatusMessage("halfway")
			<-release
			return Outcome{Value: "v"}
		})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the write was applied, its answer lost, and resolved
		close(release)
		for i, e := range es {
			got, out, err := e.Wait(t.Context(), "alice", task.ID)
			if err != nil || got.Status != StatusCompleted || out.Value != "v" {
				t.Errorf("replica %d: Wait = %+v, %+v, %v; want completed with v", i, got, out, err)
			}
		}
		if lost != 1 {
			t.Errorf("answers lost: %d, want 1", lost)
		}
	})
}

// TestReplicaFinalWriteIsRetried: while the store refuses writes, the
// runner keeps trying; the task's end is never dropped, and a waiter on
// another replica sees it once the store is back.
func TestReplicaFinalWriteIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		es := replicas(t, m, 2)
		refused := 0
		m.fail = func(r *Record) (error, error) {
			if r.Status.Terminal() && refused < 20 {
				refused++
				return errors.New("store unavailable"), nil
			}
			return nil, nil
		}
		task, err := es[0].Submit(context.Background(), "alice", SubmitOptions{}, func(context.Context, *Run) Outcome { return Outcome{Value: "v"} })
		if err != nil {
			t.Fatal(err)
		}
		got, out, err := es[1].Wait(t.Context(), "alice", task.ID)
		if err != nil || got.Status != StatusCompleted || out.Value != "v" {
			t.Errorf("B: Wait = %+v, %+v, %v; want completed with v", got, out, err)
		}
		if refused != 20 {
			t.Errorf("writes refused: %d, want 20 before the store came back", refused)
		}
	})
}

// TestReplicaTaskItsRunnerNoLongerHolds: a live record whose runner holds
// its lease but not the task (its create was never confirmed, or it was
// forgotten before its end was written) is failed, never left working;
// cancelling or answering it does not reach a task that is not there.
func TestReplicaTaskItsRunnerNoLongerHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		es := replicas(t, m, 2)
		a := newMemShared(m, "A")
		for _, id := range []string{"ORPHANAAAAAAAAAAAAAAAAAAAA", "ORPHANBBBBBBBBBBBBBBBBBBBB"} {
			if _, err := a.Create(t.Context(), &Record{ID: id, Owner: "alice", Runner: "A", Status: StatusWorking, CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := es[1].Cancel(context.Background(), "alice", "ORPHANAAAAAAAAAAAAAAAAAAAA")
		if !errors.Is(err, ErrTerminal) || got.Status != StatusFailed || !errors.Is(got.Err, ErrReplicaLost) {
			t.Errorf("B: Cancel = %+v, %v; want ErrTerminal on a task failed as lost", got, err)
		}
		if err := es[1].Answer(context.Background(), "alice", "ORPHANBBBBBBBBBBBBBBBBBBBB", "1", "x"); !errors.Is(err, ErrNoSuchInput) {
			t.Errorf("B: Answer = %v, want ErrNoSuchInput", err)
		}
		got, err = es[0].Get(context.Background(), "alice", "ORPHANBBBBBBBBBBBBBBBBBBBB") // the runner itself
		if err != nil || got.Status != StatusFailed {
			t.Errorf("A: Get of its own orphan = %+v, %v; want failed", got, err)
		}
	})
}

// TestReplicaEvictionDeletesTheRecord: an owner's bounds hold in the store
// too: a task evicted to make room is gone on every replica.
func TestReplicaEvictionDeletesTheRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		a := newTestEngine(t, Config{Shared: newMemShared(m, "A"), Peers: newMemShared(m, "A"), Codec: jsonCodec{}, SharedKey: sharedKey, MaxTasksPerOwner: 1})
		b := newTestEngine(t, Config{Shared: newMemShared(m, "B"), Peers: newMemShared(m, "B"), Codec: jsonCodec{}, SharedKey: sharedKey})
		done := func(context.Context, *Run) Outcome { return Outcome{Value: "v"} }
		first, _ := a.Submit(context.Background(), "alice", SubmitOptions{}, done)
		synctest.Wait()
		if _, err := a.Submit(context.Background(), "alice", SubmitOptions{}, done); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, err := b.Get(context.Background(), "alice", first.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("B: Get of the evicted task = %v, want ErrNotFound", err)
		}
		if m.deletes != 1 {
			t.Errorf("records deleted: %d, want 1", m.deletes)
		}
	})
}

// TestReplicaWatchesAreBounded: subscriptions to another replica's task
// are bounded per task, as a local task's are.
func TestReplicaWatchesAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		a := newTestEngine(t, Config{Shared: newMemShared(m, "A"), Peers: newMemShared(m, "A"), Codec: jsonCodec{}, SharedKey: sharedKey})
		b := newTestEngine(t, Config{Shared: newMemShared(m, "B"), Peers: newMemShared(m, "B"), Codec: jsonCodec{}, SharedKey: sharedKey, MaxWatchersPerTask: 2})
		task, _ := a.Submit(context.Background(), "alice", SubmitOptions{}, blocking(make(chan struct{}), make(chan error, 1)))
		s1, err1 := b.Watch(context.Background(), "alice", task.ID)
		_, err2 := b.Watch(context.Background(), "alice", task.ID)
		if err1 != nil || err2 != nil {
			t.Fatalf("two watches: %v, %v", err1, err2)
		}
		if _, err := b.Watch(context.Background(), "alice", task.ID); !errors.Is(err, ErrTooManyWatchers) {
			t.Errorf("third watch = %v, want ErrTooManyWatchers", err)
		}
		s1.Stop()
		synctest.Wait() // its goroutine has ended
		if s, err := b.Watch(context.Background(), "alice", task.ID); err != nil {
			t.Errorf("a watch after one stopped = %v, want room", err)
		} else {
			s.Stop()
		}
	})
}

// TestReplicaLargeOutcome: a store may leave large outcomes out of what it
// reads; Get does without it, Wait reads it once.
func TestReplicaLargeOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		es := replicas(t, newMemStore(), 2)
		big := strings.Repeat("x", 10*memInline)
		task, _ := es[0].Submit(context.Background(), "alice", SubmitOptions{}, func(context.Context, *Run) Outcome { return Outcome{Value: big, Size: int64(len(big))} })
		synctest.Wait()
		if got, err := es[1].Get(context.Background(), "alice", task.ID); err != nil || got.Status != StatusCompleted {
			t.Errorf("B: Get = %+v, %v", got, err)
		}
		if _, out, err := es[1].Wait(t.Context(), "alice", task.ID); err != nil || out.Value != big {
			t.Errorf("B: Wait: %v, the large value read back: %v", err, out.Value == big)
		}
	})
}

// TestReplicaCancelAcknowledgedOnceWritten: a cancel is answered only once
// its record is written, so every replica reads the state it acknowledged;
// one whose write the store refuses is an error, and asked again, written.
func TestReplicaCancelAcknowledgedOnceWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		es := replicas(t, m, 2)
		refuse := 1
		m.fail = func(r *Record) (error, error) {
			if r.Status == StatusCancelled && refuse > 0 {
				refuse--
				return errors.New("store unavailable"), nil
			}
			return nil, nil
		}
		ended := make(chan error, 2)
		a := mustSubmit(t, es[0], "alice", SubmitOptions{}, blocking(make(chan struct{}), ended))
		got, err := es[0].Cancel(t.Context(), "alice", a.ID)
		if err != nil || got.Status != StatusCancelled {
			t.Fatalf("A: Cancel = %+v, %v; want cancelled after one refused write", got, err)
		}
		if got, err := es[1].Get(t.Context(), "alice", a.ID); err != nil || got.Status != StatusCancelled {
			t.Errorf("B: Get after the acknowledged cancel = %+v, %v; want cancelled", got.Status, err)
		}

		// The store refuses every write for longer than the request may
		// wait: the cancel is an error, not an acknowledgment.
		refuse = 1 << 30
		b := mustSubmit(t, es[0], "alice", SubmitOptions{}, blocking(make(chan struct{}), ended))
		if _, err := es[0].Cancel(t.Context(), "alice", b.ID); !errors.Is(err, ErrShared) {
			t.Errorf("A: Cancel with the store refusing writes = %v, want ErrShared", err)
		}
		if got, err := es[1].Get(t.Context(), "alice", b.ID); err != nil || got.Status != StatusWorking {
			t.Errorf("B: Get after the failed cancel = %+v, %v; want working (as stored)", got.Status, err)
		}
		refuse = 0
		got, err = es[0].Cancel(t.Context(), "alice", b.ID)
		if err != nil || got.Status != StatusCancelled {
			t.Errorf("A: Cancel asked again = %+v, %v; want cancelled", got.Status, err)
		}
		if got, err := es[1].Get(t.Context(), "alice", b.ID); err != nil || got.Status != StatusCancelled {
			t.Errorf("B: Get = %+v, %v; want cancelled", got.Status, err)
		}
	})
}

// TestReplicaPausedRunnerLearnsItLost: a runner whose lease lapsed (a
// pause) while another replica declared its task lost stops the task's
// work as soon as its lease is back, and answers failed, as the store does,
// from every method.
func TestReplicaPausedRunnerLearnsItLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		es := replicas(t, m, 2)
		ended := make(chan error, 1)
		task := mustSubmit(t, es[0], "alice", SubmitOptions{}, blocking(make(chan struct{}), ended))
		m.lapse("A")
		if got, err := es[1].Get(t.Context(), "alice", task.ID); err != nil || got.Status != StatusFailed {
			t.Fatalf("B: Get while A's lease is lapsed = %+v, %v; want failed", got.Status, err)
		}
		m.renew("A")
		time.Sleep(2 * DefaultLivenessCheck)
		synctest.Wait()
		select {
		case err := <-ended:
			if !errors.Is(err, ErrReplicaLost) {
				t.Errorf("A's work ended with %v, want ErrReplicaLost", err)
			}
		default:
			t.Fatal("A still runs a task the cluster declared lost")
		}
		for i, e := range es {
			got, _, err := e.Wait(t.Context(), "alice", task.ID)
			if err != nil || got.Status != StatusFailed || !errors.Is(got.Err, ErrReplicaLost) {
				t.Errorf("replica %d: Wait = %+v, %v; want failed as lost", i, got, err)
			}
			page, _, err := e.List(t.Context(), "alice", "", 10)
			if err != nil || len(page) != 1 || page[0].Status != StatusFailed {
				t.Errorf("replica %d: List = %+v, %v; want the task failed", i, page, err)
			}
		}
	})
}

// TestReplicaNoStateGoesBack: a task that finished on its runner while the
// runner was cut off from the store (its end unwritten, its lease lapsed),
// and that another replica declared lost meanwhile, reads failed from
// every replica and every method ever after: the runner's late completion
// never overrides the store.
func TestReplicaNoStateGoesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		es := replicas(t, m, 2)
		release := make(chan struct{})
		task := mustSubmit(t, es[0], "alice", SubmitOptions{}, gated(release, Outcome{Value: "v", Size: 1}))
		cutOff := true
		m.fail = func(r *Record) (error, error) {
			if cutOff && r.Runner == "A" && r.Ended == "" { // A's own writes
				return errors.New("store unreachable"), nil
			}
			return nil, nil
		}
		m.lapse("A")
		close(release)
		synctest.Wait() // A's work returned; its end is not written
		// A answers for an end it could not store with the store's error,
		// never with a completion another replica may yet overrule.
		if got, err := es[0].Get(t.Context(), "alice", task.ID); !errors.Is(err, ErrShared) {
			t.Errorf("A: Get of its unstored end = %+v, %v; want ErrShared", got.Status, err)
		}
		if got, _, err := es[0].Wait(t.Context(), "alice", task.ID); !errors.Is(err, ErrShared) {
			t.Errorf("A: Wait on its unstored end = %+v, %v; want ErrShared", got.Status, err)
		}
		if got, err := es[1].Get(t.Context(), "alice", task.ID); err != nil || got.Status != StatusFailed {
			t.Fatalf("B: Get = %+v, %v; want failed (A's lease lapsed)", got.Status, err)
		}
		cutOff = false
		m.renew("A")
		time.Sleep(3 * time.Second) // A's writer retries, and meets the store's failed
		synctest.Wait()
		check := func(when string) {
			for i, e := range es {
				got, err := e.Get(t.Context(), "alice", task.ID)
				if err != nil || got.Status != StatusFailed {
					t.Errorf("%s: replica %d: Get = %+v, %v; want failed", when, i, got.Status, err)
				}
				got, out, err := e.Wait(t.Context(), "alice", task.ID)
				if err != nil || got.Status != StatusFailed || out.Value != nil {
					t.Errorf("%s: replica %d: Wait = %+v, %+v, %v; want failed, no value", when, i, got.Status, out, err)
				}
				page, _, err := e.List(t.Context(), "alice", "", 10)
				if err != nil || len(page) != 1 || page[0].Status != StatusFailed {
					t.Errorf("%s: replica %d: List = %+v, %v; want the task failed", when, i, page, err)
				}
				if _, err := e.Cancel(t.Context(), "alice", task.ID); !errors.Is(err, ErrTerminal) {
					t.Errorf("%s: replica %d: Cancel = %v, want ErrTerminal", when, i, err)
				}
			}
		}
		check("after A came back")
		m.renew("A") // another epoch: memory is still not trusted over the store
		check("in the next epoch")
	})
}
