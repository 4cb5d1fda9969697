package taskengine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestHammer runs many goroutines that submit, cancel, wait, list, watch,
// answer and let tasks expire, all at once, against a small engine so that
// every limit is hit. Run it with -race. It checks the store's invariants
// while running and that no goroutine survives Close.
func TestHammer(t *testing.T) {
	before := runtime.NumGoroutine()
	e, err := New(Config{
		MaxTasks:           64,
		MaxResultBytes:     4096,
		MaxRunningPerOwner: 8,
		DefaultTTL:         20 * time.Millisecond,
		MaxTTL:             50 * time.Millisecond,
		MaxRunTime:         30 * time.Millisecond,
		MaxPendingInputs:   2,
		MaxWatchersPerTask: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 16, 1000
	// ok counts successful operations by kind, to show the hammer reached
	// every path and not only the error paths.
	var ok [8]atomic.Int64
	owners := []string{"alice", "bob", "carol", "dave"}
	allowed := []error{ErrNotFound, ErrTerminal, ErrFull, ErrOwnerLimit, ErrNoSuchInput, ErrTooManyWatchers, context.DeadlineExceeded}
	unexpected := func(err error) bool {
		for _, a := range allowed {
			if errors.Is(err, a) {
				return false
			}
		}
		return err != nil
	}
	work := func(ctx context.Context, r *Run) Outcome {
		switch rand.IntN(6) {
		case 0:
			return Outcome{Value: "quick", Size: rand.Int64N(200)}
		case 1, 5:
			v, err := r.RequestInput(ctx, "q")
			return Outcome{Value: v, Err: err, Size: 10}
		case 2:
			for i := range 5 {
				r.SetProgress(float64(i), 5, "step")
				runtime.Gosched()
			}
			return Outcome{Value: "progressed", Failed: rand.IntN(2) == 0, Size: 50}
		case 3:
			if rand.IntN(4) == 0 {
				panic("hammer panic")
			}
			<-ctx.Done()
			return Outcome{Err: context.Cause(ctx)}
		case 4:
			return Outcome{Err: errors.New("work error")}
		default:
			panic("unreachable")
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			owner := owners[w%len(owners)]
			var ids []string
			for i := range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(3))*time.Millisecond)
				var err error
				op := rand.IntN(8)
				switch {
				case op <= 1 || len(ids) == 0:
					var tk Task
					ttl := time.Duration(rand.IntN(40)) * time.Millisecond
					if tk, err = e.Submit(context.Background(), owner, SubmitOptions{TTL: ttl}, work); err == nil {
						ids = append(ids, tk.ID)
					}
					op = 0
				case op == 2:
					_, err = e.Cancel(context.Background(), owner, ids[rand.IntN(len(ids))])
				case op == 3:
					_, _, err = e.Wait(ctx, owner, ids[rand.IntN(len(ids))])
				case op == 4:
					cursor := ""
					for range 3 {
						var page []Task
						if page, cursor, err = e.List(context.Background(), owner, cursor, 5); err != nil || cursor == "" {
							break
						}
						for _, tk := range page {
							if tk.Owner != owner {
								err = fmt.Errorf("List(%q) returned a task of %q", owner, tk.Owner)
							}
						}
					}
				case op == 5:
					id := ids[rand.IntN(len(ids))]
					var reqs []InputRequest
					op = -1 // counted only when an answer is given
					if reqs, err = e.PendingInput(context.Background(), owner, id); err == nil && len(reqs) > 0 {
						op = 5
						err = e.Answer(context.Background(), owner, id, reqs[0].ID, "answer")
					}
				case op == 6:
					var s *Subscription
					if s, err = e.Watch(context.Background(), owner, ids[rand.IntN(len(ids))]); err == nil {
						select {
						case <-s.C():
						case <-ctx.Done():
						}
						s.Stop()
					}
				default:
					// Another owner's task must look unknown.
					other := owners[(w+1)%len(owners)]
					if _, err = e.Get(context.Background(), other, ids[rand.IntN(len(ids))]); !errors.Is(err, ErrNotFound) {
						err = fmt.Errorf("Get by %q of a task of %q: got %v, want ErrNotFound", other, owner, err)
					}
				}
				cancel()
				if err == nil && op >= 0 {
					ok[op].Add(1)
				}
				if unexpected(err) {
					errs <- err
					return
				}
				if i%50 == 0 {
					if err := e.checkInvariants(); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := e.checkInvariants(); err != nil {
		t.Error(err)
	}
	for op, name := range []string{0: "submit", 2: "cancel", 3: "wait", 4: "list", 5: "answer", 6: "watch"} {
		if n := ok[op].Load(); name != "" && n == 0 {
			t.Errorf("no successful %s in the hammer", name)
		}
	}
	t.Logf("successes by op: submit %d, cancel %d, wait %d, list %d, answer %d, watch %d",
		ok[0].Load(), ok[2].Load(), ok[3].Load(), ok[4].Load(), ok[5].Load(), ok[6].Load())
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if s := e.Stats(); s.Running != 0 {
		t.Errorf("after Close: %d running", s.Running)
	}
	// Every goroutine of the engine has exited once Close returns; allow
	// the runtime a moment to reap the test's own finished goroutines.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// TestReplicaHammer runs three replicas of one store under load while they
// are partitioned from it and healed at random, and checks what every
// client of every replica saw: once a task was seen terminal, no answer
// that began later gives another state (no working after an end, no
// completed after failed, no cancel acknowledged that reads otherwise).
func TestReplicaHammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemStore()
		es := replicas(t, m, 3)
		names := []string{"A", "B", "C"}
		var clock atomic.Int64 // orders observations: a start after an end is later
		type end struct {
			status Status
			at     int64
		}
		var mu sync.Mutex
		ends := map[string]end{}
		var ids []string
		var seen, violations atomic.Int64
		observe := func(who, id string, start int64, got Task) {
			at := clock.Add(1)
			mu.Lock()
			defer mu.Unlock()
			seen.Add(1)
			first, ok := ends[id]
			if ok && first.at < start && got.Status != first.status {
				if violations.Add(1) <= 5 {
					t.Errorf("task %s: %s answered %s after it was seen %s", id, who, got.Status, first.status)
				}
			}
			if !ok && got.Status.Terminal() {
				ends[id] = end{got.Status, at}
			}
		}
		allowed := []error{ErrShared, ErrTerminal, ErrNotFound, ErrNoSuchInput, context.DeadlineExceeded}
		work := func(ctx context.Context, r *Run) Outcome {
			select {
			case <-time.After(time.Duration(rand.IntN(3000)) * time.Millisecond):
				return Outcome{Value: "v", Size: 1, Failed: rand.IntN(4) == 0}
			case <-ctx.Done():
				return Outcome{Err: context.Cause(ctx)}
			}
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { // the faults
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(rand.IntN(2000)) * time.Millisecond):
				}
				r := names[rand.IntN(len(names))]
				m.partition(r)
				time.Sleep(time.Duration(rand.IntN(4000)) * time.Millisecond)
				m.heal(r)
			}
		})
		const clients, rounds = 9, 150
		var cw sync.WaitGroup
		for c := range clients {
			cw.Go(func() {
				for range rounds {
					i := rand.IntN(len(es))
					e, who := es[i], names[i]
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(2000))*time.Millisecond)
					mu.Lock()
					n := len(ids)
					id := ""
					if n > 0 {
						id = ids[rand.IntN(n)]
					}
					mu.Unlock()
					start := clock.Add(1)
					var got Task
					var err error
					op := rand.IntN(5)
					if n == 0 || c%3 == 0 && op == 0 {
						if got, err = e.Submit(ctx, "alice", SubmitOptions{}, work); err == nil {
							mu.Lock()
							ids = append(ids, got.ID)
							mu.Unlock()
						}
						cancel()
						continue
					}
					switch op {
					case 0, 1:
						got, err = e.Get(ctx, "alice", id)
					case 2:
						got, _, err = e.Wait(ctx, "alice", id)
					case 3:
						got, err = e.Cancel(ctx, "alice", id)
					case 4:
						var page []Task
						if page, _, err = e.List(ctx, "alice", "", MaxListLimit); err == nil {
							for _, p := range page {
								observe(who+" List", p.ID, start, p)
							}
						}
					}
					cancel()
					switch {
					case err == nil && op != 4:
						observe(who, id, start, got)
					case errors.Is(err, ErrTerminal):
						observe(who+" Cancel", id, start, got)
					case err != nil && !slices.ContainsFunc(allowed, func(a error) bool { return errors.Is(err, a) }):
						t.Errorf("%s: op %d: unexpected error %v", who, op, err)
					}
				}
			})
		}
		cw.Wait()
		close(stop)
		wg.Wait()
		for _, r := range names {
			m.heal(r)
		}
		mu.Lock()
		t.Logf("%d tasks, %d answers checked, %d ended, %d violations", len(ids), seen.Load(), len(ends), violations.Load())
		if len(ends) == 0 || seen.Load() < clients*rounds/2 {
			t.Errorf("the hammer saw too little: %d ends, %d answers", len(ends), seen.Load())
		}
		mu.Unlock()
	})
}
