package wasmrt

import (
	"context"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// spinSrc is the guest of BenchmarkSpin: "count" runs a tight loop of n
// iterations of arithmetic; "forever" calls bench.started, then loops
// until it is stopped.
const spinSrc = `(module
  (import "bench" "started" (func $started))
  (memory (export "memory") 1)
  (func (export "count") (param $n i32) (result i32) (local $i i32) (local $x i32)
    (loop $l
      (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1664525)) (i32.const 1013904223)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $x))
  (func (export "forever") (local $x i32)
    (call $started)
    (loop $l
      (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1664525)) (i32.const 1013904223)))
      (br $l))))`

// spinVariant is one way of running spinSrc: as Load instruments it (fuel,
// with fuelPerCheck = fuel), or as it is, in a runtime WithCloseOnContextDone
// (closeOnDone) or without (none, which nothing can stop).
type spinVariant struct {
	name        string
	fuel        int32 // 0: the module as it is
	closeOnDone bool
}

func (v spinVariant) String() string { return v.name }

var spinVariants = []spinVariant{
	{name: "none"},
	{name: "closeOnDone", closeOnDone: true},
	{name: "fuel=16k", fuel: 1 << 14},
	{name: "fuel=128k", fuel: 1 << 17},
	{name: "fuel=1M", fuel: 1 << 20},
}

// spinRuntime compiles spinSrc for v (with fuelPerCheck set to v.fuel)
// and returns a function that makes an instance of it; started is called
// when "forever" starts. Close the runtime when done.
func spinRuntime(b *testing.B, wasm []byte, v spinVariant, interp bool, started func()) (newInstance func() api.Module, closeRT func()) {
	ctx := context.Background()
	if v.fuel != 0 {
		old := fuelPerCheck
		fuelPerCheck = v.fuel
		b.Cleanup(func() { fuelPerCheck = old })
		g, err := guardModule(wasm, interp, 0)
		if err != nil {
			b.Fatal(err)
		}
		wasm = g.Wasm
	}
	rc := wazero.NewRuntimeConfig()
	if interp {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc.WithCloseOnContextDone(v.closeOnDone))
	if err := instantiateFuel(ctx, rt); err != nil {
		b.Fatal(err)
	}
	_, err := rt.NewHostModuleBuilder("bench").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {
			if started != nil {
				started()
			}
		}), nil, nil).Export("started").Instantiate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	compiled := mustCompile(b, rt, wasm)
	return func() api.Module {
		mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			b.Fatal(err)
		}
		if v.fuel != 0 {
			for _, e := range []string{wasmcode.LeftExport, wasmcode.LowExport} {
				mod.ExportedGlobal(e).(api.MutableGlobal).Set(1 << 40)
			}
		}
		return mod
	}, func() { _ = rt.Close(ctx) }
}

// BenchmarkSpin measures what stopping a CPU-bound guest costs, side by
// side for the variants of spinVariants, on spinSrc:
//
//   - loop/<engine>/<variant>: a tight loop of 2^24 iterations (2^20 in
//     the interpreter);
//   - cancel/<variant>: from the cancel of a spinning guest's context to
//     its call's return, p50 and p99 (compiler);
//   - gc/<variant>: runtime.GC() in the benchmark's goroutine while 8
//     guests spin (compiler), p50 and max, and the p99 of the stop-the-world
//     pauses the runtime records (/sched/pauses/total/gc:seconds).
func BenchmarkSpin(b *testing.B) {
	ctx := context.Background()
	wasm := wat(b, spinSrc)
	b.Run("loop", func(b *testing.B) {
		for _, e := range engines {
			n := uint64(1 << 24)
			if e.interp {
				n = 1 << 20
			}
			for _, v := range spinVariants {
				b.Run(e.name+"/"+v.name, func(b *testing.B) {
					newInstance, closeRT := spinRuntime(b, wasm, v, e.interp, nil)
					defer closeRT()
					count := newInstance().ExportedFunction("count")
					for b.Loop() {
						// A call's state, as Call gives its guest: the fuel
						// check yields by it.
						ctx := context.WithValue(ctx, callStateKey{}, &callState{})
						if _, err := count.Call(ctx, n); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	})
	stoppable := slices.DeleteFunc(slices.Clone(spinVariants), func(v spinVariant) bool { return v.name == "none" })
	b.Run("cancel", func(b *testing.B) {
		for _, v := range stoppable {
			b.Run(v.name, func(b *testing.B) { benchCancel(b, wasm, v) })
		}
	})
	b.Run("gc", func(b *testing.B) {
		for _, v := range stoppable {
			b.Run(v.name, func(b *testing.B) { benchGCWhileSpinning(b, wasm, v) })
		}
	})
}

// benchCancel measures, for the guest wasm of spinRuntime, the time from
// the cancel of its spinning "forever" to its call's return (compiler).
func benchCancel(b *testing.B, wasm []byte, v spinVariant) {
	ctx := context.Background()
	started := make(chan struct{}, 1)
	newInstance, closeRT := spinRuntime(b, wasm, v, false, func() { started <- struct{}{} })
	defer closeRT()
	var lat []time.Duration
	for b.Loop() {
		// A stopped instance is done with: each call has its own.
		mod := newInstance()
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan time.Time, 1)
		go func() {
			_, _ = mod.ExportedFunction("forever").Call(ctx)
			done <- time.Now()
		}()
		<-started
		t0 := time.Now()
		cancel()
		lat = append(lat, (<-done).Sub(t0))
		_ = mod.Close(ctx)
	}
	reportQuantiles(b, lat, "cancel")
}

// benchGCWhileSpinning measures runtime.GC() in the benchmark's goroutine
// while 8 guests of wasm spin in "forever" (compiler).
func benchGCWhileSpinning(b *testing.B, wasm []byte, v spinVariant) {
	const guests = 8
	started := make(chan struct{}, guests)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	newInstance, closeRT := spinRuntime(b, wasm, v, false, func() { started <- struct{}{} })
	defer func() {
		cancel()
		wg.Wait()
		closeRT()
	}()
	for range guests {
		mod := newInstance()
		wg.Go(func() { _, _ = mod.ExportedFunction("forever").Call(ctx) })
	}
	for range guests {
		<-started
	}
	sample := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(sample)
	before := &metrics.Float64Histogram{Counts: slices.Clone(sample[0].Value.Float64Histogram().Counts)}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		runtime.GC()
		lat = append(lat, time.Since(t0))
	}
	metrics.Read(sample)
	reportQuantiles(b, lat, "GC")
	b.ReportMetric(histQuantile(before, sample[0].Value.Float64Histogram(), 0.99)*1e6, "pause-p99-µs")
}

// reportQuantiles reports the median and the 99th percentile of d, in µs.
func reportQuantiles(b *testing.B, d []time.Duration, what string) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.5), what+"-p50-µs")
	b.ReportMetric(q(0.99), what+"-p99-µs")
}

// histQuantile is the p quantile (the upper bound of its bucket) of the
// samples added to a runtime/metrics histogram between before and after.
func histQuantile(before, after *metrics.Float64Histogram, p float64) float64 {
	var total uint64
	counts := make([]uint64, len(after.Counts))
	for i := range after.Counts {
		counts[i] = after.Counts[i] - before.Counts[i]
		total += counts[i]
	}
	if total == 0 {
		return 0
	}
	var seen uint64
	for i, c := range counts {
		seen += c
		if float64(seen) >= p*float64(total) {
			return after.Buckets[i+1]
		}
	}
	return after.Buckets[len(after.Buckets)-1]
}
