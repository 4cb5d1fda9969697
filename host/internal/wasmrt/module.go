package wasmrt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/compilecache"
	"github.com/wasmtask/wasmtask/host/internal/guestio"
	"github.com/wasmtask/wasmtask/host/internal/schema"
	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// Module is a loaded tool module: its compiled code, its validated
// manifest and its compiled schemas. It is safe for concurrent use:
// every Call runs in its own instance. Close it when done; calls in flight
// finish first.
type Module struct {
	r    *Runtime
	name string

	// Set by Load, then read-only.
	rt       wazero.Runtime          // the module's own runtime (see Runtime)
	base     wazero.ModuleConfig     // the Runtime's, with the module's name as argv[0]
	cache    wazero.CompilationCache // rt's own: closing it frees everything rt compiled
	compiled wazero.CompiledModule
	manifest *abi.Manifest
	schemas  map[string]toolSchemas // by tool name
	minPages uint32                 // initial memory of the module
	static   uint64                 // host bytes of an instance outside linear memory and stack
	hasStart bool                   // the module's start function is exported as wasmcode.StartExport
	abi11    bool                   // imports an ABI 1.1 function, so knows elicit's -3
	reach    Reach                  // what its calls can report before their result
	// initEach: the module exports abi.ExportInitialize and is not
	// pre-initialised, so every instance runs it before _start.
	initEach bool
	// memOnly: compiled code is not kept on disk (a snapshot's bytes
	// differ from one load to the next).
	memOnly bool
	// snap is the share of Config.MaxSnapshotMiB the module's snapshot
	// holds (nil: not pre-initialised); free gives it back.
	snap *snapshotHold

	ios sync.Pool // of *callIO, for calls of this module

	engineOnce sync.Once
	engineErr  error

	instances atomic.Uint64 // instantiations so far (see Instantiations)

	mu       sync.Mutex
	closed   bool
	inflight int
	aborts   map[*callCtl]struct{} // calls in flight, for Abort
	done     chan struct{}         // closed when closed and no call is in flight
}

// Instantiations reports how many instances of m calls have created (or
// tried to): one per call that got past its checks.
func (m *Module) Instantiations() uint64 { return m.instances.Load() }

// callCtl lets Abort end one call in flight.
type callCtl struct{ cancel context.CancelCauseFunc }

// Reach is which events a module's calls can produce before their result,
// read from the host functions the module imports: a module that does not
// import progress never reports progress. Any call may log (a line on
// stderr is a log message).
type Reach struct {
	Progress bool // imports progress
	Elicit   bool // imports elicit, elicit_all, sample or roots: may ask the client
}

// Reach reports which events a call of one of the module's tools can
// produce before its result.
func (m *Module) Reach() Reach { return m.reach }

// Name returns the name given to Load.
func (m *Module) Name() string { return m.name }

// Manifest returns the validated, normalised manifest. It is shared: do not
// modify it.
func (m *Module) Manifest() *abi.Manifest { return m.manifest }

// Close marks the module closed: later calls fail with ErrClosed. It does
// not wait: calls in flight run to their end, and the compiled code is freed
// after the last of them. Done reports when.
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

// Abort closes the module and ends its calls in flight: they fail with a
// *GuestError wrapping ErrAborted, whatever their guest does afterwards.
// The host aborts a module removed from the tool directory when the
// operator asked for that.
func (m *Module) Abort() {
	m.mu.Lock()
	calls := make([]*callCtl, 0, len(m.aborts))
	for c := range m.aborts {
		calls = append(calls, c)
	}
	m.mu.Unlock()
	_ = m.Close(context.Background())
	for _, c := range calls {
		c.cancel(ErrAborted)
	}
}

// Done is closed once the module is closed and its last call has ended.
func (m *Module) Done() <-chan struct{} { return m.done }

func (m *Module) free() {
	_ = m.closeEngine(context.Background())
	m.snap.release()
	m.r.mu.Lock()
	delete(m.r.modules, m)
	m.r.mu.Unlock()
	close(m.done)
}

