package taskengine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var allStatuses = []Status{StatusWorking, StatusInputRequired, StatusCompleted, StatusFailed, StatusCancelled}

func TestStatusTransitions(t *testing.T) {
	legal := map[[2]Status]bool{
		{StatusWorking, StatusInputRequired}:   true,
		{StatusWorking, StatusCompleted}:       true,
		{StatusWorking, StatusFailed}:          true,
		{StatusWorking, StatusCancelled}:       true,
		{StatusInputRequired, StatusWorking}:   true,
		{StatusInputRequired, StatusCompleted}: true,
		{StatusInputRequired, StatusFailed}:    true,
		{StatusInputRequired, StatusCancelled}: true,
	}
	e := newTestEngine(t, Config{})
	for _, from := range allStatuses {
		for _, to := range allStatuses {
			t.Run(fmt.Sprintf("%s_to_%s", from, to), func(t *testing.T) {
				want := legal[[2]Status{from, to}]
				if got := from.CanBecome(to); got != want {
					t.Errorf("CanBecome: got %v, want %v", got, want)
				}
				tk := &task{status: from, done: make(chan struct{}), heapIdx: -1}
				if from.Terminal() {
					close(tk.done)
				}
				e.mu.Lock()
				err := e.setStatusLocked(tk, to, time.Now())
				e.mu.Unlock()
				switch {
				case want && err != nil:
					t.Errorf("setStatus: got error %v, want none", err)
				case !want && !errors.Is(err, ErrIllegalTransition):
					t.Errorf("setStatus: got error %v, want ErrIllegalTransition", err)
				case !want && tk.status != from:
					t.Errorf("refused transition applied: status %s, want %s", tk.status, from)
				case want && tk.status != to:
					t.Errorf("status %s, want %s", tk.status, to)
				}
			})
		}
	}
	for _, s := range allStatuses {
		want := s == StatusCompleted || s == StatusFailed || s == StatusCancelled
		if got := s.Terminal(); got != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, got, want)
		}
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
		check   func(Config) string
	}{
		{name: "zero", check: func(c Config) string {
			want := Config{MaxTasks: 10000, MaxResultBytes: 256 << 20, MaxRunningPerOwner: 32,
				MaxTasksPerOwner: 2500, MaxResultBytesPerOwner: 64 << 20, DefaultTTL: time.Hour,
				MaxTTL: 24 * time.Hour, MaxRunTime: 10 * time.Minute, PollInterval: time.Second, MaxPendingInputs: 4, MaxWatchersPerTask: 16,
				SharedTimeout: 10 * time.Second, LivenessCheck: 2 * time.Second}
			if !reflect.DeepEqual(c, want) {
				return fmt.Sprintf("got %+v, want %+v", c, want)
			}
			return ""
		}},
		{name: "default clamped to small max", cfg: Config{MaxTTL: time.Minute}, check: func(c Config) string {
			if c.DefaultTTL != time.Minute {
				return fmt.Sprintf("DefaultTTL %v, want 1m", c.DefaultTTL)
			}
			return ""
		}},
		{name: "per-owner defaults follow the engine's", cfg: Config{MaxTasks: 100, MaxResultBytes: 1000}, check: func(c Config) string {
			if c.MaxTasksPerOwner != 25 || c.MaxResultBytesPerOwner != 250 {
				return fmt.Sprintf("per owner: %d tasks, %d bytes; want 25, 250", c.MaxTasksPerOwner, c.MaxResultBytesPerOwner)
			}
			return ""
		}},
		{name: "per-owner defaults at least 1", cfg: Config{MaxTasks: 3, MaxResultBytes: 3}, check: func(c Config) string {
			if c.MaxTasksPerOwner != 1 || c.MaxResultBytesPerOwner != 1 {
				return fmt.Sprintf("per owner: %d tasks, %d bytes; want 1, 1", c.MaxTasksPerOwner, c.MaxResultBytesPerOwner)
			}
			return ""
		}},
		{name: "per-owner bounds kept", cfg: Config{MaxTasksPerOwner: 7, MaxResultBytesPerOwner: 9}, check: func(c Config) string {
			if c.MaxTasksPerOwner != 7 || c.MaxResultBytesPerOwner != 9 {
				return fmt.Sprintf("per owner: %d tasks, %d bytes; want 7, 9", c.MaxTasksPerOwner, c.MaxResultBytesPerOwner)
			}
			return ""
		}},
		{name: "negative MaxTasks", cfg: Config{MaxTasks: -1}, wantErr: "MaxTasks"},
		{name: "negative MaxResultBytes", cfg: Config{MaxResultBytes: -1}, wantErr: "MaxResultBytes"},
		{name: "negative MaxTasksPerOwner", cfg: Config{MaxTasksPerOwner: -1}, wantErr: "MaxTasksPerOwner"},
		{name: "negative MaxResultBytesPerOwner", cfg: Config{MaxResultBytesPerOwner: -1}, wantErr: "MaxResultBytesPerOwner"},
		{name: "negative DefaultTTL", cfg: Config{DefaultTTL: -1}, wantErr: "DefaultTTL"},
		{name: "default above max", cfg: Config{DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour}, wantErr: "exceeds MaxTTL"},
		{name: "negative PollInterval", cfg: Config{PollInterval: -1}, wantErr: "PollInterval"},
		{name: "negative MaxPendingInputs", cfg: Config{MaxPendingInputs: -1}, wantErr: "MaxPendingInputs"},
		{name: "shared without codec", cfg: Config{Shared: newMemShared(newMemStore(), "r"), Peers: newMemShared(newMemStore(), "r"), SharedKey: make([]byte, 32)}, wantErr: "Codec"},
		{name: "shared without peers", cfg: Config{Shared: newMemShared(newMemStore(), "r"), Codec: jsonCodec{}, SharedKey: make([]byte, 32)}, wantErr: "Peers"},
		{name: "peers without a store", cfg: Config{Peers: newMemShared(newMemStore(), "r"), Codec: jsonCodec{}, SharedKey: make([]byte, 32)}, wantErr: "Shared"},
		{name: "shared with a short key", cfg: Config{Shared: newMemShared(newMemStore(), "r"), Peers: newMemShared(newMemStore(), "r"), Codec: jsonCodec{}, SharedKey: make([]byte, 31)}, wantErr: "SharedKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				if _, err := New(tt.cfg); err == nil {
					t.Errorf("New accepted %+v", tt.cfg)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if msg := tt.check(c); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestGrantTTL(t *testing.T) {
	const h = time.Hour
	tests := []struct {
		name      string
		cfg       Config
		requested time.Duration
		want      time.Duration // 0 = unlimited
		wantRun   time.Duration // work deadline, 0 = none
	}{
		{"default", Config{}, 0, h, 10 * time.Minute},
		{"short request is kept and bounds the run", Config{}, 5 * time.Second, 5 * time.Second, 5 * time.Second},
		{"clamped to max", Config{}, 48 * h, 24 * h, 10 * time.Minute},
		{"unlimited request, limited max", Config{}, -1, 24 * h, 10 * time.Minute},
		{"unlimited request, unlimited max", Config{MaxTTL: -1}, -1, 0, 10 * time.Minute},
		{"long request, unlimited max", Config{MaxTTL: -1}, 1000 * h, 1000 * h, 10 * time.Minute},
		{"configured default", Config{DefaultTTL: 2 * h}, 0, 2 * h, 10 * time.Minute},
		{"no run limit, ttl bounds it", Config{MaxRunTime: -1}, 0, h, h},
		{"no run limit, unlimited ttl", Config{MaxRunTime: -1, MaxTTL: -1}, -1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			got := c.grantTTL(tt.requested)
			if got != tt.want {
				t.Errorf("grantTTL(%v): got %v, want %v", tt.requested, got, tt.want)
			}
			if run := c.runTime(got); run != tt.wantRun {
				t.Errorf("runTime(%v): got %v, want %v", got, run, tt.wantRun)
			}
		})
	}
}

func TestOutcomes(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		work       Work
		wantStatus Status
		wantValue  any
		wantErr    error
		wantMsg    string
		wantBytes  int64
	}{
		{"value", returning(Outcome{Value: "v", Size: 10}), StatusCompleted, "v", nil, "", 10},
		{"error", returning(Outcome{Err: boom}), StatusFailed, nil, boom, "", 0},
		{"error keeps the work's message", func(_ context.Context, r *Run) Outcome {
			r.SetStatusMessage("tried")
			return Outcome{Err: boom}
		}, StatusFailed, nil, boom, "tried", 0},
		{"failed value", returning(Outcome{Value: "tool error", Failed: true, Size: 4}), StatusFailed, "tool error", nil, "", 4},
		{"negative size counts as zero", returning(Outcome{Value: "v", Size: -5}), StatusCompleted, "v", nil, "", 0},
		{"panic", func(context.Context, *Run) Outcome { panic("kaboom") }, StatusFailed, nil, ErrPanic, "", 0},
		{"goexit", func(context.Context, *Run) Outcome { runtime.Goexit(); return Outcome{} }, StatusFailed, nil, ErrPanic, "", 0},
		{"too large", returning(Outcome{Value: "big", Size: 1 << 20}), StatusFailed, nil, ErrTooLarge, "", 0},
		{"message kept", func(_ context.Context, r *Run) Outcome {
			r.SetStatusMessage("all done")
			return Outcome{Value: 1}
		}, StatusCompleted, 1, nil, "all done", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(t, Config{MaxResultBytes: 1 << 10})
			sub := mustSubmit(t, e, "alice", SubmitOptions{Meta: "m"}, tt.work)
			if sub.Status != StatusWorking {
				t.Errorf("submitted status %s, want working", sub.Status)
			}
			got, out := mustWait(t, e, "alice", sub.ID)
			if got.Status != tt.wantStatus {
				t.Errorf("status: got %s, want %s", got.Status, tt.wantStatus)
			}
			if out.Value != tt.wantValue {
				t.Errorf("value: got %v, want %v", out.Value, tt.wantValue)
			}
			if tt.wantErr == nil && out.Err != nil || tt.wantErr != nil && !errors.Is(out.Err, tt.wantErr) {
				t.Errorf("err: got %v, want %v", out.Err, tt.wantErr)
			}
			if got.StatusMessage != tt.wantMsg {
				t.Errorf("status message: got %q, want %q (the engine writes none of its own)", got.StatusMessage, tt.wantMsg)
			}
			if tt.wantErr == nil && got.Err != nil || tt.wantErr != nil && !errors.Is(got.Err, tt.wantErr) {
				t.Errorf("task Err: got %v, want %v", got.Err, tt.wantErr)
			}
			if got.Meta != "m" {
				t.Errorf("meta: got %v, want m", got.Meta)
			}
			if s := e.Stats(); s.ResultBytes != tt.wantBytes || s.Tasks != 1 || s.Running != 0 {
				t.Errorf("stats: got %+v, want 1 task, 0 running, %d bytes", s, tt.wantBytes)
			}
			again, err := e.Get(context.Background(), "alice", sub.ID)
			if err != nil || again.Status != tt.wantStatus {
				t.Errorf("Get after Wait: got %s, %v; want %s", again.Status, err, tt.wantStatus)
			}
		})
	}
}

