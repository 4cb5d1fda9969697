package wasmrt

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// bulkSrc exports each bulk instruction as a function of its operands, and
// tsum, a checksum of the table: Σ (i+1)·f(i) over its entries, f(i) the
// result of calling entry i (0 for a null entry). The passive data segment
// is dataLen bytes long.
const dataLen = 100_000

func bulkSrc() string {
	var data strings.Builder
	for i := range dataLen {
		fmt.Fprintf(&data, "\\%02x", byte(i*7+3))
	}
	return `(module
  (type $r (func (result i32)))
  (memory (export "memory") 4)
  (table $t 20000 40000 funcref)
  (func $a (result i32) (i32.const 1))
  (func $b (result i32) (i32.const 2))
  (func $c (result i32) (i32.const 3))
  (elem $e func $a $b $c)
  (data $d "` + data.String() + `")
  (func (export "fill") (param i32 i32 i32) (memory.fill (local.get 0) (local.get 1) (local.get 2)))
  (func (export "copy") (param i32 i32 i32) (memory.copy (local.get 0) (local.get 1) (local.get 2)))
  (func (export "init") (param i32 i32 i32) (memory.init $d (local.get 0) (local.get 1) (local.get 2)))
  (func (export "drop") (data.drop $d))
  (func (export "tfill") (param i32 i32) (table.fill $t (local.get 0) (ref.func $b) (local.get 1)))
  (func (export "tcopy") (param i32 i32 i32) (table.copy $t $t (local.get 0) (local.get 1) (local.get 2)))
  (func (export "tinit") (param i32 i32 i32) (table.init $t $e (local.get 0) (local.get 1) (local.get 2)))
  (func (export "tgrow") (param i32) (result i32) (table.grow $t (ref.func $c) (local.get 0)))
  (func (export "tsum") (result i64) (local $i i32) (local $s i64)
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (table.size $t)))
      (if (i32.eqz (ref.is_null (table.get $t (local.get $i)))) (then
        (local.set $s (i64.add (local.get $s)
          (i64.mul (i64.extend_i32_u (i32.add (local.get $i) (i32.const 1)))
                   (i64.extend_i32_u (call_indirect $t (type $r) (local.get $i))))))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    (local.get $s)))`
}

