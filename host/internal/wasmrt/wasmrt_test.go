package wasmrt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// stillWorks checks that a normal module loads and answers after a failure.
func stillWorks(t *testing.T, r *Runtime) {
	t.Helper()
	m, err := r.Load(context.Background(), "ok", wasmFile(t, "ok"), loadLimits)
	if err != nil {
		t.Fatalf("after the failure, Load ok: %v", err)
	}
	defer m.Close(context.Background())
	if got := callText(t, m, "hello", `{}`, testLimits, nil); got != "hello" {
		t.Fatalf("after the failure, hello = %q, want %q", got, "hello")
	}
}

func TestLoadRefused(t *testing.T) {
	r := newRuntime(t, Config{})
	tests := []struct {
		name   string
		module string // test module, or "" to use wasm
		wasm   []byte
		is     error
		want   []string // substrings of the error text
	}{
		{name: "not wasm", wasm: []byte("#!/bin/sh\necho hi\n"), is: ErrNotWasm, want: []string{`load "not wasm"`, "not a WebAssembly module"}},
		{name: "component", wasm: []byte("\x00asm\x0d\x00\x01\x00\x07\x10"), is: ErrComponent, want: []string{`load "component"`, "a WebAssembly component, not a core module: build the tool for wasm32-wasip1"}},
		{name: "truncated", wasm: []byte("\x00asm\x01\x00\x00\x00\x01\xff"), is: ErrCompile, want: []string{"cannot compile"}},
		{name: "manifest abi 2", module: "abi2", is: abi.ErrVersion, want: []string{"declares ABI v2", "speaks v1", "rebuild"}},
		{name: "imports wasmtask_v2", module: "import_v2", is: abi.ErrVersion, want: []string{`"wasmtask_v2" (ABI v2)`, `ABI v1 ("wasmtask_v1")`, "rebuild"}},
		{name: "missing _start", module: "nostart", is: ErrABI, want: []string{`no "_start" export`}},
		{name: "manifest not JSON", module: "badjson", is: abi.ErrManifest, want: []string{"invalid manifest", "the JSON document is incomplete"}},
		{name: "invalid input schema", module: "badschema", is: ErrSchema, want: []string{`tool "run"`, "inputSchema", "pattern: error parsing regexp"}},
		{name: "cyclic output schema", module: "cyclicschema", is: ErrSchema, want: []string{`tool "run": outputSchema: reference cycle: #/$defs/a -anyOf-> #/$defs/a/anyOf/0 -$ref-> #/$defs/b -not-> #/$defs/b/not -$ref-> #/$defs/a`}},
		{name: "duplicate tools", module: "duptools", is: abi.ErrManifest, want: []string{`duplicate tool name "run"`}},
		{name: "unknown host function", module: "unknown_import", is: ErrABI, want: []string{"wasmtask_v1.frobnicate", "does not define", "begin_task, elicit, elicit_all, log, progress, reply, roots, sample, status"}},
		{name: "wrong signature", module: "wrong_sig", is: ErrABI, want: []string{"wasmtask_v1.log with type (i32, i32) -> ()", "want (i32, i32, i32) -> ()"}},
		{name: "unknown import module", module: "env_import", is: ErrABI, want: []string{"imports env.foo"}},
		// 4 GiB to start: refused for its size before it is compiled, and
		// unexported, which the ABI check would refuse after.
		{name: "memory not exported", module: "hiddenmem", is: ErrLoadLimit, want: []string{"one instance needs 4097 MiB", "4096 MiB of initial linear memory", "more than the memory limit of 64 MiB"}},
		{name: "small memory not exported", wasm: watModule(t, `(module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32))) (memory 1) (func (export "_start")))`),
			is: ErrABI, want: []string{`no exported "memory"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wasm := tt.wasm
			if tt.module != "" {
				wasm = wasmFile(t, tt.module)
			}
			m, err := r.Load(context.Background(), tt.name, wasm, loadLimits)
			if err == nil {
				m.Close(context.Background())
				t.Fatalf("Load succeeded, want an error wrapping %v", tt.is)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("Load error = %v, want one wrapping %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load error = %q, want it to contain %q", err, w)
				}
			}
			stillWorks(t, r)
		})
	}
}

func TestCallFailures(t *testing.T) {
	r := newRuntime(t, Config{MaxMemoryMiB: 16})
	m := load(t, r, "hostile")
	tests := []struct {
		name   string
		tool   string
		lim    Limits
		cancel bool // cancel the call once it is running
		kind   Kind
		is     error // errors.Is must hold, when set
		want   []string
	}{
		{name: "trap", tool: "trap", kind: KindTrap, want: []string{"unreachable"}},
		{name: "infinite loop times out", tool: "loop", lim: with(Limits{Timeout: 100 * time.Millisecond}), kind: KindTimeout, is: context.DeadlineExceeded, want: []string{"exceeded 100ms"}},
		{name: "infinite loop canceled", tool: "loop", cancel: true, kind: KindCanceled, is: context.Canceled, want: []string{"context canceled"}},
		{name: "sleep cut by timeout", tool: "sleep", lim: with(Limits{Timeout: 100 * time.Millisecond}), kind: KindTimeout, is: context.DeadlineExceeded},
		{name: "out of memory", tool: "oom", lim: with(Limits{MemoryMiB: 2}), kind: KindOutOfMemory, want: []string{"memory limit of 2 MiB"}},
		{name: "memory capped by runtime ceiling", tool: "oom", lim: with(Limits{MemoryMiB: 60000}), kind: KindOutOfMemory, want: []string{"memory limit of 16 MiB"}},
		{name: "garbage stdout", tool: "garbage", kind: KindBadOutput, is: abi.ErrResult, want: []string{`"not json :-("`}},
		{name: "endless stdout", tool: "flood", lim: with(Limits{MaxOutputBytes: 1024}), kind: KindOutputTooLarge, want: []string{"output exceeds 1024 bytes"}},
		{name: "valid but too large", tool: "big", lim: with(Limits{MaxOutputBytes: 1024}), kind: KindOutputTooLarge, want: []string{"output exceeds 1024 bytes"}},
		{name: "valid but over its counts", tool: "big", lim: with(Limits{Result: abi.ResultLimits{MaxValues: 4}}), kind: KindOutputTooLarge, is: abi.ErrResultTooLarge, want: []string{"more than 4 JSON values"}},
		{name: "wild pointer", tool: "wild", kind: KindTrap, want: []string{"wasmtask_v1.log: buffer [4294967040, 4294971136) is outside the module's memory (65536 bytes)"}},
		{name: "exit code", tool: "xit", kind: KindExit, want: []string{"exit code 3", "stderr: bad thing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				// The loop gives no signal that it runs; cancel after
				// a moment, the assertion does not depend on when.
				stop := time.AfterFunc(50*time.Millisecond, cancel)
				defer stop.Stop()
			}
			res, err := m.Call(ctx, tt.tool, nil, with(tt.lim), nil)
			if err == nil {
				t.Fatalf("Call %s = %+v, want a %s error", tt.tool, res, tt.kind)
			}
			var ge *GuestError
			if !errors.As(err, &ge) {
				t.Fatalf("Call error %T %v, want *GuestError", err, err)
			}
			if ge.Kind != tt.kind || ge.Module != "hostile" || ge.Tool != tt.tool {
				t.Errorf("got %s/%s kind %q, want hostile/%s kind %q (%v)", ge.Module, ge.Tool, ge.Kind, tt.tool, tt.kind, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false, want true", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error = %q, want it to contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), `module "hostile" tool "`+tt.tool+`": `) {
				t.Errorf("error = %q, want it to name the module and tool first", err)
			}
			// The same module and another both still work.
			if got := callText(t, m, "big", `{}`, testLimits, nil); !strings.HasPrefix(got, "xxx") {
				t.Errorf("after the failure, big = %.10q…, want x…", got)
			}
			stillWorks(t, r)
		})
	}
}

func TestCallRefusedBeforeRunning(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "ok")
	tests := []struct {
		tool, args string
		is         error
		want       string
	}{
		{"nope", `{}`, ErrUnknownTool, "unknown tool"},
		{"hello", `[1]`, ErrArguments, "not a JSON object"},
		{"hello", `{"who":`, ErrArguments, "unexpected end"},
		{"hello", `{"who":5}`, ErrArguments, "who"},
	}
	for _, tt := range tests {
		_, err := m.Call(context.Background(), tt.tool, json.RawMessage(tt.args), testLimits, nil)
		if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Call(%s, %s) error = %v, want %v containing %q", tt.tool, tt.args, err, tt.is, tt.want)
		}
	}
	if got := callText(t, m, "hello", `{"who":"you"}`, testLimits, nil); got != "hello" {
		t.Errorf("hello = %q, want hello", got)
	}
}

func TestEvents(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "ok")
	ev := &events{}
	if got := callText(t, m, "progress", `{}`, testLimits, ev); got != "hello" {
		t.Errorf("progress = %q, want hello", got)
	}
	got := map[string][]string{"progress": ev.progress, "status": ev.status, "logs": ev.logs}
	want := map[string][]string{
		"progress": {"1/2 half"},
		"status":   {"status"},
		"logs":     {"2:why", "1:stderr"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestLogBounded(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "ok")
	ev := &events{}
	callText(t, m, "progress", `{}`, with(Limits{MaxLogBytes: 3 + logMessageCost + 4}), ev)
	// "why" (3 bytes and the cost of a message) fits; "stderr" (6) does
	// not: one notice instead.
	want := []string{"2:why", "2:wasmtask: log limit reached, further guest log dropped"}
	if d := cmp.Diff(want, ev.logs); d != "" {
		t.Errorf("logs (-want +got):\n%s", d)
	}
}

func TestElicit(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "ok")
	var gotReq abi.ElicitRequest
	ev := &events{elicit: func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
		gotReq = req
		return abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"name":"Ada"}`)}, nil
	}}
	res, err := m.Call(context.Background(), "ask", nil, testLimits, ev)
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	if gotReq.Message != "name?" {
		t.Errorf("elicit message = %q, want %q", gotReq.Message, "name?")
	}
	if res.Content[0].Text != "2" {
		t.Errorf("counter = %q, want 2", res.Content[0].Text)
	}
	if got, want := string(res.StructuredContent), `{"action":"accept","content":{"name":"Ada"}}`; got != want {
		t.Errorf("reply seen by the guest = %s, want %s", got, want)
	}
	// The guest exits 6-code for a negative code: without an Events,
	// elicit is unsupported (-1: 7); an Events that cannot answer gives -1,
	// one whose limit refused gives -3 (9).
	refuse := func(err error) abi.Events {
		return &events{elicit: func(context.Context, abi.ElicitRequest) (abi.ElicitReply, error) { return abi.ElicitReply{}, err }}
	}
	// ok is an ABI 1.0 module: a limit reads -1 to it, as it always did.
	// The same module importing an ABI 1.1 function gets -3.
	src, err := os.ReadFile("testdata/ok.wat")
	if err != nil {
		t.Fatal(err)
	}
	elicitImport := `(import "wasmtask_v1" "elicit" (func $elicit (param i32 i32) (result i32)))`
	if !bytes.Contains(src, []byte(elicitImport)) {
		t.Fatalf("testdata/ok.wat no longer has the line %s", elicitImport)
	}
	path := filepath.Join(t.TempDir(), "ok11.wat")
	src11 := bytes.Replace(src, []byte(elicitImport), []byte(elicitImport+"\n  (import \"wasmtask_v1\" \"begin_task\" (func $begin_task (result i32)))"), 1)
	if err := os.WriteFile(path, src11, 0o644); err != nil {
		t.Fatal(err)
	}
	m11, err := r.Load(context.Background(), "ok11", hosttest.Wasm(t, path), loadLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer m11.Close(context.Background())
	for name, tc := range map[string]struct {
		m    *Module
		ev   abi.Events
		exit string
	}{
		"no events":          {m, nil, "exit code 7"},
		"unsupported":        {m, refuse(fmt.Errorf("no: %w", errors.ErrUnsupported)), "exit code 7"},
		"limit reached, 1.0": {m, refuse(fmt.Errorf("too many: %w", abi.ErrElicitLimit)), "exit code 7"},
		"limit reached, 1.1": {m11, refuse(fmt.Errorf("too many: %w", abi.ErrElicitLimit)), "exit code 9"},
		"unsupported, 1.1":   {m11, refuse(fmt.Errorf("no: %w", errors.ErrUnsupported)), "exit code 7"},
	} {
		_, err = tc.m.Call(context.Background(), "ask", nil, testLimits, tc.ev)
		var ge *GuestError
		if !errors.As(err, &ge) || ge.Kind != KindExit || !strings.Contains(ge.Msg, tc.exit) {
			t.Errorf("ask, %s: %v, want %s", name, err, tc.exit)
		}
	}
}

// TestElicitBlockedThenCanceled: a guest blocked in elicit ends when the
// caller cancels, with an error that is context.Canceled.
func TestElicitBlockedThenCanceled(t *testing.T) {
	for _, timeout := range []bool{false, true} {
		r := newRuntime(t, Config{})
		m := load(t, r, "hostile")
		entered := make(chan struct{})
		ev := &events{elicit: func(ctx context.Context, _ abi.ElicitRequest) (abi.ElicitReply, error) {
			close(entered)
			<-ctx.Done()
			return abi.ElicitReply{}, ctx.Err()
		}}
		ctx, cancel := context.WithCancel(context.Background())
		lim := testLimits
		if timeout {
			lim.Timeout = 50 * time.Millisecond
		} else {
			go func() { <-entered; cancel() }()
		}
		_, err := m.Call(ctx, "elicit", nil, lim, ev)
		cancel()
		want, kind := context.Canceled, KindCanceled
		if timeout {
			want, kind = context.DeadlineExceeded, KindTimeout
		}
		var ge *GuestError
		if !errors.Is(err, want) || !errors.As(err, &ge) || ge.Kind != kind {
			t.Errorf("timeout=%v: Call = %v, want %s (%v)", timeout, err, kind, want)
		}
		select {
		case <-entered:
		default:
			t.Errorf("timeout=%v: the guest never reached elicit", timeout)
		}
	}
}

func TestConcurrentCallsDoNotShareState(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "ok")
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	ev := &events{elicit: func(ctx context.Context, _ abi.ElicitRequest) (abi.ElicitReply, error) {
		arrived.Done()
		arrived.Wait() // all n instances are alive at once here
		return abi.ElicitReply{Action: "decline"}, nil
	}}
	var wg sync.WaitGroup
	texts := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			res, err := m.Call(context.Background(), "ask", nil, testLimits, ev)
			errs[i] = err
			if err == nil {
				texts[i] = res.Content[0].Text
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || texts[i] != "2" {
			t.Errorf("call %d: text %q err %v, want counter 2 (a fresh instance each)", i, texts[i], errs[i])
		}
	}
}