func TestSubmitSnapshot(t *testing.T) {
	e := newTestEngine(t, Config{PollInterval: 2 * time.Second})
	before := time.Now()
	tk := mustSubmit(t, e, "alice", SubmitOptions{TTL: time.Minute}, untilCancelled)
	if len(tk.ID) < 26 {
		t.Errorf("ID %q: %d chars, want >= 26 (128 bits base32)", tk.ID, len(tk.ID))
	}
	if tk.Owner != "alice" || tk.Status != StatusWorking || tk.TTL != time.Minute || tk.PollInterval != 2*time.Second {
		t.Errorf("got %+v, want owner alice, working, ttl 1m, poll 2s", tk)
	}
	if tk.CreatedAt.Before(before.Round(0).Truncate(time.Microsecond)) || !tk.LastUpdatedAt.Equal(tk.CreatedAt) {
		t.Errorf("times: created %v, updated %v, submitted after %v", tk.CreatedAt, tk.LastUpdatedAt, before)
	}
	ids := map[string]bool{tk.ID: true}
	for range 100 {
		id := mustSubmit(t, e, "bob", SubmitOptions{}, returning(Outcome{})).ID
		mustWait(t, e, "bob", id)
		if ids[id] {
			t.Fatalf("duplicate ID %s", id)
		}
		ids[id] = true
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	// alice may hold every slot, so that only the engine's bound is hit.
	e := newTestEngine(t, Config{MaxRunningPerOwner: 2, MaxTasks: 4, MaxTasksPerOwner: 4, MaxPendingInputs: 1, MaxWatchersPerTask: 1})
	release := make(chan struct{})
	defer close(release)
	done := mustSubmit(t, e, "alice", SubmitOptions{}, returning(Outcome{Value: 1}))
	mustWait(t, e, "alice", done.ID)
	waiting := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
		_, err := r.RequestInput(ctx, "q1")
		return Outcome{Err: err}
	})
	sub, _ := e.Watch(context.Background(), "alice", waiting.ID)
	for s := range sub.C() {
		if s.Status == StatusInputRequired {
			break
		}
	}
	ownCursor := ""
	for i := range 3 { // the third page needs a cursor
		_, next, err := e.List(context.Background(), "alice", ownCursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ownCursor = next
		}
	}

	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"get unknown", func() error { _, err := e.Get(context.Background(), "alice", "nope"); return err }, ErrNotFound},
		{"get other owner", func() error { _, err := e.Get(context.Background(), "bob", done.ID); return err }, ErrNotFound},
		{"get empty owner", func() error { _, err := e.Get(context.Background(), "", done.ID); return err }, ErrNotFound},
		{"wait unknown", func() error { _, _, err := e.Wait(ctx, "alice", "nope"); return err }, ErrNotFound},
		{"wait other owner", func() error { _, _, err := e.Wait(ctx, "bob", waiting.ID); return err }, ErrNotFound},
		{"cancel other owner", func() error { _, err := e.Cancel(context.Background(), "bob", waiting.ID); return err }, ErrNotFound},
		{"cancel terminal", func() error { _, err := e.Cancel(context.Background(), "alice", done.ID); return err }, ErrTerminal},
		{"watch other owner", func() error { _, err := e.Watch(context.Background(), "bob", waiting.ID); return err }, ErrNotFound},
		{"watch limit", func() error { _, err := e.Watch(context.Background(), "alice", waiting.ID); return err }, ErrTooManyWatchers},
		{"pending other owner", func() error { _, err := e.PendingInput(context.Background(), "bob", waiting.ID); return err }, ErrNotFound},
		{"answer other owner", func() error { return e.Answer(context.Background(), "bob", waiting.ID, "1", "x") }, ErrNotFound},
		{"answer unknown request", func() error { return e.Answer(context.Background(), "alice", waiting.ID, "99", "x") }, ErrNoSuchInput},
		{"answer terminal", func() error { return e.Answer(context.Background(), "alice", done.ID, "1", "x") }, ErrNoSuchInput},
		{"list garbage cursor", func() error { _, _, err := e.List(context.Background(), "alice", "garbage", 1); return err }, ErrBadCursor},
		{"list other owner's cursor", func() error { _, _, err := e.List(context.Background(), "bob", ownCursor, 1); return err }, ErrBadCursor},
		{"owner limit", func() error {
			mustSubmit(t, e, "alice", SubmitOptions{}, gated(release, Outcome{}))
			_, err := e.Submit(context.Background(), "alice", SubmitOptions{}, gated(release, Outcome{}))
			return err
		}, ErrOwnerLimit},
		{"full, and only other owners' tasks finished", func() error {
			mustSubmit(t, e, "bob", SubmitOptions{}, gated(release, Outcome{})) // the last free slot
			_, err := e.Submit(context.Background(), "carol", SubmitOptions{}, gated(release, Outcome{}))
			return err
		}, ErrFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, tt.name, tt.call(), tt.want)
		})
	}
	// carol's Submit could not take alice's finished task's slot.
	if _, err := e.Get(context.Background(), "alice", done.ID); err != nil {
		t.Errorf("another owner's finished task after ErrFull: got %v, want it kept", err)
	}
}

