package sandbox_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// The measurements of the suite are benchmarks: they report numbers and
// assert only outcomes (kinds), never times or sizes. Run them with
//
//	go test -run '^$' -bench . -benchtime 200x ./sandbox_test/

// BenchmarkRunawaySurvival reports how long a runaway guest keeps running
// after its deadline passes or its context is canceled: the time from that
// instant to the return of Call (p50, p99 and max over the iterations; it
// includes admission and instantiation, tens of µs). spin is a tight loop
// (stopped at a loop header), explode a loop-free call tree (stopped at the
// loop header the host puts at every function's entry).
func BenchmarkRunawaySurvival(b *testing.B) {
	const timeout = 5 * time.Millisecond
	for _, e := range engines {
		for _, tool := range []string{"spin", "explode"} {
			for _, mode := range []string{"deadline", "cancel"} {
				b.Run(e.name+"/"+tool+"/"+mode, func(b *testing.B) {
					tp := host.ToolPolicy{Timeout: host.Duration(timeout)}
					if mode == "cancel" {
						tp.Timeout = 0 // the default: only the cancel ends it
					}
					s := serve(b, e.interpreter, &host.Policy{Modules: map[string]host.ModulePolicy{tool: {Tools: map[string]host.ToolPolicy{tool: tp}}}}, tool)
					var lag []time.Duration
					for b.Loop() {
						if mode == "deadline" {
							start := time.Now()
							_, err := s.Call(context.Background(), tool, nil, nil)
							lag = append(lag, time.Since(start)-timeout)
							guestErr(b, err, host.KindTimeout)
							continue
						}
						ctx, cancel := context.WithCancel(context.Background())
						var mu sync.Mutex
						var end time.Time
						stop := time.AfterFunc(timeout, func() { mu.Lock(); end = time.Now(); mu.Unlock(); cancel() })
						_, err := s.Call(ctx, tool, nil, nil)
						done := time.Now()
						stop.Stop()
						cancel()
						mu.Lock()
						lag = append(lag, done.Sub(end))
						mu.Unlock()
						guestErr(b, err, host.KindCanceled)
					}
					reportPercentiles(b, lag)
				})
			}
		}
	}
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds())
	}
	b.ReportMetric(at(.5), "p50-µs")
	b.ReportMetric(at(.99), "p99-µs")
	b.ReportMetric(at(1), "max-µs")
}

// BenchmarkBlockedInstances reports the host memory held per instance when
// n instances at the default limits are all blocked in elicit: HeapInuse and
// Sys deltas, and goroutines (the callers' and wazero's per-call context
// watchers), per instance.
func BenchmarkBlockedInstances(b *testing.B) {
	const n = 50
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			pol := &host.Policy{Defaults: host.ToolPolicy{MaxConcurrency: n}, MaxInstances: n,
				Modules: map[string]host.ModulePolicy{"elicitwait": {MaxInstances: n, MaxMemoryMiB: 1 << 20}}} // the whole server
			s := serve(b, e.interpreter, pol, "elicitwait")
			var heap, sys, goroutines float64
			for b.Loop() {
				var ms0, ms1 runtime.MemStats
				heapInuse()
				runtime.ReadMemStats(&ms0)
				g0 := runtime.NumGoroutine()
				ctx, cancel := context.WithCancel(context.Background())
				entered := make(chan struct{}, n)
				errc := make(chan error, n)
				for range n {
					go func() {
						_, err := s.Call(ctx, "ask", nil, blockingElicit(entered))
						errc <- err
					}()
				}
				for range n {
					<-entered
				}
				heapInuse()
				runtime.ReadMemStats(&ms1)
				goroutines += float64(runtime.NumGoroutine()-g0) / n
				heap += float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse)) / n / 1024
				sys += float64(int64(ms1.Sys)-int64(ms0.Sys)) / n / 1024
				cancel()
				for range n {
					guestErr(b, <-errc, host.KindCanceled)
				}
			}
			b.ReportMetric(heap/float64(b.N), "HeapInuse-KiB/instance")
			b.ReportMetric(sys/float64(b.N), "Sys-KiB/instance")
			b.ReportMetric(goroutines/float64(b.N), "goroutines/instance")
		})
	}
}

// BenchmarkStackOverflow reports the host memory one stack overflow
// allocates (B/op): the guest's stack is host memory, charged to the
// policy's memory limit with linear memory.
func BenchmarkStackOverflow(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			s := serve(b, e.interpreter, nil, "recurse")
			b.ReportAllocs()
			for b.Loop() {
				_, err := s.Call(context.Background(), "recurse", nil, nil)
				guestErr(b, err, host.KindOutOfMemory, "its call stack")
			}
		})
	}
}

