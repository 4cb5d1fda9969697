package wasmrt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// benchModule is one module of the call benchmarks.
type benchModule struct {
	name, tool, args string
	wasm             func(testing.TB) []byte
}

func defaultTool(name string) func(testing.TB) []byte {
	return func(tb testing.TB) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "defaulttools", name+".wasm"))
		if err != nil {
			tb.Skipf("default tool %s: %v", name, err)
		}
		return b
	}
}

var benchModules = []benchModule{
	{"wat", "hello", `{}`, func(tb testing.TB) []byte { return wasmFile(tb, "ok") }},
	{"c", "env", `{"path":"HOME"}`, func(tb testing.TB) []byte { return wasmFile(tb, "fsguest") }},
	{"add", "add", `{"a":1,"b":2}`, defaultTool("add")},
	{"sha256", "sha256", `{"text":"abc"}`, defaultTool("sha256")},
	{"go-demo", "word_count", `{"text":"a b c"}`, defaultTool("demo")},
}

// BenchmarkCall compares one call through wasmrt with the bare wazero work
// it wraps (instantiate with stdin/stdout and run _start) on the same
// runtime settings. The ratio of the two is wasmrt's overhead.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	for _, bm := range benchModules {
		b.Run(bm.name, func(b *testing.B) {
			wasm := bm.wasm(b)
			r := newRuntime(b, Config{})
			m, err := r.Load(ctx, bm.name, wasm, loadLimits)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(ctx)
			b.Run("wasmrt", func(b *testing.B) {
				for b.Loop() {
					if _, err := m.Call(ctx, bm.tool, json.RawMessage(bm.args), testLimits, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("wazero", func(b *testing.B) { benchBareCall(b, wasm, bm, false) })
			b.Run("wazero-guarded", func(b *testing.B) { benchBareCall(b, wasm, bm, true) })
		})
	}
}

// benchBareCall is the bare wazero work of one call: instantiate with
// stdin/stdout and run _start, stopped by wazero's own close on context
// done. guarded runs the module as the host compiles it (guardModule:
// frame charges, the fuel counter, the pool's globals) on a runtime
// without close on context done, as the host's, so that the
// instrumentation's cost reads apart from the host's own work on the
// call path.
func benchBareCall(b *testing.B, wasm []byte, bm benchModule, guarded bool) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(!guarded))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if err := instantiateHost(ctx, rt); err != nil {
		b.Fatal(err)
	}
	if err := instantiateFuel(ctx, rt); err != nil {
		b.Fatal(err)
	}
	hasStart := false
	if guarded {
		g, err := guardModule(wasm, false, 64<<20)
		if err != nil {
			b.Fatal(err)
		}
		wasm, hasStart = g.Wasm, g.HasStart
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	req, _ := json.Marshal(abi.Request{ABI: 1, Method: abi.MethodCall, Tool: bm.tool, Arguments: json.RawMessage(bm.args)})
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		cfg := wazero.NewModuleConfig().WithName("").WithRandSource(rand.Reader).
			WithStdin(bytes.NewReader(req)).WithStdout(&out)
		if guarded {
			cfg = cfg.WithStartFunctions()
		}
		mod, err := rt.InstantiateModule(ctx, compiled, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if guarded {
			for _, name := range []string{wasmcode.LeftExport, wasmcode.LowExport} {
				mod.ExportedGlobal(name).(api.MutableGlobal).Set(api.EncodeI64(64 << 20))
			}
			for _, name := range []string{wasmcode.StartExport, abi.ExportStart} {
				if name == wasmcode.StartExport && !hasStart {
					continue
				}
				if _, err := mod.ExportedFunction(name).Call(ctx); err != nil {
					if exit, ok := err.(*sys.ExitError); !ok || exit.ExitCode() != 0 {
						b.Fatal(err)
					}
				}
			}
		}
		mod.Close(ctx)
		if out.Len() == 0 {
			b.Fatal("no output")
		}
	}
}

// BenchmarkLoad measures Load in a fresh Runtime: compile (cold) or read
// compiled code from a filled cache directory (warm), plus describe.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	for _, bm := range benchModules {
		b.Run(bm.name, func(b *testing.B) {
			wasm := bm.wasm(b)
			key := filepath.Join(b.TempDir(), "key")
			loadOnce := func(cacheDir string) {
				cfg := Config{MaxMemoryMiB: 256}
				if cacheDir != "" {
					cfg.CacheDir, cfg.MaxCacheMiB, cfg.CacheKeyFile = cacheDir, 1024, key
				}
				r, err := New(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Load(ctx, bm.name, wasm, loadLimits); err != nil {
					b.Fatal(err)
				}
				r.Close(ctx)
			}
			b.Run("cold", func(b *testing.B) {
				for b.Loop() {
					loadOnce("")
				}
			})
			b.Run("warm-cache-dir", func(b *testing.B) {
				dir := b.TempDir()
				loadOnce(dir)
				for b.Loop() {
					loadOnce(dir)
				}
			})
		})
	}
}

