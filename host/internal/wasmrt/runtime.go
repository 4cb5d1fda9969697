package wasmrt

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/compilecache"
	"github.com/wasmtask/wasmtask/host/internal/linearmem"
	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

// Config configures a Runtime. MaxMemoryMiB and MaxSnapshotMiB are
// required: the host decides the sandbox's numbers, in one place, and hands
// them down (host/internal/policy).
type Config struct {
	// CacheDir, when set, keeps compiled code on disk so that the next
	// process compiles a known module in a fraction of the time (compiler
	// only: the interpreter's code is not kept). It must be private to this
	// user (New creates it with mode 0700 and refuses one others may
	// write). "" keeps compiled code in memory only.
	CacheDir string
	// MaxCacheMiB bounds CacheDir: past it the least recently used modules'
	// entries are removed. Required when CacheDir is set.
	MaxCacheMiB int
	// CacheKeyFile holds the key that authenticates CacheDir's entries
	// (HMAC-SHA256): an entry it does not vouch for is ignored and the
	// module compiled again. New creates the file (mode 0600, 32 random
	// bytes) when it does not exist, and refuses one inside CacheDir,
	// another user's, one group or others may access, or one of fewer than
	// 32 bytes or more than 4 KiB. Required when CacheDir is set (and
	// Interpreter is not).
	CacheKeyFile string
	// Logger receives a line for each compile cache entry refused or not
	// stored (warnings) and stored (debug). nil: discard.
	Logger *slog.Logger
	// Interpreter selects wazero's interpreter instead of its compiler. The
	// compiler is used where wazero supports it (amd64, arm64) unless set.
	Interpreter bool
	// MaxMemoryMiB is the runtime-wide ceiling of one instance's linear
	// memory; the MemoryMiB of a call's Limits is capped by it.
	MaxMemoryMiB int
	// MaxCodeMiB bounds a module's code, its function bodies together
	// after instrumentation, and its compile work counted in bytes of code
	// (wasmcode.Guard: functions, globals, types, element and data entries,
	// and what each function's locals and blocks cost the compiler).
	// Compiled code takes about four times the code with the compiler,
	// about 33 times with the interpreter (measured on Go and C modules); a
	// larger module is refused at load ([ErrTooLarge]) before it is
	// compiled. One function is at most wasmcode.MaxFunctionBytes and a bounded
	// compile work, since compiling a function cannot be interrupted. 0: no
	// limit beyond those.
	MaxCodeMiB int
	// MaxSnapshotMiB bounds the memory the snapshots of pre-initialised
	// modules hold together while they are loaded (snapshot.go): a
	// snapshot that does not fit what is left is refused
	// ([ErrSnapshotBudget]; one larger than the whole, [ErrLoadLimit]).
	MaxSnapshotMiB int
}

func (c Config) validate() error {
	if c.MaxMemoryMiB <= 0 || c.MaxMemoryMiB > maxWasm32MiB {
		return fmt.Errorf("MaxMemoryMiB %d is outside 1..%d", c.MaxMemoryMiB, maxWasm32MiB)
	}
	if c.CacheDir != "" && c.MaxCacheMiB <= 0 {
		return fmt.Errorf("MaxCacheMiB %d must be positive with a CacheDir", c.MaxCacheMiB)
	}
	if c.CacheDir != "" && !c.Interpreter && c.CacheKeyFile == "" {
		return errors.New("a CacheDir needs a CacheKeyFile")
	}
	if c.MaxCodeMiB < 0 {
		return fmt.Errorf("MaxCodeMiB %d is negative", c.MaxCodeMiB)
	}
	if c.MaxSnapshotMiB <= 0 {
		return fmt.Errorf("MaxSnapshotMiB %d must be positive", c.MaxSnapshotMiB)
	}
	return nil
}