func TestTooManyInputs(t *testing.T) {
	e := newTestEngine(t, Config{MaxPendingInputs: 1})
	errs := make(chan error, 1)
	tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
		go func() {
			// Wait until the first request is pending, then ask again.
			for {
				if p, _ := e.PendingInput(context.Background(), "alice", r.ID()); len(p) == 1 {
					break
				}
				runtime.Gosched()
			}
			_, err := r.RequestInput(ctx, "second")
			errs <- err
		}()
		v, err := r.RequestInput(ctx, "first")
		return Outcome{Value: v, Err: err}
	})
	wantErr(t, "second RequestInput", <-errs, ErrTooManyInputs)
	if err := e.Answer(context.Background(), "alice", tk.ID, "1", "yes"); err != nil {
		t.Fatal(err)
	}
	_, out := mustWait(t, e, "alice", tk.ID)
	if out.Value != "yes" || out.Err != nil {
		t.Errorf("got %v, %v; want yes, nil", out.Value, out.Err)
	}
}

func TestCancel(t *testing.T) {
	e := newTestEngine(t, Config{})
	causes := make(chan error, 1)
	tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, _ *Run) Outcome {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return Outcome{Value: "finished anyway", Size: 100}
	})
	got, err := e.Cancel(context.Background(), "alice", tk.ID)
	if err != nil || got.Status != StatusCancelled {
		t.Fatalf("Cancel: got %s, %v; want cancelled, nil", got.Status, err)
	}
	wantErr(t, "work context cause", <-causes, ErrCancelled)
	final, out := mustWait(t, e, "alice", tk.ID)
	if final.Status != StatusCancelled || !errors.Is(out.Err, ErrCancelled) || out.Value != nil {
		t.Errorf("after work returned: got %s, %+v; want cancelled with ErrCancelled and no value", final.Status, out)
	}
	if s := e.Stats(); s.ResultBytes != 0 {
		t.Errorf("late value counted: %d result bytes, want 0", s.ResultBytes)
	}
	again, err := e.Cancel(context.Background(), "alice", tk.ID)
	if !errors.Is(err, ErrTerminal) || again.Status != StatusCancelled {
		t.Errorf("second Cancel: got %s, %v; want cancelled, ErrTerminal", again.Status, err)
	}
}