// BenchmarkLiveInstanceMemory holds n calls alive at once (blocked in
// elicit) and reports the Go heap held per live instance.
func BenchmarkLiveInstanceMemory(b *testing.B) {
	ctx := context.Background()
	cases := []struct {
		name, module, tool, args string
		wasm                     func(testing.TB) []byte
	}{
		{"wat", "ok", "ask", `{}`, func(tb testing.TB) []byte { return wasmFile(tb, "ok") }},
		{"go-demo", "demo", "long_job", `{"steps":2,"delay_ms":1}`, defaultTool("demo")},
	}
	const n = 20
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r := newRuntime(b, Config{})
			m, err := r.Load(ctx, c.module, c.wasm(b), loadLimits)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(ctx)
			var perInstance float64
			for b.Loop() {
				var arrived, release sync.WaitGroup
				arrived.Add(n)
				release.Add(1)
				ev := &events{elicit: func(ctx context.Context, _ abi.ElicitRequest) (abi.ElicitReply, error) {
					arrived.Done()
					release.Wait()
					return abi.ElicitReply{Action: "decline"}, nil
				}}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() { m.Call(ctx, c.tool, json.RawMessage(c.args), testLimits, ev) })
				}
				arrived.Wait()
				runtime.GC()
				runtime.ReadMemStats(&after)
				release.Done()
				wg.Wait()
				perInstance = float64(after.HeapAlloc-before.HeapAlloc) / n
			}
			b.ReportMetric(perInstance/1024, "KiB/instance")
		})
	}
}

// BenchmarkFrameCharge measures what the stack instrumentation (stack.go)
// costs a call-heavy guest: fib(22), about 57000 calls, on both engines,
// as the host compiled it before (an empty loop at the function's entry,
// so that wazero's close-on-done check runs at every call) and as it does
// now (that loop and the frame charge).
func BenchmarkFrameCharge(b *testing.B) {
	ctx := context.Background()
	const fib = `(module (memory (export "memory") 1)
  (func $fib (export "fib") (param i32) (result i32)
    LOOP
    (if (result i32) (i32.lt_u (local.get 0) (i32.const 2))
      (then (local.get 0))
      (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))
                     (call $fib (i32.sub (local.get 0) (i32.const 2))))))))`
	build := func(name, src string) []byte {
		path := filepath.Join(b.TempDir(), name+".wat")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		return hosttest.Wasm(b, path)
	}
	entryLoop := build("loop", strings.Replace(fib, "LOOP", "(loop)", 1))
	plain := build("plain", strings.Replace(fib, "LOOP", "", 1))
	for _, interp := range []bool{false, true} {
		g, err := guardModule(plain, interp, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range []struct {
			name string
			wasm []byte
		}{{"entry-loop", entryLoop}, {"instrumented", g.Wasm}} {
			b.Run(map[bool]string{false: "compiler", true: "interpreter"}[interp]+"/"+v.name, func(b *testing.B) {
				rc := wazero.NewRuntimeConfig()
				if interp {
					rc = wazero.NewRuntimeConfigInterpreter()
				}
				rt := wazero.NewRuntimeWithConfig(ctx, rc.WithCloseOnContextDone(true))
				defer rt.Close(ctx)
				if err := instantiateFuel(ctx, rt); err != nil {
					b.Fatal(err)
				}
				mod, err := rt.InstantiateModule(ctx, mustCompile(b, rt, v.wasm), wazero.NewModuleConfig().WithStartFunctions())
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range []string{wasmcode.LeftExport, wasmcode.LowExport} {
					if g, ok := mod.ExportedGlobal(e).(api.MutableGlobal); ok {
						g.Set(1 << 40)
					}
				}
				fib := mod.ExportedFunction("fib")
				for b.Loop() {
					if _, err := fib.Call(ctx, 22); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