// Runtime compiles modules and runs their calls. It is safe for concurrent
// use. Close releases everything, ending calls still running.
//
// Each module gets a wazero runtime and compilation cache of its own (see
// Module.compileCached): closing them frees everything compiled for the
// module, and with a disk cache the module's entry is a file of its own,
// which the host can authenticate, bound and evict (package compilecache).
type Runtime struct {
	cfg  Config
	rc   wazero.RuntimeConfig // of every module's runtime, without its cache
	disk *compilecache.Cache  // nil: compiled code is kept in memory only
	base wazero.ModuleConfig

	wasi   map[string]hostSignature // the WASI functions the runtime provides
	linear *linearmem.Cache         // linear memories kept for reuse
	// keepSegments leaves modules' data segments as they are (a benchmark
	// compares with and without mergeDataSection).
	keepSegments bool
	// noPreinit runs a pre-initialisable module's _initialize in every
	// instance instead of snapshotting it at load (a benchmark compares).
	noPreinit bool

	mu        sync.Mutex
	closed    bool
	calls     map[*callState]context.CancelFunc // running calls, ended by Close
	modules   map[*Module]struct{}              // loaded and not freed, closed by Close
	snapshots uint64                            // bytes held by snapshots (snapshotHold)
}

// CachedModules counts the modules whose compiled code the disk cache
// holds now (0 without Config.CacheDir).
func (r *Runtime) CachedModules() int {
	if r.disk == nil {
		return 0
	}
	return r.disk.Entries()
}

// New returns a Runtime. Close it when done.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Runtime{cfg: cfg, linear: linearmem.NewCache(),
		calls: make(map[*callState]context.CancelFunc), modules: make(map[*Module]struct{})}
	if cfg.CacheDir != "" && !cfg.Interpreter {
		log := cfg.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		d, err := compilecache.Open(cfg.CacheDir, cfg.MaxCacheMiB, cfg.CacheKeyFile, log)
		if err != nil {
			return nil, err
		}
		r.disk = d
	}
	r.rc = wazero.NewRuntimeConfig()
	if cfg.Interpreter {
		r.rc = wazero.NewRuntimeConfigInterpreter()
	}
	// Not WithCloseOnContextDone: Load instruments guests to check their
	// call's context themselves, at a fraction of its cost (fuel.go).
	r.rc = r.rc.
		// Memory is bounded per call by limitedAllocator, capped at
		// cfg.MaxMemoryMiB. wazero's own limit is left at the wasm32
		// maximum: when it refuses a growth first, the allocator never
		// hears of it and the failure could not be told from a trap.
		WithMemoryLimitPages(65536)
	r.base = wazero.NewModuleConfig().
		WithName(""). // many instances of one module at once
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime().
		WithStartFunctions() // Call runs them once the memory pool is set (wasmcode's stack.go)

	cache := wazero.NewCompilationCache()
	defer cache.Close(ctx)
	probe, err := r.engine(ctx, cache)
	if err != nil {
		return nil, err
	}
	defer probe.Close(ctx)
	r.wasi = make(map[string]hostSignature)
	for name, def := range probe.Module(wasi_snapshot_preview1.ModuleName).ExportedFunctionDefinitions() {
		r.wasi[name] = hostSignature{params: def.ParamTypes(), results: def.ResultTypes()}
	}
	return r, nil
}

// engine returns a new wazero runtime compiling into cache, with WASI and
// the host module instantiated.
func (r *Runtime) engine(ctx context.Context, cache wazero.CompilationCache) (wazero.Runtime, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, r.rc.WithCompilationCache(cache))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("WASI: %w", err)
	}
	if err := instantiateHost(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("host module: %w", err)
	}
	if err := instantiateFuel(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("fuel module: %w", err)
	}
	return rt, nil
}

// Close ends every running call (they fail with KindCanceled wrapping
// ErrClosed), frees all compiled code and closes the compilation caches.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for _, cancel := range r.calls {
		cancel() // unblocks calls waiting in a host function such as elicit
	}
	mods := make([]*Module, 0, len(r.modules))
	for m := range r.modules {
		mods = append(mods, m)
	}
	r.mu.Unlock()
	var errs []error
	for _, m := range mods {
		errs = append(errs, m.closeEngine(ctx))
	}
	r.linear.Close()
	return errors.Join(errs...)
}

// track registers a running call so that Close can end it. It reports
// false when the runtime is already closed.
func (r *Runtime) track(s *callState, cancel context.CancelFunc) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.calls[s] = cancel
	return true
}

