package wasmrt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/linearmem"
	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// frameCases are recursive functions $f(n) whose frames hold many values
// across the recursive call in the ways that cost each engine most: locals,
// operands, one definition after another (each a spill slot of its own in
// the compiler), phis at nested loop headers, v128 values. At n = 0, $f
// calls the host's probe.
func frameCases() map[string]string {
	hdr := `(module (import "probe" "sp" (func $sp (param i32))) (memory 1)
  (func $g (result i64) (i64.const 1))
  (func $f (export "f") (param $n i32) (result i64) (local $x i64) (local $v v128) LOCALS
    (if (i32.eqz (local.get $n)) (then (call $sp (i32.const 0)) (return (i64.const 0))))
`
	rec := `(call $f (i32.sub (local.get $n) (i32.const 1)))`
	rep := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i))
			b.WriteByte('\n')
		}
		return b.String()
	}
	c := map[string]string{
		"small": `(i64.add ` + rec + ` (i64.extend_i32_u (local.get $n)))`,
		"locals": rep(200, func(i int) string { return fmt.Sprintf("(local.set %d (i64.const %d))", i+3, i) }) +
			`(local.set $x ` + rec + `)` +
			rep(200, func(i int) string { return fmt.Sprintf("(local.set $x (i64.add (local.get $x) (local.get %d)))", i+3) }) +
			`(local.get $x)`,
		"operands": rep(200, func(i int) string {
			return fmt.Sprintf("(i64.add (i64.extend_i32_u (local.get $n)) (i64.const %d))", i)
		}) +
			rec + rep(200, func(int) string { return "i64.add" }),
		"definitions": rep(300, func(int) string { return "(local.set $x (i64.add (local.get $x) (call $g)))" }) +
			`(i64.add (local.get $x) ` + rec + `)`,
		"phis": rep(30, func(j int) string { return fmt.Sprintf("(loop $p%d", j) }) +
			rep(30, func(i int) string { return fmt.Sprintf("(local.set %d (i64.add (local.get %d) (call $g)))", i+3, i+3) }) +
			rep(30, func(j int) string { return fmt.Sprintf("(br_if $p%d (i64.eqz (local.get %d))))", 29-j, j+3) }) +
			`(local.set $x ` + rec + `)` +
			rep(30, func(i int) string { return fmt.Sprintf("(local.set $x (i64.add (local.get $x) (local.get %d)))", i+3) }) +
			`(local.get $x)`,
		"v128": rep(100, func(i int) string {
			return fmt.Sprintf("(i32x4.mul (v128.load offset=%d (i32.const 0)) (local.get $v))", i*16)
		}) +
			`(local.set $v (i64x2.splat ` + rec + `))` + rep(99, func(int) string { return "i32x4.add" }) +
			`(i64x2.extract_lane 0 (i32x4.add (local.get $v)))`,
	}
	for name, body := range c {
		locals := ""
		if name == "locals" || name == "phis" {
			locals = "(local" + strings.Repeat(" i64", 200) + ")"
		}
		c[name] = strings.Replace(hdr, "LOCALS", locals, 1) + body + "))"
	}
	return c
}

// TestFrameCostCoversEngines checks the frame cost model (stack.go) against
// what each engine's frames really take: the charge of a frame is at least
// three times its bytes (the stacks grow by doubling and copying). It
// measures them with a host function called at the bottom of a recursion
// 300 deep (once before, to grow the stacks) and then 1 deep: the distance between the two calls' stack
// addresses, on the engine's stack (the compiler's native stack, the
// interpreter's operand stack) and on the goroutine's (the interpreter
// runs each wasm call as a Go call).
func TestFrameCostCoversEngines(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, src := range frameCases() {
		path := filepath.Join(dir, name+".wat")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		wasm := hosttest.Wasm(t, path)
		for _, interp := range []bool{false, true} {
			g, err := guardModule(wasm, interp, 0)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cost := g.FrameCosts[len(g.FrameCosts)-1] // $f is the last function
			rc := wazero.NewRuntimeConfig()
			if interp {
				rc = wazero.NewRuntimeConfigInterpreter()
			}
			rt := wazero.NewRuntimeWithConfig(ctx, rc)
			if err := instantiateFuel(ctx, rt); err != nil {
				t.Fatal(err)
			}
			var engineSP, goSP []uintptr
			_, err = rt.NewHostModuleBuilder("probe").NewFunctionBuilder().
				WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
					var x int
					engineSP = append(engineSP, uintptr(unsafe.Pointer(&stack[0])))
					goSP = append(goSP, uintptr(unsafe.Pointer(&x)))
				}), []api.ValueType{api.ValueTypeI32}, nil).
				Export("sp").Instantiate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mod, err := rt.Instantiate(ctx, g.Wasm)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, e := range []string{wasmcode.LeftExport, wasmcode.LowExport} {
				mod.ExportedGlobal(e).(api.MutableGlobal).Set(1 << 40)
			}
			// Grow the stacks first, and keep the collector from moving the
			// goroutine's stack between the two measured calls.
			const depth = 300
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			f := mod.ExportedFunction("f") // one engine stack for the three calls
			for _, n := range []uint64{depth, depth, 1} {
				if _, err := f.Call(ctx, n); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			dist := func(a []uintptr) uint64 {
				d := int64(a[2]) - int64(a[1])
				return uint64(max(d, -d)) / (depth - 1)
			}
			used := dist(engineSP) + dist(goSP)
			t.Logf("%-11s interpreter=%-5v %6d bytes a frame, charged %7d", name, interp, used, cost)
			// Go frames are larger under the race detector than in the
			// product: the interpreter's are not checked there.
			if 3*used > cost && !(interp && raceEnabled) {
				t.Errorf("%s, interpreter=%v: a frame takes %d bytes, charged %d: want at least three times its bytes", name, interp, used, cost)
			}
			_ = rt.Close(ctx)
		}
	}
}