// closeEngine closes the module's runtime, ending its instances, and frees
// its compiled code, once however often it is called (by the Runtime's
// Close and by the module's own end).
func (m *Module) closeEngine(ctx context.Context) error {
	m.engineOnce.Do(func() {
		m.engineErr = errors.Join(m.rt.CloseWithExitCode(ctx, sys.ExitCodeContextCanceled), m.cache.Close(ctx))
	})
	return m.engineErr
}

func (m *Module) acquire(c *callCtl) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.inflight++
	if m.aborts == nil {
		m.aborts = make(map[*callCtl]struct{})
	}
	m.aborts[c] = struct{}{}
	return true
}

func (m *Module) releaseCall(c *callCtl) {
	m.mu.Lock()
	m.inflight--
	delete(m.aborts, c)
	last := m.closed && m.inflight == 0
	m.mu.Unlock()
	if last {
		m.free()
	}
}

// compile instruments the module (wasmcode.Guard) within the bounds of its
// it and checks its imports and exports against the
// instance), compiles it and checks its imports and exports against the
// ABI. A module the guard cannot read is refused without wazero seeing it:
// wazero's decoder allocates what a count declares before it reads the
// entries (a 13-byte module declaring 2^32 globals ended the process).
func (m *Module) compile(ctx context.Context, wasm []byte, lim Limits) error {
	g, err := wasmcode.Guard(wasm, wasmcode.Options{
		Interpreter:  m.r.cfg.Interpreter,
		MaxWork:      uint64(m.r.cfg.MaxCodeMiB) << 20,
		MaxMemory:    uint64(lim.MemoryMiB) << 20,
		FuelPerCheck: fuelPerCheck,
	})
	switch {
	case errors.Is(err, wasmcode.ErrTooLarge):
		return fmt.Errorf("load %q: %w", m.name, &tooLargeError{err})
	case err != nil:
		return fmt.Errorf("load %q: %w: %v", m.name, ErrCompile, err)
	}
	guarded := g.Wasm
	if !m.r.keepSegments && m.snap == nil { // a snapshot's segments are merged already
		guarded = wasmcode.MergeDataSection(guarded)
	}
	// Two workers: wazero's compiler checks the context between functions
	// only when it compiles on more than one (a single worker never looks
	// at it), so the load's deadline then ends a compile within one
	// function, whose cost wasmcode.Guard bounded.
	compiled, err := m.compileCached(experimental.WithCompilationWorkers(ctx, compileWorkers), guarded)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("load %q: %w", m.name, &loadLimitError{fmt.Errorf("its compile passed the load's deadline: %w", ctx.Err())})
		}
		return fmt.Errorf("load %q: %w: %v", m.name, ErrCompile, err)
	}
	if err := pastDeadline(ctx); err != nil {
		// The interpreter's compile, and a function of the compiler's,
		// cannot be interrupted: one that ended late is refused all the
		// same, as describe is.
		_ = m.closeEngine(ctx)
		return fmt.Errorf("load %q: its compile ended after the load's deadline: %w", m.name, err)
	}
	if err := checkImportsExports(compiled, m.r.wasi); err != nil {
		_ = m.closeEngine(ctx)
		return fmt.Errorf("load %q: %w", m.name, err)
	}
	for _, mem := range compiled.ExportedMemories() {
		m.minPages = max(m.minPages, mem.Min())
	}
	for _, f := range compiled.ImportedFunctions() {
		mod, fn, _ := f.Import()
		if mod != abi.ImportModule {
			continue
		}
		switch fn {
		case abi.FuncElicitAll, abi.FuncBeginTask:
			m.abi11 = true
		}
		switch fn {
		case abi.FuncProgress:
			m.reach.Progress = true
		case abi.FuncElicit, abi.FuncElicitAll, abi.FuncSample, abi.FuncRoots: // each asks the client
			m.reach.Elicit = true
		}
	}
	m.compiled, m.static, m.hasStart = compiled, g.Static, g.HasStart
	m.base = m.r.base.WithArgs(m.name)
	return nil
}

