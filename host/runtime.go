package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
)

// RuntimeConfig configures a [Runtime]. The zero value is valid.
type RuntimeConfig struct {
	// CacheDir keeps compiled code on disk so the next process compiles a
	// known module in a fraction of the time. "" keeps it in memory only.
	CacheDir string
	// Interpreter runs guests in wazero's interpreter instead of its
	// compiler (slower; for platforms the compiler does not support).
	Interpreter bool
	// MaxMemoryMiB is the ceiling of any call's memory. Default and maximum
	// MaxMemoryMiB (256).
	MaxMemoryMiB int
}

// Runtime runs tool modules directly, without a server: load a module, call
// its tools. The command line, tests of tool modules and the sandbox tests
// use it; [Server] has its own. It is safe for concurrent use; Close ends
// the calls still running and frees everything.
type Runtime struct {
	rt *wasmrt.Runtime
}

// NewRuntime starts a Runtime.
func NewRuntime(ctx context.Context, cfg RuntimeConfig) (*Runtime, error) {
	if cfg.MaxMemoryMiB < 0 || cfg.MaxMemoryMiB > MaxMemoryMiB {
		return nil, fmt.Errorf("%w: MaxMemoryMiB %d is outside 0..%d", ErrPolicy, cfg.MaxMemoryMiB, MaxMemoryMiB)
	}
	if cfg.MaxMemoryMiB == 0 {
		cfg.MaxMemoryMiB = MaxMemoryMiB
	}
	rt, err := wasmrt.New(ctx, wasmrt.Config{
		CacheDir:       cfg.CacheDir,
		Interpreter:    cfg.Interpreter,
		MaxMemoryPages: uint32(cfg.MaxMemoryMiB) * 16,
	})
	if err != nil {
		return nil, err
	}
	return &Runtime{rt: rt}, nil
}

// Close ends the calls still running (they fail with ErrClosed) and frees
// all compiled code.
func (r *Runtime) Close(ctx context.Context) error { return r.rt.Close(ctx) }

// Load compiles a module (once per content digest), checks it against ABI
// v1, asks it to describe itself in the sandbox and validates the manifest.
// The error explains what is wrong; see [ErrNotWasm], [ErrModuleABI],
// abi.ErrVersion, abi.ErrManifest, [ErrSchema] and [GuestError].
func (r *Runtime) Load(ctx context.Context, name string, wasm []byte) (*Module, error) {
	m, err := r.rt.Load(ctx, name, wasm)
	if err != nil {
		return nil, err
	}
	return &Module{m: m}, nil
}

// ModuleDigest returns the content digest of a module's bytes,
// "sha256:<64 hex digits>", the key under which it is compiled once.
func ModuleDigest(wasm []byte) string { return wasmrt.Digest(wasm) }

// Module is a loaded tool module. It is safe for concurrent use; every call
// runs in a fresh instance. Close it when done: calls in flight finish first.
type Module struct {
	m *wasmrt.Module
}

// Name returns the name given to Load.
func (m *Module) Name() string { return m.m.Name() }

// Digest returns the module's content digest (see [ModuleDigest]).
func (m *Module) Digest() string { return m.m.Digest() }

// Manifest returns the module's validated manifest. Do not modify it.
func (m *Module) Manifest() *abi.Manifest { return m.m.Manifest() }

// Tools returns the tools the module declares, in manifest order.
func (m *Module) Tools() []abi.Tool { return append([]abi.Tool(nil), m.m.Manifest().Tools...) }

// Close releases the module. Later calls fail with ErrClosed; calls in
// flight run to their end.
func (m *Module) Close(ctx context.Context) error { return m.m.Close(ctx) }

// CallOptions bound and observe one call. The zero value runs with the
// default policy and ignores progress, status and logs, and elicitation is
// unsupported.
type CallOptions struct {
	// Policy bounds the call. Its memory, timeout, output and log limits,
	// Env, PassEnv and Mounts apply; MaxConcurrency and MaxQueue are for a
	// Server and are ignored here. Zero fields take the defaults of
	// [ToolPolicy].
	Policy ToolPolicy
	// OnProgress, OnStatus and OnLog receive the guest's reports, on the
	// goroutine running the call. They may be nil.
	OnProgress func(progress, total float64, msg string)
	OnStatus   func(msg string)
	OnLog      func(level int32, msg string)
	// Elicit asks the user for input and blocks until the answer or until
	// ctx is done. nil means the guest is told elicitation is unsupported.
	Elicit func(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error)
}

