package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// wasm returns the hostile module built from testdata/<name>.wat or
// testdata/<name>.c by hosttest.Wasm (once per process; it skips without
// the toolchain, and fails under CI=true).
func wasm(tb testing.TB, name string) []byte {
	tb.Helper()
	src := filepath.Join("testdata", name+".wat")
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join("testdata", name+".c")
	}
	return hosttest.Wasm(tb, src)
}

// engine is one of wazero's two engines; every runtime case runs on both.
type engine struct {
	name        string
	interpreter bool
}

var engines = []engine{{"compiler", false}, {"interpreter", true}}

// onEngines runs fn as one subtest per engine.
func onEngines(t *testing.T, fn func(t *testing.T, e engine)) {
	t.Helper()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { fn(t, e) })
	}
}

// newServer starts a Server on the named modules (a fixed set, not
// watched) and closes it at cleanup. It does not look at Problems.
func newServer(tb testing.TB, interpreter bool, pol *host.Policy, modules ...string) *host.Server {
	tb.Helper()
	fsys := fstest.MapFS{}
	for _, m := range modules {
		fsys[m+".wasm"] = &fstest.MapFile{Data: wasm(tb, m)}
	}
	s, err := host.New(context.Background(), host.Config{ToolsFS: fsys, Policy: pol, Interpreter: interpreter})
	if err != nil {
		tb.Fatalf("host.New: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// serve is newServer for modules that must all load.
func serve(tb testing.TB, interpreter bool, pol *host.Policy, modules ...string) *host.Server {
	tb.Helper()
	s := newServer(tb, interpreter, pol, modules...)
	if p := s.Problems(); len(p) > 0 {
		tb.Fatalf("modules not served: %v", p)
	}
	return s
}

// short is the default policy of the hostile cases: tight memory, output
// and log limits, and the default timeout, so that a slow machine never
// turns a case into a timeout. Runaway cases give their tool a short
// Timeout of its own (runaway).
func short() host.ToolPolicy {
	return host.ToolPolicy{MemoryMiB: 16, MaxOutputBytes: 64 << 10, MaxLogBytes: 16 << 10}
}

// runaway is the Timeout of the tools that only a timeout can stop. It is a
// limit the guest meets, never a budget the test measures.
const runaway = host.Duration(200 * time.Millisecond)

// policy is short for every tool, with the entries of mods by module name
// (grants, and tool limits merged over short field by field).
func policy(mods map[string]host.ModulePolicy) *host.Policy {
	return &host.Policy{Defaults: short(), Modules: mods}
}

// toolPolicy is policy with one tool's limits overridden: tool of module.
func toolPolicy(module, tool string, tp host.ToolPolicy) *host.Policy {
	return policy(map[string]host.ModulePolicy{module: {Tools: map[string]host.ToolPolicy{tool: tp}}})
}

// hostile runs one hostile case: a fresh server of the given engine serves
// module and the well-behaved "normal" under pol; fn calls it; then the
// normal tool must still answer on the same server, and once the server and
// everything fn opened are closed, goroutines and heap must be back to the
// baseline taken before the server existed.
func hostile(t *testing.T, e engine, pol *host.Policy, module string, fn func(t *testing.T, s *host.Server)) {
	t.Helper()
	wasm(t, module) // build (or skip) before the baseline
	wasm(t, "normal")
	watchBaseline(t)
	s := serve(t, e.interpreter, pol, module, "normal")
	fn(t, s)
	stillServes(t, s)
}

// stillServes asserts that the normal tool of s answers.
func stillServes(t *testing.T, s *host.Server) {
	t.Helper()
	if got := text(t, s, "echo", "{}", nil); got != "ok" {
		t.Fatalf("normal tool after the hostile call: got %q, want %q", got, "ok")
	}
}

// text returns the text of the first content block of a successful call.
func text(t *testing.T, s *host.Server, tool, args string, ev abi.Events) string {
	t.Helper()
	res, err := s.Call(context.Background(), tool, json.RawMessage(args), ev)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("call %s: no content", tool)
	}
	return res.Content[0].Text
}

// guestErr asserts that err is a *host.GuestError of kind want whose message
// contains every fragment, and returns it.
func guestErr(tb testing.TB, err error, want host.GuestErrorKind, fragments ...string) *host.GuestError {
	tb.Helper()
	var ge *host.GuestError
	if !errors.As(err, &ge) {
		tb.Fatalf("got error %v (%T), want a *host.GuestError of kind %q", err, err, want)
	}
	if ge.Kind != want {
		tb.Fatalf("got kind %q (%v), want %q", ge.Kind, err, want)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			tb.Errorf("error %q does not contain %q", err, f)
		}
	}
	return ge
}

// events is the abi.Events of a direct call: it keeps the log messages,
// passes each to onLog (when set, from the guest's host call), and answers
// elicitation with elicit (nil: unsupported, as without a client).
type events struct {
	onLog  func(msg string)
	elicit func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error)

	mu   sync.Mutex
	logs []string
}