// TestBulkSemantics: the helpers that replace bulk instructions do what the
// instructions do — the same memory and table afterwards, the same traps —
// for lengths of one step and of many, overlapping copies in both
// directions, and the edges of memory, table and segment, in both engines.
func TestBulkSemantics(t *testing.T) {
	wasm := wat(t, bulkSrc())
	type op struct {
		fn   string
		args []uint64
	}
	const mem = 4 << 16
	cases := []struct {
		name string
		ops  []op
		trap bool // the last op traps (memory and table are then not compared)
	}{
		{"fill one step", []op{{"fill", []uint64{3, 0xab, 1000}}}, false},
		{"fill many steps", []op{{"fill", []uint64{3, 0xab, 200_001}}}, false},
		{"fill to the end", []op{{"fill", []uint64{7, 1, mem - 7}}}, false},
		{"fill nothing at the end", []op{{"fill", []uint64{mem, 1, 0}}}, false},
		{"fill nothing past the end", []op{{"fill", []uint64{mem + 1, 1, 0}}}, true},
		{"fill past the end", []op{{"fill", []uint64{1, 1, mem}}}, true},
		{"fill huge", []op{{"fill", []uint64{0, 1, 1<<32 - 1}}}, true},
		{"fill wrapping", []op{{"fill", []uint64{1<<32 - 16, 1, 1 << 17}}}, true},
		{"copy forward, overlapping", []op{{"copy", []uint64{0, 1000, 200_000}}}, false},
		{"copy backward, overlapping", []op{{"copy", []uint64{1000, 0, 200_000}}}, false},
		{"copy backward, by one", []op{{"copy", []uint64{1, 0, mem - 1}}}, false},
		{"copy onto itself", []op{{"copy", []uint64{5, 5, 150_000}}}, false},
		{"copy far", []op{{"copy", []uint64{200_000, 3, 60_000}}}, false},
		{"copy source past the end", []op{{"copy", []uint64{0, 100, mem - 99}}}, true},
		{"copy destination past the end", []op{{"copy", []uint64{100, 0, mem - 99}}}, true},
		{"copy backward wrapping", []op{{"copy", []uint64{1<<32 - 16, 0, 1 << 17}}}, true},
		{"init many steps", []op{{"init", []uint64{10, 5, dataLen - 5}}}, false},
		{"init past the segment", []op{{"init", []uint64{10, 5, dataLen - 4}}}, true},
		{"init past memory", []op{{"init", []uint64{mem - 10, 0, 11}}}, true},
		{"init nothing after drop", []op{{"drop", nil}, {"init", []uint64{0, 0, 0}}}, false},
		{"init after drop", []op{{"drop", nil}, {"init", []uint64{0, 1, 0}}}, true},
		{"init one after drop", []op{{"drop", nil}, {"init", []uint64{0, 0, 1}}}, true},
		{"table fill many steps", []op{{"tfill", []uint64{10, 15_000}}}, false},
		{"table fill past the end", []op{{"tfill", []uint64{10, 19_991}}}, true},
		{"table copy forward", []op{{"tfill", []uint64{0, 9000}}, {"tinit", []uint64{9000, 0, 3}}, {"tcopy", []uint64{0, 100, 15_000}}}, false},
		{"table copy backward", []op{{"tinit", []uint64{0, 0, 3}}, {"tfill", []uint64{3, 9000}}, {"tinit", []uint64{9003, 0, 3}}, {"tcopy", []uint64{100, 0, 15_000}}}, false},
		{"table copy past the end", []op{{"tcopy", []uint64{100, 0, 19_901}}}, true},
		{"table init", []op{{"tinit", []uint64{5, 0, 3}}}, false},
		{"table init past the segment", []op{{"tinit", []uint64{5, 1, 3}}}, true},
		{"table grow", []op{{"tgrow", []uint64{100}}, {"tfill", []uint64{19_990, 110}}}, false},
		{"table grow past the maximum", []op{{"tgrow", []uint64{30_000}}}, false},
	}
	ctx := context.Background()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					plain := plainInstance(t, wasm, e.interp)
					guarded := fuelled(t, wasm, e.interp)
					prefill := func(m api.Module) {
						b, _ := m.Memory().Read(0, mem)
						for i := range b {
							b[i] = byte(i * 13)
						}
					}
					prefill(plain)
					prefill(guarded)
					for i, o := range c.ops {
						want, wantErr := plain.ExportedFunction(o.fn).Call(ctx, o.args...)
						got, gotErr := guarded.ExportedFunction(o.fn).Call(ctx, o.args...)
						if (wantErr != nil) != (gotErr != nil) {
							t.Fatalf("op %d %s%v: got error %v, want %v", i, o.fn, o.args, gotErr, wantErr)
						}
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("op %d %s%v = %v, want %v", i, o.fn, o.args, got, want)
						}
						if last := i == len(c.ops)-1; last && (wantErr != nil) != c.trap {
							t.Fatalf("op %d %s%v: error %v, want a trap: %v", i, o.fn, o.args, wantErr, c.trap)
						}
					}
					if c.trap {
						return // the instance is thrown away after a trap
					}
					pm, _ := plain.Memory().Read(0, mem)
					gm, _ := guarded.Memory().Read(0, mem)
					if string(pm) != string(gm) {
						for i := range pm {
							if pm[i] != gm[i] {
								t.Fatalf("memory differs first at byte %d: got %d, want %d", i, gm[i], pm[i])
							}
						}
					}
					want, err1 := plain.ExportedFunction("tsum").Call(ctx)
					got, err2 := guarded.ExportedFunction("tsum").Call(ctx)
					if err1 != nil || err2 != nil || got[0] != want[0] {
						t.Fatalf("table checksum %v (%v), want %v (%v)", got, err2, want, err1)
					}
				})
			}
		})
	}
}