// Call runs tool with args (a JSON object; empty means {}). A guest that
// traps, exits non-zero, runs out of time or memory, or writes a bad or too
// large answer fails with a *[GuestError]; errors.Is(err, context.Canceled)
// holds when ctx was canceled. A Result with IsError set is the tool's own
// error answer.
func (m *Module) Call(ctx context.Context, tool string, args json.RawMessage, opts CallOptions) (*abi.Result, error) {
	if err := opts.Policy.validate("policy"); err != nil {
		return nil, err
	}
	lim := limitsOf(opts.Policy, os.LookupEnv)
	var ev wasmrt.Events
	if opts.OnProgress != nil || opts.OnStatus != nil || opts.OnLog != nil || opts.Elicit != nil {
		ev = callEvents{&opts}
	}
	return m.m.Call(ctx, tool, args, lim, ev)
}

// limitsOf turns a tool policy into the runtime's limits. PassEnv is read
// through getenv.
func limitsOf(tp ToolPolicy, getenv func(string) (string, bool)) wasmrt.Limits {
	lim := wasmrt.Limits{
		MemoryPages:    uint32(tp.MemoryMiB) * 16,
		Timeout:        tp.Timeout.std(),
		MaxOutputBytes: tp.MaxOutputBytes,
		MaxLogBytes:    tp.MaxLogBytes,
	}
	if len(tp.Env)+len(tp.PassEnv) > 0 {
		lim.Env = make(map[string]string, len(tp.Env)+len(tp.PassEnv))
		for _, k := range tp.PassEnv {
			if v, ok := getenv(k); ok {
				lim.Env[k] = v
			}
		}
		for k, v := range tp.Env {
			lim.Env[k] = v
		}
	}
	for _, mp := range tp.Mounts {
		lim.Mounts = append(lim.Mounts, wasmrt.Mount{HostDir: mp.HostDir, GuestPath: mp.GuestPath, Write: mp.Write})
	}
	return lim
}

// callEvents adapts CallOptions to wasmrt.Events.
type callEvents struct{ o *CallOptions }

func (e callEvents) Progress(p, total float64, msg string) {
	if e.o.OnProgress != nil {
		e.o.OnProgress(p, total, msg)
	}
}

func (e callEvents) Status(msg string) {
	if e.o.OnStatus != nil {
		e.o.OnStatus(msg)
	}
}

func (e callEvents) Log(level int32, msg string) {
	if e.o.OnLog != nil {
		e.o.OnLog(level, msg)
	}
}

func (e callEvents) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	if e.o.Elicit == nil {
		return abi.ElicitReply{}, fmt.Errorf("host: no elicitation handler: %w", errors.ErrUnsupported)
	}
	return e.o.Elicit(ctx, req)
}

// GuestError is the error of a call whose guest failed: it names the
// module, the tool, the kind of failure and its cause, with the tail of the
// guest's stderr. It fails that call only.
type GuestError = wasmrt.GuestError

// GuestErrorKind classifies a GuestError.
type GuestErrorKind = wasmrt.Kind

// Kinds of GuestError.
const (
	KindTrap           = wasmrt.KindTrap
	KindExit           = wasmrt.KindExit
	KindTimeout        = wasmrt.KindTimeout
	KindCanceled       = wasmrt.KindCanceled
	KindOutOfMemory    = wasmrt.KindOutOfMemory
	KindBadOutput      = wasmrt.KindBadOutput
	KindOutputTooLarge = wasmrt.KindOutputTooLarge
	KindInstantiate    = wasmrt.KindInstantiate
)

// Errors of Load and Call (they wrap these; use errors.Is).
var (
	ErrClosed      = wasmrt.ErrClosed      // the Runtime or Module was closed
	ErrNotWasm     = wasmrt.ErrNotWasm     // not a WebAssembly binary
	ErrCompile     = wasmrt.ErrCompile     // wazero cannot compile it
	ErrModuleABI   = wasmrt.ErrABI         // no _start, unknown or mistyped wasmtask_v1 import, foreign import
	ErrSchema      = wasmrt.ErrSchema      // a tool's input schema does not compile
	ErrUnknownTool = wasmrt.ErrUnknownTool // Call of a tool the manifest lacks
	ErrArguments   = wasmrt.ErrArguments   // arguments not an object or not valid for the input schema
)