func (r *Runtime) untrack(s *callState) {
	r.mu.Lock()
	delete(r.calls, s)
	r.mu.Unlock()
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

var wasmMagic = []byte{0x00, 'a', 's', 'm'}

// Load compiles wasm, checks it against the ABI, runs describe within
// lim, and validates the manifest (abi.DecodeManifest) and compiles the
// tools' input schemas: every fact about the module is computed here, once.
// name is used in errors and as the guest's program name.
//
// lim bounds describe, and _initialize when the module is pre-initialised
// (snapshot.go); lim.MemoryMiB (capped by Config.MaxMemoryMiB) is the
// memory limit the module's tools may have at most, and bounds what one
// instance takes: a module whose initial memory, tables, globals and
// element segments do not fit in it is refused before it is compiled
// ([ErrTooLarge]), as one whose load would cost more than Config.MaxCodeMiB
// (wasmcode.Guard). ctx bounds the whole load, compile included: a compile
// or a run that returns past its deadline fails. Every failure at a limit
// matches [ErrLoadLimit].
//
// Load does not share modules: the caller (package plugins' Build) loads
// each content digest once and reuses the Module across reloads. wazero's
// compilation cache still makes a second compile of the same bytes cheap.
func (r *Runtime) Load(ctx context.Context, name string, wasm []byte, lim Limits) (*Module, error) {
	if !bytes.HasPrefix(wasm, wasmMagic) {
		return nil, fmt.Errorf("load %q: %w (no \\0asm header)", name, ErrNotWasm)
	}
	if wasmcode.IsComponent(wasm) {
		return nil, fmt.Errorf("load %q: %w: build the tool for wasm32-wasip1 (WASI preview 1), as abi/ABI.md shows", name, ErrComponent)
	}
	if err := lim.validate(); err != nil {
		return nil, fmt.Errorf("load %q: %w", name, err)
	}
	lim.MemoryMiB = min(lim.MemoryMiB, r.cfg.MaxMemoryMiB)
	if r.isClosed() {
		return nil, fmt.Errorf("load %q: %w", name, ErrClosed)
	}
	m := &Module{r: r, name: name, done: make(chan struct{})}
	if wasmcode.ExportsFunc(wasm, abi.ExportInitialize) {
		if r.noPreinit {
			m.initEach = true
		} else {
			snap, hold, err := r.preinit(ctx, name, wasm, lim)
			if err != nil {
				return nil, err
			}
			wasm, m.memOnly, m.snap = snap, true, hold
		}
	}
	if err := m.compile(ctx, wasm, lim); err != nil {
		m.snap.release()
		if m.snap != nil {
			err = fmt.Errorf("%w (as its _initialize left it)", err)
		}
		return nil, err
	}
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.modules[m] = struct{}{}
	}
	r.mu.Unlock()
	if closed {
		_ = m.closeEngine(context.Background())
		m.snap.release()
		return nil, fmt.Errorf("load %q: %w", name, ErrClosed)
	}
	if err := m.describe(ctx, lim); err != nil {
		m.free()
		return nil, err
	}
	return m, nil
}

// snapshotHold is the share of Config.MaxSnapshotMiB one snapshot holds.
// Its release is idempotent, and a nil hold holds nothing.
type snapshotHold struct {
	r     *Runtime
	bytes uint64
	once  sync.Once
}

// holdSnapshot takes n bytes of Config.MaxSnapshotMiB for a snapshot, or
// says why it cannot.
func (r *Runtime) holdSnapshot(n uint64) (*snapshotHold, error) {
	budget := uint64(r.cfg.MaxSnapshotMiB) << 20
	if n > budget {
		return nil, fmt.Errorf("%w: its snapshot takes %s, more than the whole snapshot budget of %s", ErrTooLarge, wasmcode.FormatSize(n), wasmcode.FormatSize(budget))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.snapshots+n > budget {
		return nil, fmt.Errorf("%w: its snapshot takes %s, and %s of %s are left (the snapshots of other loaded modules hold the rest)",
			ErrSnapshotBudget, wasmcode.FormatSize(n), wasmcode.FormatSize(budget-r.snapshots), wasmcode.FormatSize(budget))
	}
	r.snapshots += n
	return &snapshotHold{r: r, bytes: n}, nil
}

func (h *snapshotHold) release() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		h.r.mu.Lock()
		h.r.snapshots -= h.bytes
		h.r.mu.Unlock()
	})
}

