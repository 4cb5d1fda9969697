package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// The hostile modules are sources in testdata/ (*.wat for wat2wasm, *.c for
// clang with wasi-libc), compiled by TestMain into a temporary directory. A
// missing toolchain skips the tests that need it, with the reason, unless
// CI is "true": then the whole run fails.
var (
	modDir    string
	buildErrs = map[string]error{}
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sandbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	modDir = dir
	ci := os.Getenv("CI") == "true"
	build := func(name string, cmd *exec.Cmd) bool {
		out, err := cmd.CombinedOutput()
		if err == nil {
			return true
		}
		buildErrs[name] = fmt.Errorf("building %s: %v: %s", name, err, strings.TrimSpace(string(out)))
		fmt.Fprintln(os.Stderr, buildErrs[name])
		return !ci
	}
	wats, _ := filepath.Glob("testdata/*.wat")
	for _, w := range wats {
		name := strings.TrimSuffix(filepath.Base(w), ".wat")
		if !build(name, exec.Command("wat2wasm", w, "-o", filepath.Join(dir, name+".wasm"))) {
			return 1
		}
	}
	cs, _ := filepath.Glob("testdata/*.c")
	for _, c := range cs {
		name := strings.TrimSuffix(filepath.Base(c), ".c")
		// -nodefaultlibs: Debian's clang has no wasm32 compiler-rt unless
		// libclang-rt-dev-wasm32 is installed; these modules need none.
		if !build(name, exec.Command("clang", "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-nodefaultlibs",
			c, "-lc", "-o", filepath.Join(dir, name+".wasm"))) {
			return 1
		}
	}
	return m.Run()
}

// wasmFile returns a compiled hostile module, skipping the test when its
// toolchain is missing.
func wasmFile(tb testing.TB, name string) []byte {
	tb.Helper()
	if err := buildErrs[name]; err != nil {
		tb.Skipf("module %s not built (install wabt for .wat, clang lld wasi-libc for .c): %v", name, err)
	}
	b, err := os.ReadFile(filepath.Join(modDir, name+".wasm"))
	if err != nil {
		tb.Skipf("module %s: %v", name, err)
	}
	return b
}

// engines are the two wazero engines a case runs under when the engine
// matters (loops, recursion, memory, cancellation).
var engines = []struct {
	name        string
	interpreter bool
}{{"compiler", false}, {"interpreter", true}}

func newRuntime(tb testing.TB, interpreter bool) *host.Runtime {
	tb.Helper()
	rt, err := host.NewRuntime(context.Background(), host.RuntimeConfig{Interpreter: interpreter})
	if err != nil {
		tb.Fatalf("NewRuntime: %v", err)
	}
	tb.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

func load(tb testing.TB, rt *host.Runtime, name string) *host.Module {
	tb.Helper()
	m, err := rt.Load(context.Background(), name, wasmFile(tb, name))
	if err != nil {
		tb.Fatalf("Load %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

// short is the policy of the hostile calls: tight limits so that the suite
// stays fast.
func short() host.ToolPolicy {
	return host.ToolPolicy{Timeout: host.Duration(200 * time.Millisecond), MemoryMiB: 16, MaxOutputBytes: 64 << 10, MaxLogBytes: 16 << 10}
}

// guestErr asserts that err is a *host.GuestError of kind want whose message
// contains every fragment, and returns it.
func guestErr(t *testing.T, err error, want host.GuestErrorKind, fragments ...string) *host.GuestError {
	t.Helper()
	var ge *host.GuestError
	if !errors.As(err, &ge) {
		t.Fatalf("got error %v (%T), want a *host.GuestError of kind %q", err, err, want)
	}
	if ge.Kind != want {
		t.Fatalf("got kind %q (%v), want %q", ge.Kind, err, want)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
	return ge
}

// text returns the text of the first content block of a successful call.
func text(t *testing.T, m *host.Module, tool, args string, opts host.CallOptions) string {
	t.Helper()
	res, err := m.Call(context.Background(), tool, json.RawMessage(args), opts)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("call %s: no content", tool)
	}
	return res.Content[0].Text
}

// baseline is the process state a hostile case must return to.
type baseline struct {
	goroutines int
	heapInuse  uint64
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func takeBaseline() baseline {
	return baseline{goroutines: runtime.NumGoroutine(), heapInuse: heapInuse()}
}

// heapSlack is how far HeapInuse may stay above its baseline after a case:
// generous, since the GC keeps some garbage and compiled code lives on;
// a leaked instance of a memory bomb would be far more.
const heapSlack = 48 << 20

// check asserts that the goroutines have settled back to the baseline
// (within a deadline: instances end asynchronously) and that the heap is
// back within heapSlack of it.
func (b baseline) check(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > b.goroutines {
		if time.Now().After(deadline) {
			var sb strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&sb, 1)
			t.Errorf("goroutines: got %d, want at most the baseline %d\n%s", runtime.NumGoroutine(), b.goroutines, sb.String())
			break
		}
		time.Sleep(5 * time.Millisecond) // polling a process-wide count: nothing to wait on
	}
	if h := heapInuse(); h > b.heapInuse+heapSlack {
		t.Errorf("HeapInuse: got %d MiB, want at most the baseline %d MiB + %d MiB", h>>20, b.heapInuse>>20, heapSlack>>20)
	}
}

// stillServes asserts that a well-behaved tool of rt answers.
func stillServes(t *testing.T, rt *host.Runtime) {
	t.Helper()
	m, err := rt.Load(context.Background(), "normal", wasmFile(t, "normal"))
	if err != nil {
		t.Fatalf("the runtime no longer loads a normal module: %v", err)
	}
	defer m.Close(context.Background())
	if got := text(t, m, "echo", "{}", host.CallOptions{}); got != "ok" {
		t.Fatalf("normal tool after the hostile call: got %q, want %q", got, "ok")
	}
}

// hostile runs one hostile case on a fresh runtime of the given engine:
// it loads module, runs fn, then checks that the runtime still serves a
// normal tool and that goroutines and heap are back to their baseline
// (taken before the runtime existed, checked after it is closed).
func hostile(t *testing.T, interpreter bool, module string, fn func(t *testing.T, m *host.Module)) {
	t.Helper()
	wasmFile(t, module) // skip early when not built
	wasmFile(t, "normal")
	b := takeBaseline()
	func() {
		rt, err := host.NewRuntime(context.Background(), host.RuntimeConfig{Interpreter: interpreter})
		if err != nil {
			t.Fatalf("NewRuntime: %v", err)
		}
		defer rt.Close(context.Background())
		m, err := rt.Load(context.Background(), module, wasmFile(t, module))
		if err != nil {
			t.Fatalf("Load %s: %v", module, err)
		}
		defer m.Close(context.Background())
		fn(t, m)
		stillServes(t, rt)
	}()
	b.check(t)
}