// BenchmarkDeadlineOverrun reports, over every hostile guest that only its
// deadline stops — a tight loop, a loop-free call tree, and the floods of
// host calls (vectored writes of empty entries, stderr, log, progress,
// status, random bytes, empty lines) — how long each call ran past its
// deadline (p50, p99, max over all of them; it includes admission and
// instantiation).
func BenchmarkDeadlineOverrun(b *testing.B) {
	const timeout = 20 * time.Millisecond
	cases := map[string][]string{
		"spin":    {"spin"},
		"explode": {"explode"},
		"flood":   {"b_err", "c_log", "d_progress", "e_status", "f_random", "g_lines"},
	}
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			mods := map[string]host.ModulePolicy{}
			var modules []string
			for m, tools := range cases {
				mp := host.ModulePolicy{Tools: map[string]host.ToolPolicy{}}
				for _, t := range tools {
					mp.Tools[t] = host.ToolPolicy{Timeout: host.Duration(timeout)}
				}
				mods[m] = mp
				modules = append(modules, m)
			}
			s := serve(b, e.interpreter, policy(mods), modules...)
			var over []time.Duration
			for b.Loop() {
				for _, tools := range cases {
					for _, tool := range tools {
						start := time.Now()
						_, err := s.Call(context.Background(), tool, nil, &counting{})
						over = append(over, time.Since(start)-timeout)
						guestErr(b, err, host.KindTimeout)
					}
				}
			}
			reportPercentiles(b, over)
		})
	}
}

// BenchmarkLoadWhileWorstLoads reports, for a server starting on a good
// module and the most expensive module the default limits admit (31 MiB
// of code in 1 MiB functions, compiled without a cache), when the good
// module's tool answered and when the worst module's load ended.
func BenchmarkLoadWhileWorstLoads(b *testing.B) {
	worst := denseModule(31, 1<<20-64)
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			var served, loaded []time.Duration
			for b.Loop() {
				fsys := fstest.MapFS{"normal.wasm": {Data: wasm(b, "normal")}, "worst.wasm": {Data: worst}}
				start := time.Now()
				s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Interpreter: e.interpreter})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Call(context.Background(), "echo", nil, nil); err != nil {
					b.Fatal(err)
				}
				served = append(served, time.Since(start))
				s.Problems() // waits for every load
				loaded = append(loaded, time.Since(start))
				s.Close()
			}
			slices.Sort(served)
			slices.Sort(loaded)
			b.ReportMetric(float64(served[len(served)/2].Milliseconds()), "good-served-ms")
			b.ReportMetric(float64(loaded[len(loaded)/2].Milliseconds()), "worst-loaded-ms")
		})
	}
}

// BenchmarkProbeWhileHostile reports how long a well-behaved call (the
// normal module's echo) takes while hostile guests run beside it on the
// same server: none (idle), 8 tight loops (plain), and 8 loops around bulk
// instructions over a whole memory or table (bulk: two each of
// memory.fill, memory.copy, table.fill and table.copy); p50, p99 and the
// worst probe. The hostile calls have no deadline of their own (the
// default 30 s); they are cancelled at the end. Before bulk instructions
// were charged by their length, every probe of the bulk case stalled for
// seconds: native guest code that never returns to Go holds up the
// garbage collector's stop-the-world, and with it every goroutine.
func BenchmarkProbeWhileHostile(b *testing.B) {
	cases := []struct {
		name  string
		tools []string
	}{
		{"idle", nil},
		{"plain", []string{"loop", "loop", "loop", "loop", "loop", "loop", "loop", "loop"}},
		{"bulk", []string{"fill", "fill", "copy", "copy", "table", "table", "tcopy", "tcopy"}},
	}
	for _, e := range engines {
		for _, c := range cases {
			b.Run(e.name+"/"+c.name, func(b *testing.B) {
				pol := &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: 16, MaxConcurrency: 8}}
				s := serve(b, e.interpreter, pol, "normal", "spin", "bulkspin")
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				started := make(chan struct{}, len(c.tools))
				for _, tool := range c.tools {
					wg.Go(func() {
						// Every hostile tool logs once, then loops.
						_, _ = s.Call(ctx, tool, nil, &events{onLog: func(string) { started <- struct{}{} }})
					})
				}
				for range c.tools {
					<-started
				}
				var lat []time.Duration
				for b.Loop() {
					start := time.Now()
					if _, err := s.Call(context.Background(), "echo", nil, nil); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				cancel()
				wg.Wait()
				reportPercentiles(b, lat)
			})
		}
	}
}
