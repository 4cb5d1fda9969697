package wasmrt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

var engines = []struct {
	name   string
	interp bool
}{{"compiler", false}, {"interpreter", true}}

// fuelCounter counts the fuel checks of one call (fuelHookKey) and closes
// first at the first of them.
type fuelCounter struct {
	n, stopped atomic.Int64
	once       sync.Once
	first      chan struct{}
}

func newFuelCounter() *fuelCounter { return &fuelCounter{first: make(chan struct{})} }

func (c *fuelCounter) hook(stopping bool) {
	if stopping {
		c.stopped.Add(1)
	}
	c.n.Add(1)
	c.once.Do(func() { close(c.first) })
}

func (c *fuelCounter) context(ctx context.Context) context.Context {
	return context.WithValue(ctx, fuelHookKey{}, c.hook)
}

// TestFuelStopsSpinningGuests: a guest that never ends — a tight loop, a
// call tree with no loop, a loop of memory.grow, loops of bulk
// instructions over 4 MiB of memory or 65,536 table entries — stops at a
// cancel and at its timeout, in both engines, and it is the fuel check
// that stops it. (Charged one unit each, the bulk loops ran for tens of
// seconds between two checks.)
func TestFuelStopsSpinningGuests(t *testing.T) {
	for _, e := range engines {
		m := load(t, newRuntime(t, Config{Interpreter: e.interp}), "spin")
		for _, tool := range []string{"loop", "calls", "grow", "fill", "memcopy", "tablefill"} {
			t.Run(e.name+"/"+tool+"/cancel", func(t *testing.T) {
				fc := newFuelCounter()
				ctx, cancel := context.WithCancel(fc.context(context.Background()))
				defer cancel()
				errc := make(chan error, 1)
				go func() {
					_, err := m.Call(ctx, tool, nil, with(Limits{Timeout: time.Hour}), nil)
					errc <- err
				}()
				<-fc.first // the guest is spinning
				cancel()
				err := <-errc
				var ge *GuestError
				if !errors.As(err, &ge) || ge.Kind != KindCanceled || !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v, want a GuestError of kind %q that is context.Canceled", err, KindCanceled)
				}
				if fc.stopped.Load() != 1 {
					t.Errorf("%d fuel checks ended the guest (%d checks in all), want 1", fc.stopped.Load(), fc.n.Load())
				}
			})
			t.Run(e.name+"/"+tool+"/timeout", func(t *testing.T) {
				fc := newFuelCounter()
				_, err := m.Call(fc.context(context.Background()), tool, nil, with(Limits{Timeout: 20 * time.Millisecond}), nil)
				var ge *GuestError
				if !errors.As(err, &ge) || ge.Kind != KindTimeout {
					t.Fatalf("got %v, want a GuestError of kind %q", err, KindTimeout)
				}
				if fc.stopped.Load() != 1 {
					t.Errorf("%d fuel checks ended the guest (%d checks in all), want 1", fc.stopped.Load(), fc.n.Load())
				}
			})
		}
	}
}

// TestFuelPerInstance: calls of one module spinning side by side have a
// counter each; ending one leaves the others running (their checks go
// on) until they end in turn.
func TestFuelPerInstance(t *testing.T) {
	m := load(t, newRuntime(t, Config{}), "spin")
	const n = 3
	var (
		counters [n]*fuelCounter
		cancels  [n]context.CancelFunc
		errs     [n]chan error
	)
	for i := range n {
		counters[i] = newFuelCounter()
		var ctx context.Context
		ctx, cancels[i] = context.WithCancel(counters[i].context(context.Background()))
		defer cancels[i]()
		errs[i] = make(chan error, 1)
		go func() {
			_, err := m.Call(ctx, "loop", nil, with(Limits{Timeout: time.Hour}), nil)
			errs[i] <- err
		}()
	}
	for i := range n {
		<-counters[i].first
	}
	cancels[0]()
	if err := <-errs[0]; !errors.Is(err, context.Canceled) {
		t.Fatalf("call 0: got %v, want context.Canceled", err)
	}
	for i := 1; i < n; i++ {
		// Two more checks: the guest is past the cancel of call 0.
		for seen := counters[i].n.Load(); counters[i].n.Load() < seen+2; {
			select {
			case err := <-errs[i]:
				t.Fatalf("call %d ended with call 0: %v", i, err)
			default:
			}
		}
		cancels[i]()
		if err := <-errs[i]; !errors.Is(err, context.Canceled) {
			t.Errorf("call %d: got %v, want context.Canceled", i, err)
		}
	}
}