func TestInputRequests(t *testing.T) {
	e := newTestEngine(t, Config{})
	tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
		name, err := r.RequestInput(ctx, "name?")
		if err != nil {
			return Outcome{Err: err}
		}
		return Outcome{Value: fmt.Sprint("hello ", name)}
	})
	sub, err := e.Watch(context.Background(), "alice", tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	var seen []Status
	for s := range sub.C() {
		if len(seen) == 0 || seen[len(seen)-1] != s.Status {
			seen = append(seen, s.Status)
		}
		if s.Status != StatusInputRequired {
			continue
		}
		reqs, err := e.PendingInput(context.Background(), "alice", tk.ID)
		if err != nil || len(reqs) != 1 || reqs[0].Payload != "name?" {
			t.Fatalf("PendingInput: got %+v, %v; want one request name?", reqs, err)
		}
		if err := e.Answer(context.Background(), "alice", tk.ID, reqs[0].ID, "world"); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "second Answer", e.Answer(context.Background(), "alice", tk.ID, reqs[0].ID, "again"), ErrNoSuchInput)
	}
	_, out := mustWait(t, e, "alice", tk.ID)
	if out.Value != "hello world" {
		t.Errorf("value: got %v, want hello world", out.Value)
	}
	// The watcher may miss the brief "working" between answer and completion
	// (the channel coalesces), but it must see input_required and the end.
	if !slices.Contains(seen, StatusInputRequired) || seen[len(seen)-1] != StatusCompleted {
		t.Errorf("watched statuses %v, want input_required then completed last", seen)
	}
}

