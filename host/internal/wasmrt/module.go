package wasmrt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmtask/wasmtask/abi"
)

// Module is a loaded tool module. It is safe for concurrent use: every Call
// runs in its own instance. Close it when done; calls in flight finish first.
type Module struct {
	r    *Runtime
	e    *entry
	name string

	mu       sync.Mutex
	closed   bool
	inflight int
	done     chan struct{} // closed when closed and no call is in flight
}

// Name returns the name given to Load.
func (m *Module) Name() string { return m.name }

// Digest returns the content digest of the module's bytes (see Digest).
func (m *Module) Digest() string { return m.e.digest }

// Manifest returns the validated manifest. It is shared: do not modify it.
func (m *Module) Manifest() *abi.Manifest { return m.e.manifest }

// Tool returns the declared tool called name.
func (m *Module) Tool(name string) (abi.Tool, bool) {
	for _, t := range m.e.manifest.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return abi.Tool{}, false
}

// Close marks the module closed: later calls fail with ErrClosed. It does
// not wait: calls in flight run to their end, and the compiled code is freed
// after the last of them (when no other Module shares it). Done reports when.
func (m *Module) Close(context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	last := m.inflight == 0
	m.mu.Unlock()
	if last {
		m.free()
	}
	return nil
}

// Done is closed once the module is closed and its last call has ended.
func (m *Module) Done() <-chan struct{} { return m.done }

func (m *Module) free() {
	m.r.release(m.e)
	close(m.done)
}

func (m *Module) acquire() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.inflight++
	return true
}

func (m *Module) releaseCall() {
	m.mu.Lock()
	m.inflight--
	last := m.closed && m.inflight == 0
	m.mu.Unlock()
	if last {
		m.free()
	}
}

// Call runs tool with args (a JSON object; empty means {}) in a fresh
// instance bounded by lim, reporting to ev (which may be nil). A guest
// failure is a *GuestError; ErrUnknownTool and ErrArguments come before the
// guest runs; ErrClosed after Close. A returned Result may itself have
// IsError set: that is the tool's own answer.
func (m *Module) Call(ctx context.Context, tool string, args json.RawMessage, lim Limits, ev Events) (*abi.Result, error) {
	if !m.acquire() {
		return nil, fmt.Errorf("call %q of %q: %w", tool, m.name, ErrClosed)
	}
	defer m.releaseCall()
	rs, ok := m.e.schemas[tool]
	if !ok {
		return nil, fmt.Errorf("call %q of %q: %w", tool, m.name, ErrUnknownTool)
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, fmt.Errorf("call %q of %q: %w: %v", tool, m.name, ErrArguments, err)
	}
	if _, isObj := v.(map[string]any); !isObj {
		return nil, fmt.Errorf("call %q of %q: %w: not a JSON object", tool, m.name, ErrArguments)
	}
	if err := rs.Validate(v); err != nil {
		return nil, fmt.Errorf("call %q of %q: %w: %v", tool, m.name, ErrArguments, err)
	}
	req, err := json.Marshal(abi.Request{ABI: abi.Version, Method: abi.MethodCall, Tool: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("call %q of %q: %w: %v", tool, m.name, ErrArguments, err)
	}
	out, gerr := m.r.run(ctx, m.e, m.name, tool, req, lim.withDefaults(m.r.cfg.MaxMemoryPages), ev)
	if gerr != nil {
		return nil, gerr
	}
	res, err := abi.DecodeResult(out)
	if err != nil {
		return nil, &GuestError{Module: m.name, Tool: tool, Kind: KindBadOutput, Msg: err.Error() + snippet(out), cause: err}
	}
	return res, nil
}

// snippet quotes the start of bad output for an error message.
func snippet(out []byte) string {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return ""
	}
	const n = 80
	if len(out) > n {
		return fmt.Sprintf(" (stdout starts %q…)", out[:n])
	}
	return fmt.Sprintf(" (stdout %q)", out)
}