// plainInstance instantiates wasm as it is, without the rewrite.
func plainInstance(t *testing.T, wasm []byte, interp bool) api.Module {
	t.Helper()
	ctx := context.Background()
	rc := wazero.NewRuntimeConfig()
	if interp {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	t.Cleanup(func() { _ = rt.Close(ctx) })
	mod, err := rt.InstantiateModule(ctx, mustCompile(t, rt, wasm), wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestBulkChargesFuel: a bulk instruction is charged by its length, so the
// fuel checks of a loop of them count its bytes (or entries), not its
// iterations: at least length/(units per fuel)/fuelPerCheck checks.
func TestBulkChargesFuel(t *testing.T) {
	wasm := wat(t, bulkSrc())
	const iterations = 64
	for _, e := range engines {
		for _, c := range []struct {
			fn    string
			args  []uint64
			units uint64 // bytes or entries
			fuel  uint64 // fuel per unit, times 4
		}{
			{"fill", []uint64{0, 9, 4 << 16}, 4 << 16, 4 >> wasmcode.MemFuelShift},
			{"copy", []uint64{0, 1, 4<<16 - 1}, 4<<16 - 1, 4 >> wasmcode.MemFuelShift},
			{"init", []uint64{0, 0, dataLen}, dataLen, 4 >> wasmcode.MemFuelShift},
			{"tfill", []uint64{0, 20_000}, 20_000, 4 << wasmcode.TableFuelShift},
			{"tcopy", []uint64{0, 1, 19_999}, 19_999, 4 << wasmcode.TableFuelShift},
		} {
			t.Run(e.name+"/"+c.fn, func(t *testing.T) {
				mod := fuelled(t, wasm, e.interp)
				var checks atomic.Int64
				ctx := context.WithValue(context.Background(), callStateKey{}, &callState{onFuel: func(bool) { checks.Add(1) }})
				for range iterations {
					if _, err := mod.ExportedFunction(c.fn).Call(ctx, c.args...); err != nil {
						t.Fatal(err)
					}
				}
				want := int64(iterations*c.units*c.fuel/4/uint64(fuelPerCheck)) - 1
				if got := checks.Load(); got < want {
					t.Errorf("%d fuel checks for %d × %s of %d, want at least %d", got, iterations, c.fn, c.units, want)
				}
			})
		}
	}
}

// TestBulkHelpersShared: one helper per instruction and immediates, however
// many times the module uses it.
func TestBulkHelpersShared(t *testing.T) {
	const src = `(module (memory (export "memory") 1)
  (func (memory.fill (i32.const 0) (i32.const 0) (i32.const 1)))
  (func (memory.fill (i32.const 0) (i32.const 0) (i32.const 2)) (memory.copy (i32.const 0) (i32.const 0) (i32.const 2)))
  (func (memory.fill (i32.const 0) (i32.const 0) (i32.const 3))))`
	g, err := guardModule(wat(t, src), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The module's 3 functions, the reload function and the helpers.
	if n := functionCount(t, g.Wasm); n != 3+1+2 {
		t.Errorf("%d functions, want 6: 3, the reload function and 2 helpers (memory.fill, memory.copy)", n)
	}
}

// functionCount returns the count of the function section of wasm.
func functionCount(t *testing.T, wasm []byte) uint64 {
	t.Helper()
	p := wasm[8:]
	for len(p) > 0 {
		id := p[0]
		size, n := binary.Uvarint(p[1:])
		payload := p[1+n : 1+n+int(size)]
		if id == 3 { // the function section
			count, _ := binary.Uvarint(payload)
			return count
		}
		p = p[1+n+int(size):]
	}
	t.Fatal("no function section")
	return 0
}