func (e *events) Progress(float64, float64, string) {}
func (e *events) Status(string)                     {}

func (e *events) Log(_ int32, msg string) {
	e.mu.Lock()
	e.logs = append(e.logs, msg)
	e.mu.Unlock()
	if e.onLog != nil {
		e.onLog(msg)
	}
}

func (e *events) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	if e.elicit == nil {
		return abi.ElicitReply{}, fmt.Errorf("no user here: %w", errors.ErrUnsupported)
	}
	return e.elicit(ctx, req)
}

// blockingElicit returns events whose Elicit signals entered and then
// waits for its context, as a user who never answers.
func blockingElicit(entered chan<- struct{}) *events {
	return &events{elicit: func(ctx context.Context, _ abi.ElicitRequest) (abi.ElicitReply, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return abi.ElicitReply{}, ctx.Err()
	}}
}

// accepting answers every elicitation with accept.
func accepting() *events {
	return &events{elicit: func(context.Context, abi.ElicitRequest) (abi.ElicitReply, error) {
		return abi.ElicitReply{Action: "accept"}, nil
	}}
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

// heapSlack is how far HeapInuse may stay above its baseline after a case:
// generous, since the GC keeps some garbage and compiled code lives on;
// a leaked instance of a memory bomb would be far more.
const heapSlack = 48 << 20

// watchBaseline takes the baseline now and checks it at the test's last
// cleanup, after the servers, sessions and listeners the test opened later
// are closed (cleanups run last-registered first).
func watchBaseline(t *testing.T) {
	t.Helper()
	b := baseline{goroutines: runtime.NumGoroutine(), heapInuse: heapInuse()}
	t.Cleanup(func() { b.check(t) })
}

// settle is how long goroutines that have finished their work (a test's
// readers, wazero's per-call watchers) may take to be reaped. It is not a
// budget of the product: Server.Close has returned when it starts, and the
// wait ends as soon as the count is back. It only bounds how long a leak
// takes to be reported, with every goroutine's stack.
const settle = 30 * time.Second

// check asserts that the goroutines are back to the baseline and the heap
// within heapSlack of it.
func (b baseline) check(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for runtime.NumGoroutine() > b.goroutines {
		if time.Now().After(deadline) {
			var sb strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&sb, 1)
			t.Errorf("goroutines: got %d, want at most the baseline %d\n%s", runtime.NumGoroutine(), b.goroutines, sb.String())
			break
		}
		runtime.Gosched() // a process-wide count has nothing to wait on
	}
	if h := heapInuse(); h > b.heapInuse+heapSlack {
		t.Errorf("HeapInuse: got %d MiB, want at most the baseline %d MiB + %d MiB", h>>20, b.heapInuse>>20, heapSlack>>20)
	}
}
