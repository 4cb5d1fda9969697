package wasmrt

import (
	"context"
	"testing"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// bulkSpinSrc is the guest of BenchmarkBulk: "count" runs n bulk
// instructions of one kind (op: 0 memory.fill, 1 memory.copy, 2
// table.fill) over len bytes or entries; "forever" calls bench.started,
// then fills its 4 MiB memory until it is stopped.
const bulkSpinSrc = `(module
  (import "bench" "started" (func $started))
  (memory (export "memory") 64)
  (table 65536 funcref)
  (func (export "count") (param $op i32) (param $n i32) (param $len i32) (local $i i32)
    (loop $l
      (if (i32.eqz (local.get $op))
        (then (memory.fill (i32.const 0) (local.get $i) (local.get $len))))
      (if (i32.eq (local.get $op) (i32.const 1))
        (then (memory.copy (i32.const 0) (i32.const 1) (local.get $len))))
      (if (i32.eq (local.get $op) (i32.const 2))
        (then (table.fill 0 (i32.const 0) (ref.null func) (local.get $len))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n)))))
  (func (export "forever")
    (call $started)
    (loop $l (memory.fill (i32.const 0) (i32.const 7) (i32.const 0x400000)) (br $l))))`

// BenchmarkBulk measures what charging bulk instructions costs and what it
// buys (bulk.go), beside BenchmarkSpin's plain loop:
//
//   - op/<engine>/<op>/<variant>: 64 instructions of 64 KiB (memory) or
//     4,096 entries (table), the module as it is (none) and as Load
//     instruments it; ns per byte or entry is the time over 4 MiB or
//     256 Ki entries. Against BenchmarkSpin's loop/…/none (ns per
//     iteration of 9 instructions) it gives the units that take as long
//     as one instruction: the weights wasmcode.MemFuelShift and wasmcode.TableFuelShift.
//   - cancel: from the cancel of a guest spinning around a 4 MiB
//     memory.fill to its call's return (compiler), p50 and p99;
//   - gc: runtime.GC() while 8 such guests spin (compiler), p50 and
//     p99, and the p99 of the stop-the-world pauses. Without the charge
//     (charged one unit per instruction) both were seconds.
func BenchmarkBulk(b *testing.B) {
	ctx := context.Background()
	wasm := wat(b, bulkSpinSrc)
	variants := []spinVariant{{name: "none"}, {name: "fuel=128k", fuel: 1 << 17}}
	b.Run("op", func(b *testing.B) {
		for _, e := range engines {
			for _, op := range []struct {
				name     string
				op, size uint64
			}{{"memory.fill", 0, 1 << 16}, {"memory.copy", 1, 1 << 16}, {"table.fill", 2, wasmcode.TableStep}} {
				for _, v := range variants {
					b.Run(e.name+"/"+op.name+"/"+v.name, func(b *testing.B) {
						newInstance, closeRT := spinRuntime(b, wasm, v, e.interp, nil)
						defer closeRT()
						count := newInstance().ExportedFunction("count")
						for b.Loop() {
							ctx := context.WithValue(ctx, callStateKey{}, &callState{}) // as Call has it
							if _, err := count.Call(ctx, op.op, 64, op.size); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(64*op.size), "ns/unit")
					})
				}
			}
		}
	})
	stoppable := variants[1:]
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