// compileCached gives the module its runtime and compiles wasm in it: with
// the disk cache, in a runtime whose cache is a private directory holding
// the module's checked entry (compilecache); when that entry cannot be read or
// written, the entry is removed and the module compiled again in memory (a
// cache is an optimisation, never a reason to refuse a module). On error,
// the module has no runtime left open.
func (m *Module) compileCached(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	var st *compilecache.Stage
	if d := m.r.disk; d != nil && !m.memOnly {
		st = d.Stage(m.name, wasm) // nil when the disk cannot be used
	}
	if st != nil {
		defer st.Close()
		cache, err := wazero.NewCompilationCacheWithDir(st.Dir())
		if err == nil {
			rt, err := m.r.engine(ctx, cache)
			if err == nil {
				compiled, err := rt.CompileModule(ctx, wasm)
				if err == nil {
					m.rt, m.cache = rt, cache
					st.Publish()
					return compiled, nil
				}
				_ = rt.Close(ctx)
				if !compilecache.Fault(err) {
					_ = cache.Close(ctx)
					return nil, err
				}
			}
		}
		_ = cache.Close(ctx)
		st.Drop()
	}
	cache := wazero.NewCompilationCache()
	rt, err := m.r.engine(ctx, cache)
	if err != nil {
		_ = cache.Close(ctx)
		return nil, err
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, err
	}
	m.rt, m.cache = rt, cache
	return compiled, nil
}

// compileWorkers is how many goroutines compile one module (wazero's
// experimental.WithCompilationWorkers): the fewest with which its compile
// can be cancelled.
const compileWorkers = 2

// pastDeadline returns the error of a load step (a compile, a guest run)
// that returned after ctx's deadline, marked as a load limit: also when the
// context does not say so yet. A context's deadline is a timer, and a
// timer can fire late — a guest running native code holds up the Go
// runtime — so a run that returned past its deadline could otherwise be
// accepted. A canceled ctx is its own error, not a limit.
func pastDeadline(ctx context.Context) error {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return &loadLimitError{context.DeadlineExceeded}
	}
	return nil
}

// toolSchemas are the compiled schemas of one tool; out is nil when the
// tool declares no outputSchema.
type toolSchemas struct{ in, out *schema.Schema }

// describe asks the module for its manifest within lim, validates it and
// compiles the tools' input and output schemas.
func (m *Module) describe(ctx context.Context, lim Limits) error {
	out, err := m.r.runLoad(ctx, m, abi.MethodDescribe, describeRequest, lim, nil)
	if err != nil {
		return fmt.Errorf("load %q: describe failed: %w", m.name, err)
	}
	man, err := abi.DecodeManifest(out)
	if err != nil {
		return fmt.Errorf("load %q: %w", m.name, err)
	}
	schemas := make(map[string]toolSchemas, len(man.Tools))
	for _, t := range man.Tools {
		var ts toolSchemas
		if ts.in, err = schema.Compile(t.InputSchema); err != nil {
			return fmt.Errorf("load %q: %w: tool %q: inputSchema: %v", m.name, ErrSchema, t.Name, err)
		}
		if len(t.OutputSchema) > 0 {
			if ts.out, err = schema.Compile(t.OutputSchema); err != nil {
				return fmt.Errorf("load %q: %w: tool %q: outputSchema: %v", m.name, ErrSchema, t.Name, err)
			}
		}
		schemas[t.Name] = ts
	}
	m.manifest, m.schemas = man, schemas
	return nil
}

var describeRequest = []byte(fmt.Sprintf(`{"abi":%d,"method":%q}`, abi.Version, abi.MethodDescribe))