// fuelled compiles the WAT src as Load instruments it for the engine, in a
// runtime with the fuel module and a module "t" whose function "ten"
// returns 10, and instantiates it with an ample memory pool (the start
// function is not run).
func fuelled(t *testing.T, wasm []byte, interp bool) api.Module {
	t.Helper()
	ctx := context.Background()
	g, err := guardModule(wasm, interp, 0)
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
	_, err = rt.NewHostModuleBuilder("t").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) { stack[0] = 10 }),
			nil, []api.ValueType{api.ValueTypeI32}).
		Export("ten").Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateModule(ctx, mustCompile(t, rt, g.Wasm), wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{wasmcode.LeftExport, wasmcode.LowExport} {
		mod.ExportedGlobal(e).(api.MutableGlobal).Set(1 << 40)
	}
	return mod
}

func wat(t testing.TB, src string, flags ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.wat")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(flags) == 0 {
		return hosttest.Wasm(t, path)
	}
	out := path + ".wasm"
	if b, err := exec.Command("wat2wasm", append(flags, path, "-o", out)...).CombinedOutput(); err != nil {
		if _, lookErr := exec.LookPath("wat2wasm"); lookErr != nil {
			hosttest.MissingToolchain(t, "apt-get install wabt", "wat2wasm is not installed")
		}
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// TestFuelRenumbersFunctions: the fuel check is imported after the
// module's imports, so every defined function moves up by one; calls,
// ref.func, element segments (indices and expressions), global
// initializers, exports, the start function and the name section all
// still name the same function.
func TestFuelRenumbersFunctions(t *testing.T) {
	const src = `(module
  (import "t" "ten" (func $ten (result i32)))
  (type $t (func (result i32)))
  (memory (export "memory") 1)
  (table 4 funcref)
  (global $g funcref (ref.func $two))
  (global $s (mut i32) (i32.const 0))
  (elem (i32.const 0) $one $two $ten)
  (elem (table 0) (i32.const 3) funcref (ref.func $three))
  (func $one (result i32) (i32.const 1))
  (func $two (result i32) (i32.const 2))
  (func $three (export "three") (result i32) (i32.const 3))
  (func $init (global.set $s (i32.const 5)))
  (start $init)
  (func (export "s") (result i32) (global.get $s))
  (func (export "ind") (param i32) (result i32) (call_indirect (type $t) (local.get 0)))
  (func (export "direct") (result i32) (i32.add (call $one) (call $ten)))
  (func (export "rf") (result i32)
    (table.set 0 (i32.const 0) (ref.func $three)) (call_indirect (type $t) (i32.const 0)))
  (func (export "glob") (result i32)
    (table.set 0 (i32.const 0) (global.get $g)) (call_indirect (type $t) (i32.const 0)))
  (func $boom (export "boom") (unreachable)))`
	wasm := wat(t, src, "--debug-names")
	ctx := context.Background()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			mod := fuelled(t, wasm, e.interp)
			for _, c := range []struct {
				fn   string
				args []uint64
				want uint64
			}{
				{"ind", []uint64{0}, 1}, {"ind", []uint64{1}, 2}, {"ind", []uint64{2}, 10}, {"ind", []uint64{3}, 3},
				{"direct", nil, 11}, {"three", nil, 3}, {"rf", nil, 3}, {"glob", nil, 2}, {"s", nil, 0},
			} {
				got, err := mod.ExportedFunction(c.fn).Call(ctx, c.args...)
				if err != nil || len(got) != 1 || got[0] != c.want {
					t.Errorf("%s%v = %v, %v; want %d", c.fn, c.args, got, err, c.want)
				}
			}
			if _, err := mod.ExportedFunction(wasmcode.StartExport).Call(ctx); err != nil {
				t.Fatal(err)
			}
			if got, _ := mod.ExportedFunction("s").Call(ctx); len(got) != 1 || got[0] != 5 {
				t.Errorf("after the start function, s = %v, want 5", got)
			}
			_, err := mod.ExportedFunction("boom").Call(ctx)
			if err == nil || !strings.Contains(err.Error(), ".boom()") {
				t.Errorf("the trap's trace is %v, want it to name boom", err)
			}
		})
	}
}