func TestModuleCloseWaitsForCalls(t *testing.T) {
	r := newRuntime(t, Config{})
	m, err := r.Load(context.Background(), "ok", wasmFile(t, "ok"), loadLimits)
	if err != nil {
		t.Fatal(err)
	}
	entered, answer := make(chan struct{}), make(chan struct{})
	ev := &events{elicit: func(ctx context.Context, _ abi.ElicitRequest) (abi.ElicitReply, error) {
		close(entered)
		<-answer
		return abi.ElicitReply{Action: "cancel"}, nil
	}}
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "ask", nil, testLimits, ev)
		done <- err
	}()
	<-entered
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := m.Call(context.Background(), "hello", nil, testLimits, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close = %v, want ErrClosed", err)
	}
	select {
	case <-m.Done():
		t.Fatal("Done before the call in flight ended")
	default:
	}
	close(answer)
	if err := <-done; err != nil {
		t.Errorf("call in flight during Close = %v, want success", err)
	}
	<-m.Done() // the compiled code is freed after the last call
}

func TestRuntimeCloseEndsCalls(t *testing.T) {
	r, err := New(context.Background(), Config{MaxMemoryMiB: 64, MaxSnapshotMiB: 64})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Load(context.Background(), "hostile", wasmFile(t, "hostile"), loadLimits)
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	ev := &events{elicit: func(ctx context.Context, _ abi.ElicitRequest) (abi.ElicitReply, error) {
		close(entered)
		<-ctx.Done()
		return abi.ElicitReply{}, ctx.Err()
	}}
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "elicit", nil, testLimits, ev)
		done <- err
	}()
	<-entered
	if err := r.Close(context.Background()); err != nil {
		t.Fatalf("Runtime.Close: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("call running at Runtime.Close = %v, want ErrClosed", err)
	}
	if _, err := r.Load(context.Background(), "ok", wasmFile(t, "ok"), loadLimits); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close = %v, want ErrClosed", err)
	}
}

