package wasmrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// Test modules are written in WAT (testdata/*.wat) and C (testdata/*.c) and
// compiled by TestMain into a temporary directory: the sources are the truth,
// no generated binary is checked in. wat2wasm (Debian wabt) is required when
// CI is set, otherwise its absence skips the tests that need it; clang with
// wasi-libc is optional (it builds the filesystem guest).
var (
	modDir    string
	buildErrs = map[string]error{}
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "wasmrt-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	modDir = dir
	wats, _ := filepath.Glob("testdata/*.wat")
	for _, w := range wats {
		name := strings.TrimSuffix(filepath.Base(w), ".wat")
		out, err := exec.Command("wat2wasm", w, "-o", filepath.Join(dir, name+".wasm")).CombinedOutput()
		if err != nil {
			buildErrs[name] = fmt.Errorf("wat2wasm %s: %v: %s", w, err, out)
			if os.Getenv("CI") != "" {
				fmt.Fprintln(os.Stderr, buildErrs[name])
				return 1
			}
		}
	}
	cs, _ := filepath.Glob("testdata/*.c")
	for _, c := range cs {
		name := strings.TrimSuffix(filepath.Base(c), ".c")
		// -nodefaultlibs: Debian's clang lacks the wasm32 compiler-rt
		// builtins unless libclang-rt-dev-wasm32 is installed; these
		// modules do not need them.
		out, err := exec.Command("clang", "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-nodefaultlibs",
			c, "-lc", "-o", filepath.Join(dir, name+".wasm")).CombinedOutput()
		if err != nil {
			buildErrs[name] = fmt.Errorf("clang %s: %v: %s", c, err, out)
		}
	}
	return m.Run()
}

// wasmFile returns a compiled test module, skipping the test when its
// toolchain is missing.
func wasmFile(tb testing.TB, name string) []byte {
	tb.Helper()
	if err := buildErrs[name]; err != nil {
		tb.Skipf("test module %s not built: %v", name, err)
	}
	b, err := os.ReadFile(filepath.Join(modDir, name+".wasm"))
	if err != nil {
		tb.Skipf("test module %s: %v", name, err)
	}
	return b
}

func newRuntime(tb testing.TB, cfg Config) *Runtime {
	tb.Helper()
	r, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

func load(tb testing.TB, r *Runtime, name string) *Module {
	tb.Helper()
	m, err := r.Load(context.Background(), name, wasmFile(tb, name))
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
func callText(tb testing.TB, m *Module, tool, args string, lim Limits, ev Events) string {
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