// TestFuelWeights: a loop's header charges the loop's instructions, so the
// checks of a counted loop are its instructions over fuelPerCheck.
func TestFuelWeights(t *testing.T) {
	// The loop has 9 instructions after its header, end included.
	const src = `(module (memory (export "memory") 1)
  (func (export "count") (param $n i32) (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))))`
	wasm := wat(t, src)
	const iterations, weight = 1 << 22, 9
	for _, e := range engines {
		mod := fuelled(t, wasm, e.interp)
		var checks atomic.Int64
		ctx := context.WithValue(context.Background(), callStateKey{}, &callState{onFuel: func(bool) { checks.Add(1) }})
		if _, err := mod.ExportedFunction("count").Call(ctx, iterations); err != nil {
			t.Fatal(err)
		}
		want := int64(iterations * weight / int64(fuelPerCheck))
		if got := checks.Load(); got < want-1 || got > want+1 {
			t.Errorf("%s: %d fuel checks, want %d±1 (%d iterations of %d instructions, %d between checks)",
				e.name, got, want, iterations, weight, fuelPerCheck)
		}
	}
}

// TestFuelRefusals: a guest can neither import the fuel check itself nor
// reach the fuel counter.
func TestFuelRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     string
		refused string
	}{
		{"imports the fuel check", `(module (import "wasmtask:runtime" "fuel" (func (result i32))) (memory (export "memory") 1)
		  (func (export "_start")))`, `the module "wasmtask:runtime" is the host's own`},
		{"imports from the fuel module, anything", `(module (import "wasmtask:runtime" "x" (global i32)) (memory (export "memory") 1)
		  (func (export "_start")))`, `the module "wasmtask:runtime" is the host's own`},
		{"sets the fuel global", `(module (memory (export "memory") 1) (global (mut i32) (i32.const 0))
		  (func (export "_start") (global.set 3 (i32.const 1))))`, "global index 3 out of range"},
		{"exports the fuel global", `(module (memory (export "memory") 1) (global (mut i32) (i32.const 0))
		  (func (export "_start")) (export "g" (global 3)))`, "global index 3 out of range"},
		{"exports the reload function", `(module (memory (export "memory") 1)
		  (func (export "_start")) (export "f" (func 1)))`, "function index 1 out of range"},
		{"puts the reload function in a table", `(module (memory (export "memory") 1) (table 1 funcref)
		  (func (export "_start")) (elem (i32.const 0) 1))`, "function index 1 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wasm := wat(t, tc.src, "--no-check")
			_, err := guardModule(wasm, false, 0)
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("guardModule: got %v, want a refusal saying %q", err, tc.refused)
			}
			r := newRuntime(t, Config{})
			if _, err := r.Load(context.Background(), "m", wasm, loadLimits); !errors.Is(err, ErrCompile) {
				t.Errorf("Load: got %v, want ErrCompile", err)
			}
		})
	}
}
