package wasmrt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmtask/wasmtask/abi"
)

// Config configures a Runtime. The zero value is valid.
type Config struct {
	// CacheDir, when set, keeps compiled code on disk so that the next
	// process compiles a known module in a fraction of the time. "" keeps
	// compiled code in memory only.
	CacheDir string
	// Interpreter selects wazero's interpreter instead of its compiler. The
	// compiler is used where wazero supports it (amd64, arm64) unless set.
	Interpreter bool
	// MaxMemoryPages is the runtime-wide ceiling of one instance's linear
	// memory, in 64 KiB pages; per-call limits are capped by it. 0 means
	// DefaultMaxMemoryPages (256 MiB).
	MaxMemoryPages uint32
}

// Runtime compiles modules and runs their calls. It is safe for concurrent
// use. Close releases everything, ending calls still running.
type Runtime struct {
	cfg   Config
	rt    wazero.Runtime
	cache wazero.CompilationCache
	base  wazero.ModuleConfig

	mu      sync.Mutex
	closed  bool
	entries map[string]*entry                 // by digest; an entry lives while a Module or Load uses it
	calls   map[*callState]context.CancelFunc // running calls, ended by Close
}

// entry is one compiled module, shared by every Module loaded from the same
// bytes.
type entry struct {
	digest string
	ready  chan struct{} // closed when the fields below are set
	err    error

	compiled wazero.CompiledModule
	manifest *abi.Manifest
	schemas  map[string]*jsonschema.Resolved // by tool name
	minPages uint32                          // initial memory of the module

	refs int // guarded by Runtime.mu
}

// New returns a Runtime. Close it when done.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.MaxMemoryPages == 0 {
		cfg.MaxMemoryPages = DefaultMaxMemoryPages
	}
	if cfg.MaxMemoryPages > 65536 {
		return nil, fmt.Errorf("wasmrt: MaxMemoryPages %d is over the 4 GiB of wasm32", cfg.MaxMemoryPages)
	}
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasmrt: compilation cache: %w", err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	rc := wazero.NewRuntimeConfig()
	if cfg.Interpreter {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rc = rc.WithCloseOnContextDone(true).
		// Memory is bounded per call by limitedAllocator, capped at
		// cfg.MaxMemoryPages. wazero's own limit is left at the wasm32
		// maximum: when it refuses a growth first, the allocator never
		// hears of it and the failure could not be told from a trap.
		WithMemoryLimitPages(65536).
		WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("wasmrt: WASI: %w", err)
	}
	if err := instantiateHost(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("wasmrt: host module: %w", err)
	}
	base := wazero.NewModuleConfig().
		WithName(""). // many instances of one module at once
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime()
	return &Runtime{cfg: cfg, rt: rt, cache: cache, base: base, entries: make(map[string]*entry), calls: make(map[*callState]context.CancelFunc)}, nil
}

// Close ends every running call (they fail with KindCanceled wrapping
// ErrClosed), frees all compiled code and closes the compilation cache.
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
	r.mu.Unlock()
	err := r.rt.CloseWithExitCode(ctx, sys.ExitCodeContextCanceled)
	return errors.Join(err, r.cache.Close(ctx))
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

// Digest returns the content digest Load uses: "sha256:" and 64 hex digits.
func Digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

var wasmMagic = []byte{0x00, 'a', 's', 'm'}

// Load compiles wasm (once per digest: loading the same bytes again shares
// the compiled code and manifest), checks it against the ABI, runs describe
// with tight limits, and validates the manifest and the tools' input
// schemas. name is used in errors and as the guest's program name.
func (r *Runtime) Load(ctx context.Context, name string, wasm []byte) (*Module, error) {
	if !bytes.HasPrefix(wasm, wasmMagic) {
		return nil, fmt.Errorf("load %q: %w (no \\0asm header)", name, ErrNotWasm)
	}
	d := Digest(wasm)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("load %q: %w", name, ErrClosed)
	}
	e, ok := r.entries[d]
	if !ok {
		e = &entry{digest: d, ready: make(chan struct{})}
		r.entries[d] = e
	}
	e.refs++
	r.mu.Unlock()

	if !ok {
		e.err = r.build(ctx, e, name, wasm)
		close(e.ready)
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			r.release(e)
			return nil, fmt.Errorf("load %q: %w", name, ctx.Err())
		}
	}
	if e.err != nil {
		r.release(e)
		return nil, e.err
	}
	return &Module{r: r, e: e, name: name, done: make(chan struct{})}, nil
}

// release drops one reference to e and frees it after the last.
func (r *Runtime) release(e *entry) {
	r.mu.Lock()
	e.refs--
	last := e.refs == 0
	if last && r.entries[e.digest] == e {
		delete(r.entries, e.digest)
	}
	r.mu.Unlock()
	if last && e.compiled != nil {
		_ = e.compiled.Close(context.Background())
	}
}

// liveEntries reports how many compiled modules are held (for tests).
func (r *Runtime) liveEntries() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

func (r *Runtime) build(ctx context.Context, e *entry, name string, wasm []byte) error {
	guarded, guardErr := guardEntries(wasm)
	if guardErr != nil {
		// Let wazero explain a malformed module; refuse one it would accept
		// but that cannot be guarded.
		guarded = wasm
	}
	compiled, err := r.rt.CompileModule(ctx, guarded)
	if err != nil {
		return fmt.Errorf("load %q: %w: %v", name, ErrCompile, err)
	}
	if guardErr != nil {
		_ = compiled.Close(ctx)
		return fmt.Errorf("load %q: %w: %v", name, ErrCompile, guardErr)
	}
	e.compiled = compiled
	if err := checkImportsExports(compiled); err != nil {
		return fmt.Errorf("load %q: %w", name, err)
	}
	for _, m := range compiled.ExportedMemories() {
		e.minPages = max(e.minPages, m.Min())
	}
	req, _ := json.Marshal(abi.Request{ABI: abi.Version, Method: abi.MethodDescribe})
	// describe gets the module's initial memory when that is more than the
	// default (capped by the ceiling): the operator's policy for its calls
	// may grant it, and a module must be loadable to be granted anything.
	out, gerr := r.run(ctx, e, name, abi.MethodDescribe, req, Limits{
		MemoryPages:    max(DefaultMemoryPages, e.minPages),
		Timeout:        describeTimeout,
		MaxOutputBytes: describeMaxOutput,
	}.withDefaults(r.cfg.MaxMemoryPages), nil)
	if gerr != nil {
		return fmt.Errorf("load %q: describe failed: %w", name, gerr)
	}
	man, err := abi.DecodeManifest(out)
	if err != nil {
		return fmt.Errorf("load %q: %w", name, err)
	}
	e.manifest = man
	e.schemas = make(map[string]*jsonschema.Resolved, len(man.Tools))
	for _, t := range man.Tools {
		var s jsonschema.Schema
		if err := json.Unmarshal(t.InputSchema, &s); err != nil {
			return fmt.Errorf("load %q: %w: tool %q: %v", name, ErrSchema, t.Name, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			return fmt.Errorf("load %q: %w: tool %q: %v", name, ErrSchema, t.Name, err)
		}
		e.schemas[t.Name] = rs
	}
	return nil
}

// checkImportsExports refuses a module that the host cannot run under ABI v1.
func checkImportsExports(c wazero.CompiledModule) error {
	for _, f := range c.ImportedFunctions() {
		mod, fn, _ := f.Import()
		switch {
		case mod == wasi_snapshot_preview1.ModuleName:
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