// Call runs tool with args (a JSON object; empty or null means {}) in a
// fresh instance bounded by lim, reporting to ev (which may be nil). The
// arguments are parsed once, here, and validated against the tool's input
// schema before the guest runs (an *ArgumentsError), within lim.Timeout: a
// call whose time runs out while its arguments are checked is KindTimeout.
// A guest failure is a *GuestError; so is a result without the
// structuredContent the tool's outputSchema describes (KindBadOutput).
// ErrUnknownTool comes before the guest runs; ErrClosed after Close. A
// returned Result may itself have IsError set: that is the tool's own
// answer.
func (m *Module) Call(ctx context.Context, tool string, args json.RawMessage, lim Limits, ev abi.Events) (*abi.Result, error) {
	if err := lim.validate(); err != nil {
		return nil, fmt.Errorf("call %q of %q: %w", tool, m.name, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctl := &callCtl{cancel: cancel}
	if !m.acquire(ctl) {
		return nil, fmt.Errorf("call %q of %q: %w", tool, m.name, ErrClosed)
	}
	defer m.releaseCall(ctl)
	ts, ok := m.schemas[tool]
	if !ok {
		return nil, fmt.Errorf("call %q of %q: %w", tool, m.name, ErrUnknownTool)
	}
	// The call's time limit covers checking its arguments too.
	start := timeNow()
	args, err := validArguments(ts.in, args)
	if err != nil {
		return nil, &ArgumentsError{Tool: tool, Detail: err.Error()}
	}
	lim.elapsed = timeNow().Sub(start)
	if lim.elapsed >= lim.Timeout {
		return nil, &GuestError{Module: m.name, Tool: tool, Kind: KindTimeout, Msg: fmt.Sprintf("exceeded %v while checking the arguments", lim.Timeout)}
	}
	out, gerr := m.r.run(ctx, m, tool, callRequest(tool, args), lim, ev)
	defer guestio.PutOutput(out) // decoded below into values of their own
	if context.Cause(ctx) == ErrAborted {
		// Whatever the guest did after the abort (a guest woken from a
		// sleep by the cancel may still exit with a result), the call
		// ends with it.
		return nil, &GuestError{Module: m.name, Tool: tool, Kind: KindCanceled, Msg: "the module was aborted", cause: ErrAborted}
	}
	if gerr != nil {
		return nil, gerr
	}
	res, err := abi.DecodeResult(out, lim.Result)
	if err != nil {
		detail := strings.TrimPrefix(err.Error(), abi.ErrResult.Error()+": ")
		if errors.Is(err, abi.ErrResultTooLarge) {
			return nil, &GuestError{Module: m.name, Tool: tool, Kind: KindOutputTooLarge, Msg: detail, cause: err}
		}
		return nil, &GuestError{Module: m.name, Tool: tool, Kind: KindBadOutput, Msg: detail + snippet(out), cause: err}
	}
	if err := checkOutput(ts.out, res); err != nil {
		return nil, &GuestError{Module: m.name, Tool: tool, Kind: KindBadOutput, Msg: err.Error()}
	}
	return res, nil
}

// timeNow is the clock of Call's time accounting (a test replaces it).
var timeNow = time.Now

// checkOutput checks a result against the tool's outputSchema, when it
// declares one: unless the result is a tool error (isError), it must carry
// structuredContent that the schema accepts.
func checkOutput(out *schema.Schema, res *abi.Result) error {
	if out == nil || res.IsError || res.Error != nil {
		return nil
	}
	if len(res.StructuredContent) == 0 {
		return errors.New("the tool declares an outputSchema but its result has no structuredContent")
	}
	v, err := out.Decode(res.StructuredContent)
	if err == nil {
		err = out.Validate(v)
	}
	if err != nil {
		return fmt.Errorf("structuredContent does not match the tool's outputSchema: %v", err)
	}
	return nil
}

// validArguments parses args once and validates them: a JSON object that
// the schema accepts. Empty or null arguments are {}. Arguments nested too
// deep or too costly to validate are refused before they are parsed.
func validArguments(s *schema.Schema, args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage("{}")
	}
	v, err := s.Decode(args)
	if err != nil {
		return nil, err
	}
	if !schema.IsObject(v) {
		return nil, errors.New("not a JSON object")
	}
	if err := s.Validate(v); err != nil {
		return nil, err
	}
	return args, nil
}

// callRequest is the abi.Request of a call. It is written, not marshalled:
// args were parsed and validated already (a second encode would scan them
// again), and a tool name is made of characters JSON needs no escape for
// (abi.ValidToolName).
func callRequest(tool string, args json.RawMessage) []byte {
	b := make([]byte, 0, len(callRequestPrefix)+len(tool)+len(args)+16)
	b = append(b, callRequestPrefix...)
	b = append(b, tool...)
	b = append(b, `","arguments":`...)
	b = append(b, args...)
	return append(b, '}')
}

var callRequestPrefix = fmt.Sprintf(`{"abi":%d,"method":%q,"tool":"`, abi.Version, abi.MethodCall)

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

// runLoad runs a guest at load (describe; _initialize with a non-nil
// snap) within lim and ctx, and refuses a run that ended at one of its
// limits (marked as a load limit), also one that returned past its
// deadline, which the call's timer may not have seen yet (pastDeadline).
func (r *Runtime) runLoad(ctx context.Context, m *Module, tool string, req []byte, lim Limits, snap func(*call, api.Module) error) ([]byte, error) {
	start := time.Now()
	out, gerr := r.runWith(ctx, m, tool, req, lim, nil, snap)
	if gerr != nil {
		return nil, atLoadLimit(gerr)
	}
	err := pastDeadline(ctx)
	if ran := time.Since(start); err == nil && ran >= lim.Timeout {
		err = &loadLimitError{fmt.Errorf("exceeded %v (returned after %v)", lim.Timeout, ran.Round(time.Millisecond))}
	}
	if err != nil {
		guestio.PutOutput(out)
		if !errors.Is(err, ErrLoadLimit) {
			return nil, &GuestError{Module: m.name, Tool: tool, Kind: KindCanceled, Msg: err.Error(), cause: err}
		}
		return nil, &loadLimitError{&GuestError{Module: m.name, Tool: tool, Kind: KindTimeout, Msg: err.Error(), cause: err}}
	}
	return out, nil
}

// run runs one request in a fresh instance and returns its stdout. It is
// the only place a guest runs: prepare the call's sandbox, instantiate (which
// runs _start), then classify how it ended.
func (r *Runtime) run(ctx context.Context, m *Module, tool string, req []byte, lim Limits, ev abi.Events) ([]byte, *GuestError) {
	return r.runWith(ctx, m, tool, req, lim, ev, nil)
}

// runWith is run; with a non-nil snap, the run is a pre-initialisation
// (snapshot.go): the instance runs _initialize instead of _start, its host
// functions trap, and snap reads it before it is closed.
func (r *Runtime) runWith(ctx context.Context, m *Module, tool string, req []byte, lim Limits, ev abi.Events, snap func(*call, api.Module) error) ([]byte, *GuestError) {
	c := &call{r: r, m: m, tool: tool, lim: lim, snap: snap}
	if lim.MemoryMiB > r.cfg.MaxMemoryMiB {
		c.lim.MemoryMiB = r.cfg.MaxMemoryMiB
	}
	c.plan = m.plan(c.lim.MemoryMiB)
	if need := uint64(m.minPages) * wasmcode.PageSize; need > c.plan.pool {
		return nil, c.fail(KindOutOfMemory, fmt.Sprintf("%s: it starts with %.4g MiB of linear memory, and needs %s for tables, globals and the instance",
			c.memMsg(), float64(need)/(1<<20), wasmcode.FormatSize(c.plan.static)), nil)
	}
	if err := ctx.Err(); err != nil {
		return nil, c.fail(ctxKind(err), err.Error(), nil)
	}
	// One context ends the call, at its timeout or by cancel (the
	// runtime's Close, a write past a bound): classify tells them apart by
	// what else happened, not by the context's error.
	callCtx, cancel := context.WithTimeout(ctx, c.lim.Timeout-c.lim.elapsed)
	defer cancel()

	state := newCallState(ev, c.lim.MaxLogBytes)
	state.preinit = snap != nil
	state.abi11 = m.abi11 || m.manifest != nil && m.manifest.Revision >= 1
	state.onFuel, _ = ctx.Value(fuelHookKey{}).(func(bool))
	if !r.track(state, cancel) {
		return nil, c.fail(KindCanceled, "the runtime was closed", ErrClosed)
	}
	defer r.untrack(state)

	cfg, cleanup, err := c.sandbox(callCtx, req, state, cancel)
	if err != nil {
		return nil, c.fail(KindInstantiate, err.Error(), err)
	}
	defer cleanup()
	defer c.m.putIO(c.io) // last: after the instance is closed and the output read
	c.cfg = cfg
	alloc := &limitedAllocator{pool: c.plan.pool, cache: r.linear, over: cancel}
	c.alloc = alloc
	defer alloc.release() // after execute: the guest has stopped
	runCtx := experimental.WithMemoryAllocator(callCtx, alloc)
	runCtx = context.WithValue(runCtx, callStateKey{}, state)

	start := time.Now()
	err = c.execute(runCtx)
	c.stderr.Flush()
	state.finish()
	c.tail = string(c.stderr.Tail())
	if err == nil && !c.stdout.Exceeded() && callCtx.Err() == nil {
		return c.stdout.Bytes(), nil
	}
	guestio.PutOutput(c.stdout.Bytes())
	return nil, c.classify(ctx, callCtx, err, alloc, time.Since(start))
}

// execute instantiates the module, hands its memory pool (wasmcode's stack.go) to the
// allocator, and runs the module's start function, if it has one, and
// _start. The instance is closed before it returns. An error of the
// instantiation itself is an *instantiateError.
func (c *call) execute(ctx context.Context) error {
	c.m.instances.Add(1)
	mod, err := c.m.rt.InstantiateModule(ctx, c.m.compiled, c.cfg)
	if err != nil {
		return &instantiateError{err}
	}
	defer mod.Close(context.Background())
	left, okLeft := mod.ExportedGlobal(wasmcode.LeftExport).(api.MutableGlobal)
	low, okLow := mod.ExportedGlobal(wasmcode.LowExport).(api.MutableGlobal)
	if !okLeft || !okLow {
		return &instantiateError{errors.New("the instance has no memory pool")}
	}
	c.alloc.attach(left, low)
	entries := []string{abi.ExportStart}
	switch {
	case c.snap != nil:
		entries = []string{abi.ExportInitialize}
	case c.m.initEach:
		entries = []string{abi.ExportInitialize, abi.ExportStart}
	}
	if c.m.hasStart {
		entries = append([]string{wasmcode.StartExport}, entries...)
	}
	for _, name := range entries {
		if _, err := mod.ExportedFunction(name).Call(ctx); err != nil {
			var exit *sys.ExitError
			if errors.As(err, &exit) && exit.ExitCode() == 0 && c.snap == nil {
				return nil // proc_exit(0): the program is done
			}
			c.poolLow = int64(low.Get())
			return err
		}
	}
	if c.snap != nil {
		if err := c.snap(c, mod); err != nil {
			return &instantiateError{err}
		}
	}
	return nil
}

// instantiateError is the error of an instance that could not be created.
type instantiateError struct{ err error }

func (e *instantiateError) Error() string { return e.err.Error() }
func (e *instantiateError) Unwrap() error { return e.err }

// call is the state of one run that its steps share.
type call struct {
	r      *Runtime
	m      *Module
	tool   string
	lim    Limits
	plan   memoryPlan // lim.MemoryMiB divided (memory.go)
	cfg    wazero.ModuleConfig
	alloc  *limitedAllocator
	io     *callIO // stdout and stderr are in it
	stdout *guestio.Output
	stderr *guestio.Log
	tail   string // stderr tail, once the guest ended
	// poolLow is the pool's low-water mark when the guest trapped:
	// negative when the pool ended the call.
	poolLow int64
	// snap, when set, makes the run a pre-initialisation (runWith).
	snap func(*call, api.Module) error
}

func (c *call) memMsg() string {
	return fmt.Sprintf("the module needs more than its memory limit of %d MiB", c.lim.MemoryMiB)
}

func (c *call) fail(kind Kind, msg string, cause error) *GuestError {
	return &GuestError{Module: c.m.name, Tool: c.tool, Kind: kind, Msg: msg, Stderr: c.tail, cause: cause}
}

// sandbox is the module configuration of one call: stdin holds req, stdout
// and stderr are bounded, and only the granted environment and mounts are
// visible. cleanup closes the mounts after the call.
func (c *call) sandbox(callCtx context.Context, req []byte, state *callState, cancel context.CancelFunc) (wazero.ModuleConfig, func(), error) {
	io := c.m.takeIO()
	c.io = io
	io.ctx = callCtx
	io.stdin.Reset(req)
	io.stdout = guestio.Output{Ctx: callCtx, Max: c.lim.MaxOutputBytes, Over: cancel, Pooled: true}
	io.stderr = guestio.Log{Ctx: callCtx, Max: c.lim.MaxLogBytes}
	c.stdout, c.stderr = &io.stdout, &io.stderr
	if state.ev != nil {
		c.stderr.Sink = func(line string) bool { return state.log(abi.LogInfo, line) }
	}
	cfg := io.cfg
	for k, v := range c.lim.Env {
		cfg = cfg.WithEnv(k, v)
	}
	if len(c.lim.Mounts) == 0 {
		return cfg, func() {}, nil
	}
	fsc, roots, err := openMounts(c.lim.Mounts)
	if err != nil {
		return nil, nil, err
	}
	return cfg.WithFSConfig(fsc), func() { closeRoots(roots) }, nil
}

// callIO is the stdin, stdout, stderr, random source and clock of one
// call at a time, and a module configuration bound to them: a call takes
// one from its module's pool and fills it in, instead of deriving a
// configuration (each With… copies it) and allocating its readers and
// writers. Nothing of a callIO outlives its call: the instance is closed
// before the callIO goes back (runWith), and the output buffer leaves with
// the result (guestio.PutOutput).
type callIO struct {
	cfg    wazero.ModuleConfig
	ctx    context.Context // the call's, for the readers and the clock
	stdin  bytes.Reader
	stdout guestio.Output
	stderr guestio.Log
}

// takeIO returns a callIO of m from its pool, or a new one.
func (m *Module) takeIO() *callIO {
	if io, ok := m.ios.Get().(*callIO); ok {
		return io
	}
	io := &callIO{}
	io.cfg = m.base.
		WithStdin(guestio.Reader{Ctx: io, R: &io.stdin}).
		WithRandSource(guestio.Reader{Ctx: io, R: rand.Reader}).
		WithStdout(&io.stdout).
		WithStderr(&io.stderr).
		WithNanosleep(io.sleep)
	return io
}

// putIO gives io back to m's pool once its call has ended.
func (m *Module) putIO(io *callIO) {
	*io = callIO{cfg: io.cfg, stdin: io.stdin}
	io.stdin.Reset(nil)
	m.ios.Put(io)
}

// Err is the call's context's (guestio.Reader reads through it).
func (io *callIO) Err() error { return io.ctx.Err() }

func (io *callIO) sleep(ns int64) { sleepCtx(io.ctx, ns) }

// classify turns how a guest that did not succeed ended into a GuestError.
// ctx is the caller's context, callCtx the call's (with its timeout).
func (c *call) classify(ctx, callCtx context.Context, err error, alloc *limitedAllocator, ran time.Duration) *GuestError {
	switch {
	case c.r.isClosed():
		return c.fail(KindCanceled, "the runtime was closed", ErrClosed)
	case c.stdout.Exceeded():
		return c.fail(KindOutputTooLarge, fmt.Sprintf("output exceeds %d bytes", c.lim.MaxOutputBytes), nil)
	case c.poolLow < 0 && ctx.Err() == nil:
		return c.fail(KindOutOfMemory, fmt.Sprintf("%s: its call stack passed the %s left beside %s of linear memory and %s for tables, globals and the instance",
			c.memMsg(), wasmcode.FormatSize(c.plan.pool-alloc.charged), wasmcode.FormatSize(alloc.charged), wasmcode.FormatSize(c.plan.static)), nil)
	case alloc.refused.Load() && ctx.Err() == nil:
		return c.fail(KindOutOfMemory, c.memMsg(), nil)
	case ctx.Err() != nil:
		return c.fail(ctxKind(ctx.Err()), ctx.Err().Error(), ctx.Err())
	case callCtx.Err() != nil:
		return c.fail(KindTimeout, fmt.Sprintf("exceeded %v (ran %v)", c.lim.Timeout, ran.Round(time.Millisecond)), nil)
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return c.fail(KindExit, fmt.Sprintf("exit code %d", exit.ExitCode()), nil)
	}
	var inst *instantiateError
	if errors.As(err, &inst) {
		return c.fail(KindInstantiate, trimTrap(err.Error()), err)
	}
	if strings.HasPrefix(err.Error(), "wasm error: stack overflow") {
		// The engine's own limit (the interpreter's 2000 frames) came
		// before the pool ran out.
		return c.fail(KindOutOfMemory, "its call stack is deeper than the engine allows", nil)
	}
	return c.fail(KindTrap, trimTrap(err.Error()), err)
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