func TestInputUnblockedByCancelAndContext(t *testing.T) {
	e := newTestEngine(t, Config{})
	t.Run("cancel", func(t *testing.T) {
		errs := make(chan error, 1)
		tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
			_, err := r.RequestInput(ctx, "q")
			errs <- err
			return Outcome{}
		})
		waitStatus(t, e, "alice", tk.ID, StatusInputRequired)
		if _, err := e.Cancel(context.Background(), "alice", tk.ID); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "RequestInput", <-errs, ErrCancelled)
		if p, err := e.PendingInput(context.Background(), "alice", tk.ID); err != nil || len(p) != 0 {
			t.Errorf("PendingInput after cancel: got %v, %v; want none", p, err)
		}
	})
	t.Run("caller context", func(t *testing.T) {
		tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
			short, cancel := context.WithCancel(ctx)
			go func() {
				waitStatus(t, e, "alice", r.ID(), StatusInputRequired)
				cancel()
			}()
			_, err := r.RequestInput(short, "q")
			return Outcome{Value: err}
		})
		got, out := mustWait(t, e, "alice", tk.ID)
		if got.Status != StatusCompleted || out.Value != context.Canceled {
			t.Errorf("got %s, %v; want completed with context.Canceled", got.Status, out.Value)
		}
	})
}

