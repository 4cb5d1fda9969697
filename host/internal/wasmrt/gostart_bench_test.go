package wasmrt

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// demoReactor builds the Go demo tool as a pre-initialisable module
// (abi/guest's wasmtask_preinit build), once per test process;
// demoReactorNoWarm the same with the SDK's warming turned off.
var (
	demoReactor       = sync.OnceValues(func() ([]byte, error) { return buildGoReactor("../../../examples/go/demo", "") })
	demoReactorNoWarm = sync.OnceValues(func() ([]byte, error) {
		return buildGoReactor("../../../examples/go/demo", "-X github.com/wasmtask/wasmtask/abi/guest.noWarm=1")
	})
)

// buildGoReactor builds the Go package at pkg (relative to this
// directory) with the guest SDK's wasmtask_preinit build and ldflags.
func buildGoReactor(pkg, ldflags string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "wasmrt-reactor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "tool.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-tags", "wasmtask_preinit", "-trimpath", "-ldflags="+ldflags, "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: msg}
	}
	return os.ReadFile(out)
}

func demoReactorWasm(tb testing.TB) []byte { return goReactorWasm(tb, demoReactor) }

// goReactorWasm returns what build built, or skips tb when it failed.
func goReactorWasm(tb testing.TB, build func() ([]byte, error)) []byte {
	tb.Helper()
	b, err := build()
	if err != nil {
		tb.Skipf("building a Go tool as a reactor: %v", err)
	}
	return b
}

// BenchmarkGoStart measures one call of a Go-built tool (a fresh instance
// each) with each start-up saving off and on, side by side in one run:
// "segments" keeps the module's data segments as they are, "merged" merges
// them at load (datamerge.go); "reactor-init" is the tool built
// pre-initialisable but running _initialize in every instance, "snapshot"
// the same module pre-initialised at load (snapshot.go), "snapshot-nowarm"
// that without the guest SDK's warming of encoding/json (abi/guest/warm.go).
func BenchmarkGoStart(b *testing.B) {
	ctx := context.Background()
	command := defaultTool("demo")
	for _, v := range []struct {
		name  string
		wasm  func(testing.TB) []byte
		setup func(*Runtime)
	}{
		{"segments", command, func(r *Runtime) { r.keepSegments = true }},
		{"merged", command, func(*Runtime) {}},
		{"reactor-init", demoReactorWasm, func(r *Runtime) { r.noPreinit = true }},
		{"snapshot-nowarm", func(tb testing.TB) []byte { return goReactorWasm(tb, demoReactorNoWarm) }, func(*Runtime) {}},
		{"snapshot", demoReactorWasm, func(*Runtime) {}},
	} {
		b.Run(v.name, func(b *testing.B) {
			wasm := v.wasm(b)
			r := newRuntime(b, Config{})
			v.setup(r)
			m, err := r.Load(ctx, "demo", wasm, loadLimits)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.Call(ctx, "word_count", json.RawMessage(`{"text":"a b c"}`), testLimits, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
