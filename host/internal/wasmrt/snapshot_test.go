package wasmrt

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// TestPreinitIsolation: a pre-initialised module starts every call from
// the state its _initialize left — global 7, 'A' at 200, initialised once
// — and never from what an earlier call wrote to its memory, its globals
// or the memory it grew (the linear memory is reused from the pool).
// Without the snapshot, every instance runs _initialize itself: same
// state.
func TestPreinitIsolation(t *testing.T) {
	for _, noPreinit := range []bool{false, true} {
		r := newRuntime(t, Config{})
		r.noPreinit = noPreinit
		m := load(t, r, "preinit")
		if noPreinit != m.initEach || noPreinit == m.memOnly {
			t.Fatalf("noPreinit %v: initEach %v, memOnly %v", noPreinit, m.initEach, m.memOnly)
		}
		for i := range 3 {
			if got := callText(t, m, "state", `{}`, testLimits, nil); got != "7A01" {
				t.Errorf("noPreinit %v, call %d: state %q, want %q (global 7, 'A' at 200, grown memory zero, one _initialize)", noPreinit, i, got, "7A01")
			}
		}
	}
}

// TestPreinitRefusesHostCalls: a host function called during _initialize
// traps, and the module is refused with the reason.
func TestPreinitRefusesHostCalls(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "preinit.wat"))
	if err != nil {
		t.Fatal(err)
	}
	patched := strings.Replace(string(src), "(memory (export \"memory\") 2)", "(memory (export \"memory\") 2)\n  (data (i32.const 1024) \"H\")", 1)
	r := newRuntime(t, Config{})
	_, err = r.Load(context.Background(), "hostcall", watModule(t, patched), loadLimits)
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Kind != KindTrap || !strings.Contains(err.Error(), "wasmtask_v1.status: called during _initialize") {
		t.Fatalf("got %v, want a trap of wasmtask_v1.status called during _initialize", err)
	}
}

// TestPreinitRefusesUncapturable: what a snapshot cannot hold is refused
// at load with the reason.
func TestPreinitRefusesUncapturable(t *testing.T) {
	wasm := watModule(t, `(module (memory (export "memory") 1) (func $f) (start $f)
		(func (export "_initialize")) (func (export "_start")))`)
	if !wasmcode.ExportsFunc(wasm, abi.ExportInitialize) {
		t.Fatal("ExportsFunc: false for a module exporting _initialize")
	}
	r := newRuntime(t, Config{})
	_, err := r.Load(context.Background(), "start", wasm, loadLimits)
	if !errors.Is(err, ErrABI) || !strings.Contains(err.Error(), "start function") {
		t.Fatalf("got %v, want ErrABI naming the start function", err)
	}
}

// TestPreinitGoTool: the Go demo tool built pre-initialisable answers as
// the command build does, call after call.
func TestPreinitGoTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and compiles a Go tool")
	}
	r := newRuntime(t, Config{})
	m, err := r.Load(context.Background(), "demo", demoReactorWasm(t), loadLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	for range 2 {
		if got := callText(t, m, "word_count", `{"text":"a b\nc"}`, testLimits, nil); !strings.Contains(got, "3 words") {
			t.Errorf("word_count: %s, want 3 words", got)
		}
	}
}

// goState builds testdata/gostate pre-initialisable, once per test process.
var goState = sync.OnceValues(func() ([]byte, error) { return buildGoReactor("./testdata/gostate", "") })

// TestPreinitGoIsolation: a Go tool whose handler keeps what it is given
// in package-level variables, and whose argument and result types the
// guest SDK warmed during _initialize, sees in every call only that
// call's text and one run of its initialisers — pre-initialised or not.
func TestPreinitGoIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and compiles a Go tool")
	}
	wasm := goReactorWasm(t, goState)
	for _, noPreinit := range []bool{false, true} {
		r := newRuntime(t, Config{})
		r.noPreinit = noPreinit
		m, err := r.Load(context.Background(), "gostate", wasm, loadLimits)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"a", "b", "a", "warm"} {
			res, err := m.Call(context.Background(), "remember", json.RawMessage(`{"text":"`+text+`"}`), testLimits, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"seen":["` + text + `"],"count":{"` + text + `":1},"init":1}`
			if got := string(res.StructuredContent); got != want || res.IsError {
				t.Errorf("noPreinit %v: remember(%q) = %s (isError %v), want %s", noPreinit, text, got, res.IsError, want)
			}
		}
		m.Close(context.Background())
	}
}

// watModule builds the module of WAT source src.
func watModule(tb testing.TB, src string) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "m.wat")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		tb.Fatal(err)
	}
	return hosttest.Wasm(tb, path)
}