// instrumented compiles the WAT src instrumented for the engine and
// instantiates it with a limitedAllocator over pool bytes, attached as
// Module.Call attaches it (the start function is not run).
func instrumented(t *testing.T, src string, interp bool, pool uint64) (api.Module, *limitedAllocator) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.wat")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := guardModule(hosttest.Wasm(t, path), interp, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc := wazero.NewRuntimeConfig()
	if interp {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	t.Cleanup(func() { _ = rt.Close(ctx) })
	if err := instantiateFuel(ctx, rt); err != nil {
		t.Fatal(err)
	}
	cache := linearmem.NewCache()
	t.Cleanup(cache.Close)
	alloc := &limitedAllocator{pool: pool, cache: cache}
	t.Cleanup(alloc.release)
	mod, err := rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, alloc), mustCompile(t, rt, g.Wasm), wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	alloc.attach(mod.ExportedGlobal(wasmcode.LeftExport).(api.MutableGlobal), mod.ExportedGlobal(wasmcode.LowExport).(api.MutableGlobal))
	return mod, alloc
}

func mustCompile(t testing.TB, rt wazero.Runtime, wasm []byte) wazero.CompiledModule {
	t.Helper()
	c, err := rt.CompileModule(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFrameChargeGivenBack: every way out of a function (return from a
// nested block, br to the function's label with several results, br_table
// to it, falling off the end) gives its frame's charge back; memory.grow
// and ref.func are charged for good, also in a function that returns
// right after memory.grow (the compiler must reload the pool then); the
// start function runs only when the host runs it.
func TestFrameChargeGivenBack(t *testing.T) {
	const src = `(module (memory (export "memory") 1)
  (global $set (mut i32) (i32.const 0))
  (func $init (global.set $set (i32.const 42)))
  (start $init)
  (func (export "set") (result i32) (global.get $set))
  (func (export "early") (param i32) (result i32)
    (block (block (br_if 1 (local.get 0)) (return (i32.const 1)))) (i32.const 2))
  (func (export "pair") (param i32) (result i32 i64)
    (i32.const 7) (i64.const 8) (br_if 0 (local.get 0)) (drop) (drop) (i32.const 9) (i64.const 10))
  (func (export "table") (param i32) (result i32)
    (i32.const 4) (block (param i32) (result i32) (br_table 0 1 (local.get 0))) (drop) (i32.const 5))
  (func $grow (export "grow") (drop (memory.grow (i32.const 1))))
  (func (export "ref") (drop (ref.func $grow)))
  (elem declare func $grow))`
	ctx := context.Background()
	for _, interp := range []bool{false, true} {
		mod, alloc := instrumented(t, src, interp, 4<<20)
		left := func() int64 { return int64(mod.ExportedGlobal(wasmcode.LeftExport).Get()) }
		call := func(name string, want []uint64, args ...uint64) {
			t.Helper()
			before := left()
			got, err := mod.ExportedFunction(name).Call(ctx, args...)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("interpreter=%v: %s%v = %v, %v; want %v", interp, name, args, got, err, want)
			}
			if after := left(); after != before {
				t.Errorf("interpreter=%v: %s%v left %d bytes of the pool charged", interp, name, args, before-after)
			}
		}
		call("early", []uint64{1}, 0)
		call("early", []uint64{2}, 1)
		call("pair", []uint64{9, 10}, 0)
		call("pair", []uint64{7, 8}, 1)
		call("table", []uint64{5}, 0)
		call("table", []uint64{4}, 1)
		call("set", []uint64{0})
		if _, err := mod.ExportedFunction(wasmcode.StartExport).Call(ctx); err != nil {
			t.Fatal(err)
		}
		call("set", []uint64{42})

		before, charged := left(), alloc.charged
		if _, err := mod.ExportedFunction("grow").Call(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := before-left(), int64(alloc.charged-charged); got != wasmcode.PageSize || want != wasmcode.PageSize {
			t.Errorf("interpreter=%v: memory.grow of one page took %d bytes from the pool (allocator: %d), want %d", interp, got, want, wasmcode.PageSize)
		}
		before = left()
		if _, err := mod.ExportedFunction("ref").Call(ctx); err != nil {
			t.Fatal(err)
		}
		if got := before - left(); got != wasmcode.RefFuncBytes {
			t.Errorf("interpreter=%v: ref.func took %d bytes from the pool, want %d", interp, got, wasmcode.RefFuncBytes)
		}
		if l, w := left(), int64(mod.ExportedGlobal(wasmcode.LowExport).Get()); w > l {
			t.Errorf("interpreter=%v: low-water mark %d above what is left, %d", interp, w, l)
		}
	}
}