// run runs one request in a fresh instance and returns its stdout. lim must
// have its defaults applied.
func (r *Runtime) run(ctx context.Context, e *entry, name, tool string, req []byte, lim Limits, ev Events) ([]byte, *GuestError) {
	fail := func(kind Kind, msg string, stderr string, cause error) *GuestError {
		return &GuestError{Module: name, Tool: tool, Kind: kind, Msg: msg, Stderr: stderr, cause: cause}
	}
	memLimit := fmt.Sprintf("the module needs more than its limit of %d pages (%d MiB)", lim.MemoryPages, uint64(lim.MemoryPages)*pageSize>>20)
	if e.minPages > lim.MemoryPages {
		return nil, fail(KindOutOfMemory, fmt.Sprintf("%s: it starts with %d pages", memLimit, e.minPages), "", nil)
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(ctxKind(err), err.Error(), "", nil)
	}

	callCtx, cancelTimeout := context.WithTimeout(ctx, lim.Timeout)
	defer cancelTimeout()
	callCtx, cancel := context.WithCancel(callCtx)
	defer cancel()

	state := &callState{ev: ev, logLeft: lim.MaxLogBytes}
	if !r.track(state, cancel) {
		return nil, fail(KindCanceled, "the runtime was closed", "", ErrClosed)
	}
	defer r.untrack(state)
	stdout := &limitedWriter{max: lim.MaxOutputBytes, over: cancel}
	stderr := &logWriter{max: lim.MaxLogBytes}
	if ev != nil {
		stderr.sink = func(line string) { state.log(abi.LogInfo, line) }
	}
	cfg := r.base.
		WithArgs(name).
		WithStdin(bytes.NewReader(req)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithNanosleep(func(ns int64) { sleepCtx(callCtx, ns) })
	for k, v := range lim.Env {
		cfg = cfg.WithEnv(k, v)
	}
	if len(lim.Mounts) > 0 {
		fsc, roots, err := openMounts(lim.Mounts)
		if err != nil {
			return nil, fail(KindInstantiate, err.Error(), "", err)
		}
		defer closeRoots(roots)
		cfg = cfg.WithFSConfig(fsc)
	}

	alloc := &limitedAllocator{limit: uint64(lim.MemoryPages) * pageSize, over: cancel}
	runCtx := experimental.WithMemoryAllocator(callCtx, alloc)
	runCtx = context.WithValue(runCtx, callStateKey{}, state)

	start := time.Now()
	mod, err := r.rt.InstantiateModule(runCtx, e.compiled, cfg)
	if mod != nil {
		_ = mod.Close(context.Background())
	}
	stderr.flush()
	tail := string(stderr.tail)

	if err == nil && !stdout.exceeded && callCtx.Err() == nil {
		return stdout.buf, nil
	}
	switch {
	case r.isClosed():
		return nil, fail(KindCanceled, "the runtime was closed", tail, ErrClosed)
	case stdout.exceeded:
		return nil, fail(KindOutputTooLarge, fmt.Sprintf("output exceeds %d bytes", lim.MaxOutputBytes), tail, nil)
	case alloc.refused.Load() && ctx.Err() == nil:
		return nil, fail(KindOutOfMemory, memLimit, tail, nil)
	case ctx.Err() != nil:
		return nil, fail(ctxKind(ctx.Err()), ctx.Err().Error(), tail, ctx.Err())
	case callCtx.Err() != nil:
		return nil, fail(KindTimeout, fmt.Sprintf("exceeded %v (ran %v)", lim.Timeout, time.Since(start).Round(time.Millisecond)), tail, nil)
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return nil, fail(KindExit, fmt.Sprintf("exit code %d", exit.ExitCode()), tail, nil)
	}
	msg := err.Error()
	kind := KindTrap
	if !strings.Contains(msg, "function[_start] failed") {
		kind = KindInstantiate
	}
	return nil, fail(kind, trimTrap(msg), tail, err)
}

func ctxKind(err error) Kind {
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	return KindCanceled
}

// trimTrap shortens wazero's error: drops the "module[] function[_start]
// failed: " prefix and bounds the stack trace.
func trimTrap(msg string) string {
	msg = strings.TrimPrefix(msg, "module[] function[_start] failed: ")
	const max = 2048
	if len(msg) > max {
		msg = msg[:max] + "…"
	}
	return msg
}

// sleepCtx is the guest's nanosleep: real time, cut short when the call
// ends, so a sleeping guest cannot outlive its cancel or timeout. Like
// elicit, it ends the guest rather than return into a dead call.
func sleepCtx(ctx context.Context, ns int64) {
	if ns > 0 {
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
}