func TestManifest(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "ok")
	man := m.Manifest()
	var names []string
	for _, tl := range man.Tools {
		names = append(names, tl.Name+"/"+tl.TaskSupport)
	}
	if d := cmp.Diff([]string{"hello/forbidden", "ask/optional", "progress/forbidden"}, names); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	if tl := man.Tools[0]; tl.Cache == nil || tl.Cache.TTLMillis != 60000 {
		t.Errorf("hello cache hint = %+v, want 60000 ms", tl.Cache)
	}
}

func TestInterpreter(t *testing.T) {
	r := newRuntime(t, Config{Interpreter: true})
	m := load(t, r, "ok")
	if got := callText(t, m, "hello", `{}`, testLimits, nil); got != "hello" {
		t.Errorf("hello = %q, want hello", got)
	}
	h := load(t, r, "hostile")
	_, err := h.Call(context.Background(), "loop", nil, with(Limits{Timeout: 50 * time.Millisecond}), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("interpreted loop = %v, want a timeout", err)
	}
}

// TestReach: a module's calls can report progress and ask exactly when it
// imports the host functions for them.
func TestReach(t *testing.T) {
	r := newRuntime(t, Config{})
	for name, want := range map[string]Reach{
		"ok":      {Progress: true, Elicit: true},
		"hostile": {Progress: false, Elicit: true},
		"fsguest": {},
	} {
		if got := load(t, r, name).Reach(); got != want {
			t.Errorf("%s: Reach() = %+v, want %+v", name, got, want)
		}
	}
}
