package wasmrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// Test modules are written in WAT (testdata/*.wat) and C (testdata/*.c):
// the sources are the truth, no generated binary is checked in. The shared
// fixture builder (hosttest.Wasm) builds each once per test process; a
// missing toolchain skips the tests that need it, except under CI=true.

// wasmFile returns the test module built from testdata/name.wat or .c.
func wasmFile(tb testing.TB, name string) []byte {
	tb.Helper()
	src := filepath.Join("testdata", name+".wat")
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join("testdata", name+".c")
	}
	return hosttest.Wasm(tb, src)
}

// testLimits are the limits of a test call; with fills a Limits' zero
// fields from them.
var testLimits = Limits{MemoryMiB: 64, Timeout: 30 * time.Second, MaxOutputBytes: 1 << 20, MaxLogBytes: 64 << 10}

func with(l Limits) Limits {
	if l.MemoryMiB == 0 {
		l.MemoryMiB = testLimits.MemoryMiB
	}
	if l.Timeout == 0 {
		l.Timeout = testLimits.Timeout
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = testLimits.MaxOutputBytes
	}
	if l.MaxLogBytes == 0 {
		l.MaxLogBytes = testLimits.MaxLogBytes
	}
	return l
}

// loadLimits are the limits of a test load: describe and _initialize get
// 2 s and the memory of a test call.
var loadLimits = with(Limits{Timeout: 2 * time.Second})

// newRuntime starts a Runtime; zero fields of cfg take a 256 MiB ceiling
// and a 1 GiB snapshot budget.
func newRuntime(tb testing.TB, cfg Config) *Runtime {
	tb.Helper()
	if cfg.MaxMemoryMiB == 0 {
		cfg.MaxMemoryMiB = 256
	}
	if cfg.MaxSnapshotMiB == 0 {
		cfg.MaxSnapshotMiB = 1024
	}
	r, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

func load(tb testing.TB, r *Runtime, name string) *Module {
	tb.Helper()
	m, err := r.Load(context.Background(), name, wasmFile(tb, name), loadLimits)
	if err != nil {
		tb.Fatalf("Load %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

// events records what a guest reports. Elicit, when set, answers
// elicitation; otherwise elicitation is unsupported.
type events struct {
	mu       sync.Mutex
	progress []string
	status   []string
	logs     []string
	elicit   func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error)
}

func (e *events) Progress(p, total float64, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.progress = append(e.progress, fmt.Sprintf("%g/%g %s", p, total, msg))
}

func (e *events) Status(msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status = append(e.status, msg)
}

func (e *events) Log(level int32, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.logs = append(e.logs, fmt.Sprintf("%d:%s", level, msg))
}

func (e *events) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	if e.elicit == nil {
		return abi.ElicitReply{}, fmt.Errorf("test: %w", errors.ErrUnsupported)
	}
	return e.elicit(ctx, req)
}

// callText calls tool and returns the text of its first content block.
func callText(tb testing.TB, m *Module, tool, args string, lim Limits, ev abi.Events) string {
	tb.Helper()
	res, err := m.Call(context.Background(), tool, json.RawMessage(args), lim, ev)
	if err != nil {
		tb.Fatalf("Call %s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		tb.Fatalf("Call %s: no content", tool)
	}
	return res.Content[0].Text
}

// guardModule is the rewrite a test's module gets at load (Module.compile),
// without load bounds but maxCode.
func guardModule(wasm []byte, interp bool, maxCode int) (*wasmcode.Guarded, error) {
	return wasmcode.Guard(wasm, wasmcode.Options{Interpreter: interp, MaxWork: uint64(maxCode), FuelPerCheck: fuelPerCheck})
}
