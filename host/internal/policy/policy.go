package policy

import (
	"errors"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/strictjson"
	"github.com/wasmtask/wasmtask/plugins"
)

// Policy is the operator's sandbox policy: what the server admits at once,
// the limits of every tool, and what each module is granted. It is what
// grants memory, time, output, files and environment; a module's manifest
// may only ask (see abi.Tool.Grants, shown by `wasmtask inspect`). Deny by
// default: the zero Policy mounts nothing and passes no environment.
//
// Grants belong to modules, never to tool names: a tool name is whatever a
// file declares, while a module is the file the operator put in the tool
// directory, named by its file name and, optionally, pinned to its content
// digest. Limits may be set per tool, inside the module's entry.
//
// A Policy is a value: after it is given to host.New it is not read again.
type Policy struct {
	// MaxInstances bounds the Wasm instances alive at once across all tools
	// (each is one running call). Default 64.
	MaxInstances int `json:"maxInstances,omitempty"`
	// MemoryBudgetMiB bounds the memory reserved by all running calls
	// together (each call reserves its tool's memoryMiB plus its output and
	// log buffers: 2 × maxOutputBytes + 3 × maxLogBytes). A call that would pass it waits; one that could never fit
	// fails at once. Default: half of the memory this process may use (the
	// cgroup's memory limit, else the machine's physical memory), 4 GiB when
	// neither can be read. Besides it, a quarter of it bounds what the
	// snapshots of pre-initialised modules hold together while they are
	// loaded. The host's Server.Limits tells the values in force.
	MemoryBudgetMiB int `json:"memoryBudgetMiB,omitempty"`
	// LoadTimeout bounds loading one module: compiling it, running its
	// _initialize and running it once for its manifest (each run also
	// within 2s, and within the most memoryMiB any of its tools has). A
	// module that takes longer is a problem until its file changes; modules
	// load in the background, two at a time (modules named under Modules
	// first, then smallest file first), so a slow one delays no other for
	// longer than its own load. Default 60s (generous: a cold compile of a
	// large Go module takes seconds).
	LoadTimeout strictjson.Duration `json:"loadTimeout,omitempty"`
	// NameGrace is how long the tool names a module served stay reserved
	// for its file after the file is removed, so that a redeploy (remove,
	// then copy back) finds them free: meanwhile another file that
	// declares one of them is refused. While the file is in the tool
	// directory its names are its own, also when its current version is
	// loading or failed to load. Bind names to a module with its entry's
	// toolNames to keep them for it for good. Default 10m; negative: not
	// reserved once the file is gone (a renamed file gets its names at
	// once).
	NameGrace strictjson.Duration `json:"nameGrace,omitempty"`
	// MaxCodeMiB bounds a module's code (its function bodies, as the host
	// instruments them), and what compiling it may cost, counted in bytes
	// of code: its functions, globals, types, imports, exports, element
	// and data entries, and the blocks and locals of each function. Its
	// compiled code takes about four times its code (33 times with the
	// interpreter). A larger module is refused before it is compiled.
	// Default 32: the bundled Go module costs about 11.
	MaxCodeMiB int `json:"maxCodeMiB,omitempty"`
	// Defaults are the limits of every tool; a zero field means the
	// built-in default given on [Tool].
	Defaults Tool `json:"defaults"`
	// Modules grants and limits by module name: the file name without
	// ".wasm". An entry applies to the file of that name, and only while
	// its content matches the entry's Digest when one is given.
	Modules map[string]Module `json:"modules,omitempty"`
}

// Module is what the operator gives one module (one .wasm file).
type Module struct {
	// Digest pins the entry to one content of the file: "sha256:" and 64
	// hex digits, as `wasmtask inspect` prints it. When the file's digest
	// differs, nothing of the entry applies (no grants, default limits) and
	// the mismatch is reported as a problem. Default: no pin, the entry
	// applies to whatever the file holds.
	Digest string `json:"digest,omitempty"`
	// MaxInstances bounds the calls of the module's tools running at once,
	// so that one module with many tools cannot take every server-wide
	// slot. Default: a quarter of the server's MaxInstances, at least 1.
	MaxInstances int `json:"maxInstances,omitempty"`
	// MaxMemoryMiB bounds the memory the running calls of the module's
	// tools reserve together (see Policy.MemoryBudgetMiB). A module with
	// no call running may always start one, even one that reserves more.
	// Default: a quarter of the server's memory budget.
	MaxMemoryMiB int `json:"maxMemoryMiB,omitempty"`
	// ToolNames binds tool names to this module: it is the only file that
	// serves them, whatever the order in which files appear or load and
	// whoever served them before; another file that declares one is
	// refused, and while this file is missing the name is not served. The
	// binding holds whatever the file's digest (a pin decides its grants,
	// not its names). A name may be bound to one module only. Default
	// none: see [Policy].NameGrace for the names of unbound tools.
	ToolNames []string `json:"toolNames,omitempty"`
	// Grants are the environment and directories every tool of the module
	// gets.
	Grants
	// Tools overrides Defaults field by field for the module's tools, by
	// tool name. A field left zero keeps the default.
	Tools map[string]Tool `json:"tools,omitempty"`
}

