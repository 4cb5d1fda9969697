package sandbox_test

import (
	"context"
	"flag"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

var measureRuns = flag.Int("sandbox.runs", 50, "runs per engine and mode of TestMeasureRunawaySurvival (200 for the reported numbers)")

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// TestMeasureRunawaySurvival logs how long a runaway guest keeps running
// after its deadline passes or its context is canceled: the time from that
// instant to the return of Call. It asserts the outcome's kind, never the
// time. Loop is a tight loop (stopped at a loop header), calls a loop-free
// call tree (stopped at the loop header the host puts at every
// function's entry).
func TestMeasureRunawaySurvival(t *testing.T) {
	const timeout = 5 * time.Millisecond
	for _, e := range engines {
		for _, mod := range []struct{ module, tool string }{{"spin", "spin"}, {"explode", "explode"}} {
			rt := newRuntime(t, e.interpreter)
			m := load(t, rt, mod.module)
			for _, mode := range []string{"deadline", "cancel"} {
				var lag []time.Duration
				for range *measureRuns {
					pol := host.ToolPolicy{Timeout: host.Duration(timeout)}
					ctx, cancel := context.WithCancel(context.Background())
					var end time.Time
					if mode == "cancel" {
						pol.Timeout = host.Duration(time.Minute)
						var mu sync.Mutex
						stop := time.AfterFunc(timeout, func() { mu.Lock(); end = time.Now(); mu.Unlock(); cancel() })
						_, err := m.Call(ctx, mod.tool, nil, host.CallOptions{Policy: pol})
						done := time.Now()
						stop.Stop()
						mu.Lock()
						lag = append(lag, done.Sub(end))
						mu.Unlock()
						guestErr(t, err, host.KindCanceled)
					} else {
						start := time.Now()
						_, err := m.Call(ctx, mod.tool, nil, host.CallOptions{Policy: pol})
						lag = append(lag, time.Since(start)-timeout)
						guestErr(t, err, host.KindTimeout)
					}
					cancel()
				}
				t.Logf("%-11s %-7s after %-8s: p50 %v  p99 %v  max %v  (%d runs; includes instantiation, ~tens of µs)",
					e.name, mod.tool, mode, percentile(lag, .5), percentile(lag, .99), percentile(lag, 1), len(lag))
			}
		}
	}
}

// TestMeasureBlockedInstances logs the host memory held by N instances at
// the default limits, all blocked in elicit: HeapInuse and Sys deltas per
// instance, both engines.
func TestMeasureBlockedInstances(t *testing.T) {
	const n = 50
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			b := takeBaseline()
			func() {
				rt := newRuntime(t, e.interpreter)
				m := load(t, rt, "elicitwait")
				var ms0, ms1 runtime.MemStats
				heapInuse()
				runtime.ReadMemStats(&ms0)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				entered := make(chan struct{}, n)
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						_, err := m.Call(ctx, "ask", nil, host.CallOptions{Elicit: blockingElicit(entered)})
						if err == nil {
							t.Errorf("a blocked call returned without error")
						}
					})
				}
				for range n {
					<-entered
				}
				heapInuse()
				runtime.ReadMemStats(&ms1)
				g := runtime.NumGoroutine() - b.goroutines
				cancel()
				wg.Wait()
				t.Logf("%s: %d instances blocked in elicit (default limits): HeapInuse +%d KiB/instance, Sys +%d KiB/instance, goroutines +%d (the callers' and wazero's per-call context watchers)",
					e.name, n, (int64(ms1.HeapInuse)-int64(ms0.HeapInuse))/n>>10, (int64(ms1.Sys)-int64(ms0.Sys))/n>>10, g)
			}()
			b.check(t)
		})
	}
}