// waitStatus blocks until owner's task id has status want.
func waitStatus(t testing.TB, e *Engine, owner, id string, want Status) {
	sub, err := e.Watch(context.Background(), owner, id)
	if err != nil {
		t.Errorf("Watch: %v", err)
		return
	}
	defer sub.Stop()
	for s := range sub.C() {
		if s.Status == want {
			return
		}
	}
	t.Errorf("task %s ended without reaching %s", id, want)
}

func TestWatchCoalesces(t *testing.T) {
	e := newTestEngine(t, Config{})
	release := make(chan struct{})
	progressed := make(chan struct{})
	tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
		<-progressed
		for i := range 1000 {
			r.SetProgress(float64(i+1), 1000, fmt.Sprint("step ", i+1))
		}
		progressed <- struct{}{}
		<-release
		return Outcome{Value: "ok"}
	})
	sub, err := e.Watch(context.Background(), "alice", tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	first := <-sub.C()
	if first.Status != StatusWorking || first.Progress != 0 {
		t.Errorf("first snapshot: got %+v, want working with no progress", first)
	}
	progressed <- struct{}{}
	<-progressed
	if got := <-sub.C(); got.Progress != 1000 || got.Total != 1000 || got.StatusMessage != "step 1000" {
		t.Errorf("after 1000 unread reports: got %v/%v %q, want only the latest 1000/1000 \"step 1000\"", got.Progress, got.Total, got.StatusMessage)
	}
	close(release)
	var last Task
	n := 0
	for s := range sub.C() {
		last = s
		n++
	}
	if last.Status != StatusCompleted || n != 1 {
		t.Errorf("after completion: got %d snapshots ending %s, want 1 completed then closed", n, last.Status)
	}
	sub.Stop() // after close: no effect, no panic

	// Watching a terminal task yields its snapshot and a closed channel.
	s2, err := e.Watch(context.Background(), "alice", tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := <-s2.C(); !ok || got.Status != StatusCompleted {
		t.Errorf("watch terminal: got %s, %v; want completed", got.Status, ok)
	}
	if _, ok := <-s2.C(); ok {
		t.Error("watch terminal: channel not closed")
	}

	// Stop closes the channel and frees the watcher slot.
	tk2 := mustSubmit(t, e, "alice", SubmitOptions{}, untilCancelled)
	for range DefaultMaxWatchersPerTask + 2 {
		s, err := e.Watch(context.Background(), "alice", tk2.ID)
		if err != nil {
			t.Fatalf("Watch after Stops: %v", err)
		}
		<-s.C()
		s.Stop()
		if _, ok := <-s.C(); ok {
			t.Fatal("channel open after Stop")
		}
	}
}

// OnChange calls back with each change, the current state first, until
// the task ends or stop; it counts as a watcher and sees only its owner's
// tasks.
func TestOnChange(t *testing.T) {
	e := newTestEngine(t, Config{})
	step, release := make(chan struct{}), make(chan struct{})
	tk := mustSubmit(t, e, "alice", SubmitOptions{}, func(ctx context.Context, r *Run) Outcome {
		<-step
		r.SetStatusMessage("halfway")
		step <- struct{}{}
		<-release
		return Outcome{Value: "ok"}
	})
	var mu sync.Mutex
	var seen []string
	stop, err := e.OnChange("alice", tk.ID, func(t Task) {
		mu.Lock()
		seen = append(seen, string(t.Status)+" "+t.StatusMessage)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	step <- struct{}{}
	<-step
	close(release)
	mustWait(t, e, "alice", tk.ID)
	stop() // after the end: no effect
	stop()
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	want := []string{"working ", "working halfway", "completed halfway"}
	if !slices.Equal(got, want) {
		t.Errorf("changes: got %q, want %q", got, want)
	}

	if _, err := e.OnChange("bob", tk.ID, func(Task) {}); !errors.Is(err, ErrNotFound) {
		t.Errorf("another owner's task: %v, want ErrNotFound", err)
	}

	// stop ends the calls and frees the watcher slot.
	tk2 := mustSubmit(t, e, "alice", SubmitOptions{}, untilCancelled)
	calls := 0
	for range DefaultMaxWatchersPerTask + 2 {
		stop, err := e.OnChange("alice", tk2.ID, func(Task) { calls++ }) // under the engine's lock
		if err != nil {
			t.Fatalf("OnChange after stops: %v", err)
		}
		stop()
	}
	if _, err := e.Cancel(context.Background(), "alice", tk2.ID); err != nil {
		t.Fatal(err)
	}
	mustWait(t, e, "alice", tk2.ID)
	e.mu.Lock()
	n := calls
	e.mu.Unlock()
	if n != DefaultMaxWatchersPerTask+2 {
		t.Errorf("callbacks after stop: %d calls, want only the %d first snapshots", n, DefaultMaxWatchersPerTask+2)
	}

	// A callback counts as a watcher.
	tk3 := mustSubmit(t, e, "alice", SubmitOptions{}, untilCancelled)
	for range DefaultMaxWatchersPerTask {
		if _, err := e.OnChange("alice", tk3.ID, func(Task) {}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.OnChange("alice", tk3.ID, func(Task) {}); !errors.Is(err, ErrTooManyWatchers) {
		t.Errorf("one callback too many: %v, want ErrTooManyWatchers", err)
	}
}

func TestEviction(t *testing.T) {
	// One owner, allowed the whole store: the engine's bounds at work.
	e := newTestEngine(t, Config{MaxTasks: 3, MaxResultBytes: 100, MaxTasksPerOwner: 3, MaxResultBytesPerOwner: 100})
	submit := func(size int64) string {
		tk := mustSubmit(t, e, "alice", SubmitOptions{}, returning(Outcome{Value: size, Size: size}))
		mustWait(t, e, "alice", tk.ID)
		return tk.ID
	}
	// retained lists the retained tasks, least recently used first, without
	// touching recency.
	retained := func() []string {
		e.mu.Lock()
		defer e.mu.Unlock()
		var ids []string
		if oi := e.owners["alice"]; oi != nil {
			ids = oi.finished.Keys()
		}
		return ids
	}
	a, b, c := submit(10), submit(10), submit(10)
	if _, err := e.Get(context.Background(), "alice", a); err != nil { // a becomes the most recently used
		t.Fatal(err)
	}
	d := submit(10) // the count bound evicts b, the least recently used
	if got, want := retained(), []string{c, a, d}; !slices.Equal(got, want) {
		t.Errorf("count bound: got %v, want %v", got, want)
	}
	// 85 more bytes: the count bound evicts c at Submit, the byte bound
	// then evicts a (20+85 > 100), leaving d (10) and f (85).
	f := submit(85)
	if got, want := retained(), []string{d, f}; !slices.Equal(got, want) {
		t.Errorf("byte bound: got %v, want %v", got, want)
	}
	if s := e.Stats(); s.ResultBytes != 95 || s.Tasks != 2 {
		t.Errorf("stats: got %+v, want 2 tasks, 95 bytes", s)
	}
	if _, err := e.Get(context.Background(), "alice", b); !errors.Is(err, ErrNotFound) {
		t.Errorf("evicted task: got %v, want ErrNotFound", err)
	}
}

func TestList(t *testing.T) {
	e := newTestEngine(t, Config{})
	var want []string
	for i := range 25 {
		id := mustSubmit(t, e, "alice", SubmitOptions{}, returning(Outcome{})).ID
		mustWait(t, e, "alice", id)
		want = append(want, id)
		if i%5 == 0 {
			mustWait(t, e, "bob", mustSubmit(t, e, "bob", SubmitOptions{}, returning(Outcome{})).ID)
		}
	}
	var got []string
	cursor, pages := "", 0
	for {
		page, next, err := e.List(context.Background(), "alice", cursor, 10)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, tk := range page {
			if tk.Owner != "alice" {
				t.Errorf("listed a task of %q", tk.Owner)
			}
			got = append(got, tk.ID)
		}
		if next == "" {
			break
		}
		// A cursor can be reused by its owner and gives the same page.
		again, _, err := e.List(context.Background(), "alice", next, 10)
		if err != nil || len(again) == 0 {
			t.Errorf("reusing cursor: got %d tasks, %v", len(again), err)
		}
		cursor = next
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Errorf("got %d pages %v, want 3 pages %v (oldest first)", pages, got, want)
	}
	if page, next, err := e.List(context.Background(), "nobody", "", 10); err != nil || len(page) != 0 || next != "" || page == nil {
		t.Errorf("unknown owner: got %v, %q, %v; want empty non-nil page", page, next, err)
	}
	// Removing the task a cursor points at does not break paging.
	_, next, _ := e.List(context.Background(), "alice", "", 1)
	e.mu.Lock()
	tk, _ := e.owners["alice"].finished.Peek(want[0])
	e.dropLocked(tk)
	e.mu.Unlock()
	page, _, err := e.List(context.Background(), "alice", next, 1)
	if err != nil || len(page) != 1 || page[0].ID != want[1] {
		t.Errorf("after removal: got %v, %v; want %s", page, err, want[1])
	}
	// Limits.
	if page, _, _ := e.List(context.Background(), "alice", "", 0); len(page) != 24 {
		t.Errorf("limit 0: got %d, want all 24", len(page))
	}
}

func TestClose(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = mustSubmit(t, e, "alice", SubmitOptions{}, untilCancelled).ID
	}
	sub, _ := e.Watch(context.Background(), "alice", ids[0])
	waitErrs := make(chan error, len(ids))
	for _, id := range ids {
		go func() {
			_, _, err := e.Wait(context.Background(), "alice", id)
			waitErrs <- err
		}()
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for range ids {
		wantErr(t, "Wait during Close", <-waitErrs, ErrClosed)
	}
	var last Task
	for s := range sub.C() {
		last = s
	}
	if last.Status != StatusCancelled {
		t.Errorf("watched task at Close: got %s, want cancelled", last.Status)
	}
	calls := map[string]error{}
	_, calls["Submit"] = e.Submit(context.Background(), "alice", SubmitOptions{}, untilCancelled)
	_, calls["Get"] = e.Get(context.Background(), "alice", ids[0])
	_, _, calls["Wait"] = e.Wait(context.Background(), "alice", ids[0])
	_, calls["Cancel"] = e.Cancel(context.Background(), "alice", ids[0])
	_, _, calls["List"] = e.List(context.Background(), "alice", "", 1)
	_, calls["Watch"] = e.Watch(context.Background(), "alice", ids[0])
	_, calls["PendingInput"] = e.PendingInput(context.Background(), "alice", ids[0])
	calls["Answer"] = e.Answer(context.Background(), "alice", ids[0], "1", nil)
	for name, err := range calls {
		wantErr(t, name+" after Close", err, ErrClosed)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if s := e.Stats(); s.Running != 0 {
		t.Errorf("Running after Close: %d", s.Running)
	}
}

func TestWaitContext(t *testing.T) {
	e := newTestEngine(t, Config{})
	tk := mustSubmit(t, e, "alice", SubmitOptions{}, untilCancelled)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := e.Wait(ctx, "alice", tk.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	// A terminal task is returned even to a done context.
	e.Cancel(context.Background(), "alice", tk.ID)
	if got, _, err := e.Wait(ctx, "alice", tk.ID); err != nil || got.Status != StatusCancelled {
		t.Errorf("terminal: got %s, %v; want cancelled, nil", got.Status, err)
	}
}