// Grants are what a module may reach outside its sandbox. Default none.
type Grants struct {
	// Env lists environment variables the guest sees, with their values.
	// Risk: anything here is readable by the module. Default none.
	Env map[string]string `json:"env,omitempty"`
	// PassEnv names variables of the server's own environment to pass on,
	// read each time the tools are loaded or reloaded. Risk: as Env.
	// Default none.
	PassEnv []string `json:"passEnv,omitempty"`
	// Mounts grants host directories. They are opened with os.Root, so
	// symbolic links cannot lead out of them. Risk: a writable mount lets the
	// module change those files. Default none.
	Mounts []Mount `json:"mounts,omitempty"`
}

// Tool bounds the calls of one tool.
type Tool struct {
	// MemoryMiB is the memory limit of one instance: linear memory, call
	// stack, tables, globals and the instance's records. Default 64.
	MemoryMiB int `json:"memoryMiB,omitempty"`
	// Timeout is the wall-clock limit of one call, also for a call run as a
	// task. Default 30s.
	Timeout strictjson.Duration `json:"timeout,omitempty"`
	// MaxOutputBytes bounds the result a call writes. Default 1 MiB.
	MaxOutputBytes int `json:"maxOutputBytes,omitempty"`
	// MaxResultBlocks bounds the content blocks of a result: what a
	// result costs the server to decode, keep and send grows with its
	// blocks as well as its bytes. A result with more is refused as too
	// large. Default 10,000.
	MaxResultBlocks int `json:"maxResultBlocks,omitempty"`
	// MaxResultDepth bounds the nesting of a result's objects and arrays
	// (the result object is level 1); a deeper result is invalid.
	// Default 64, at most 128 (MCP clients parse results, some of them
	// recursively).
	MaxResultDepth int `json:"maxResultDepth,omitempty"`
	// MaxResultValues bounds the JSON values of a result, at every depth:
	// each object member and array item (structuredContent's included).
	// A result with more is refused as too large. Default 100,000.
	MaxResultValues int `json:"maxResultValues,omitempty"`
	// MaxLogBytes bounds the log (stderr and log messages) of a call.
	// Default 64 KiB.
	MaxLogBytes int `json:"maxLogBytes,omitempty"`
	// MaxConcurrency bounds the calls of this tool running at once. Default 8.
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
	// MaxQueue bounds the calls of this tool waiting to start; one more is
	// refused with a "busy" tool error. Default 4 × MaxConcurrency.
	MaxQueue int `json:"maxQueue,omitempty"`
	// ResultCacheTTL shortens how long the results of a tool that declares
	// itself cacheable are reused: the least of this, its ttlMs and the
	// server's maximum. Zero: no operator limit; negative: never cached.
	ResultCacheTTL strictjson.Duration `json:"resultCacheTtl,omitempty"`
	// CacheWritable lets a cacheable tool with a writable mount be cached
	// (by default it is not: its result may depend on what it finds there).
	CacheWritable bool `json:"cacheWritable,omitempty"`
}

// Mount grants one host directory to a module.
type Mount struct {
	HostDir   string `json:"hostDir"`
	GuestPath string `json:"guestPath"`
	// Write allows the module to create, change and remove files. Default
	// read-only.
	Write bool `json:"write,omitempty"`
}

// Defaults of [Tool] and [Policy].
const (
	DefaultMemoryMiB      = 64
	DefaultTimeout        = 30 * time.Second
	DefaultMaxOutputBytes = 1 << 20
	// The defaults of a result's counts are the ABI's.
	DefaultMaxResultBlocks = abi.DefaultResultBlocks
	DefaultMaxResultDepth  = abi.DefaultResultDepth
	DefaultMaxResultValues = abi.DefaultResultValues
	DefaultMaxLogBytes     = 64 << 10
	DefaultMaxConcurrency  = 8
	DefaultMaxInstances    = 64
	DefaultLoadTimeout     = strictjson.Duration(plugins.DefaultLoadTimeout)
	DefaultMaxCodeMiB      = 32
	// MaxMemoryMiB is the ceiling of any tool's memory (the runtime's).
	MaxMemoryMiB = 256
)

// queuePerSlot sizes a tool's default MaxQueue as admission sizes the
// queues of modules, tenants and the server: that many per slot.
const queuePerSlot = admission.QueuePerSlot

// The default shares of the server's instances and memory budget: a
// module without maxInstances or maxMemoryMiB of its own may hold
// 1/moduleShareDivisor of them (a tenant without its own, half: see
// admission). So a flood from one module leaves three quarters of the
// server to the others.
const moduleShareDivisor = 4

// ErrInvalid is wrapped by every policy validation error (host.ErrPolicy).
var ErrInvalid = errors.New("host: invalid policy")

// DefaultNameGrace is [Policy].NameGrace's default.
const DefaultNameGrace = strictjson.Duration(10 * time.Minute)