// SnapshotBytes reports the bytes the snapshots of the modules loaded and
// not yet freed hold (within Config.MaxSnapshotMiB). It is safe for
// concurrent use.
func (r *Runtime) SnapshotBytes() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshots
}

// checkImportsExports refuses a module that the host cannot run under ABI
// v1: every import must be a function the host provides, with its type.
func checkImportsExports(c wazero.CompiledModule, wasi map[string]hostSignature) error {
	for _, f := range c.ImportedFunctions() {
		mod, fn, _ := f.Import()
		switch {
		case mod == wasmcode.FuelModule && fn == wasmcode.FuelFunc:
			// Load's own import (fuel.go): Load refuses a module that
			// imports from wasmcode.FuelModule itself.
		case mod == wasi_snapshot_preview1.ModuleName:
			sig, ok := wasi[fn]
			if !ok {
				return fmt.Errorf("%w: imports %s.%s, which WASI preview1 does not define", ErrABI, mod, fn)
			}
			if !slices.Equal(f.ParamTypes(), sig.params) || !slices.Equal(f.ResultTypes(), sig.results) {
				return fmt.Errorf("%w: imports %s.%s with type %s, want %s",
					ErrABI, mod, fn, sigString(f.ParamTypes(), f.ResultTypes()), sigString(sig.params, sig.results))
			}
		case mod == abi.ImportModule:
			sig, ok := hostFuncs[fn]
			if !ok {
				return fmt.Errorf("%w: imports %s.%s, which ABI v%d does not define (it has %s)",
					ErrABI, mod, fn, abi.Version, strings.Join(slices.Sorted(maps.Keys(hostFuncs)), ", "))
			}
			if !slices.Equal(f.ParamTypes(), sig.params) || !slices.Equal(f.ResultTypes(), sig.results) {
				return fmt.Errorf("%w: imports %s.%s with type %s, want %s",
					ErrABI, mod, fn, sigString(f.ParamTypes(), f.ResultTypes()), sigString(sig.params, sig.results))
			}
		case strings.HasPrefix(mod, abi.ImportModulePrefix):
			v := strings.TrimPrefix(mod, abi.ImportModulePrefix)
			return fmt.Errorf("%w: module imports from %q (ABI v%s), this host speaks ABI v%d (%q): rebuild the module against wasmtask abi v%d",
				abi.ErrVersion, mod, v, abi.Version, abi.ImportModule, abi.Version)
		default:
			return fmt.Errorf("%w: imports %s.%s: the host provides only %s and %s",
				ErrABI, mod, fn, wasi_snapshot_preview1.ModuleName, abi.ImportModule)
		}
	}
	for _, m := range c.ImportedMemories() {
		mod, n, _ := m.Import()
		return fmt.Errorf("%w: imports memory %s.%s: the host provides none", ErrABI, mod, n)
	}
	start, ok := c.ExportedFunctions()[abi.ExportStart]
	if !ok {
		return fmt.Errorf("%w: no %q export: a tool must be a WASI command (build an executable, not a library or reactor)", ErrABI, abi.ExportStart)
	}
	if len(start.ParamTypes()) != 0 || len(start.ResultTypes()) != 0 {
		return fmt.Errorf("%w: %q has type %s, want () -> ()", ErrABI, abi.ExportStart, sigString(start.ParamTypes(), start.ResultTypes()))
	}
	if init, ok := c.ExportedFunctions()[abi.ExportInitialize]; ok && len(init.ParamTypes())+len(init.ResultTypes()) != 0 {
		return fmt.Errorf("%w: %q has type %s, want () -> ()", ErrABI, abi.ExportInitialize, sigString(init.ParamTypes(), init.ResultTypes()))
	}
	// WASI needs the memory exported as "memory", and the host checks its
	// initial size against the call's limit before instantiating; a memory
	// it cannot see could start at any size (up to 4 GiB).
	if _, ok := c.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("%w: no exported \"memory\": a WASI command exports its linear memory", ErrABI)
	}
	return nil
}

func sigString(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return names(params) + " -> " + names(results)
}
