package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/strictjson"
	"github.com/wasmtask/wasmtask/host/internal/tenancy"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
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
// A Policy is a value: after it is given to [New] it is not read again.
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
	// loaded. [Server.Limits] tells the values in force.
	MemoryBudgetMiB int `json:"memoryBudgetMiB,omitempty"`
	// LoadTimeout bounds loading one module: compiling it, running its
	// _initialize and running it once for its manifest (each run also
	// within 2s, and within the most memoryMiB any of its tools has). A
	// module that takes longer is a problem until its file changes; modules
	// load in the background, two at a time (modules named under Modules
	// first, then smallest file first), so a slow one delays no other for
	// longer than its own load. Default 60s (generous: a cold compile of a
	// large Go module takes seconds).
	LoadTimeout Duration `json:"loadTimeout,omitempty"`
	// NameGrace is how long the tool names a module served stay reserved
	// for its file after the file is removed, so that a redeploy (remove,
	// then copy back) finds them free: meanwhile another file that
	// declares one of them is refused. While the file is in the tool
	// directory its names are its own, also when its current version is
	// loading or failed to load. Bind names to a module with its entry's
	// toolNames to keep them for it for good. Default 10m; negative: not
	// reserved once the file is gone (a renamed file gets its names at
	// once).
	NameGrace Duration `json:"nameGrace,omitempty"`
	// MaxCodeMiB bounds a module's code (its function bodies, as the host
	// instruments them), and what compiling it may cost, counted in bytes
	// of code: its functions, globals, types, imports, exports, element
	// and data entries, and the blocks and locals of each function. Its
	// compiled code takes about four times its code (33 times with the
	// interpreter). A larger module is refused before it is compiled.
	// Default 32: the bundled Go module costs about 11.
	MaxCodeMiB int `json:"maxCodeMiB,omitempty"`
	// Defaults are the limits of every tool; a zero field means the
	// built-in default given on [ToolPolicy].
	Defaults ToolPolicy `json:"defaults"`
	// Modules grants and limits by module name: the file name without
	// ".wasm". An entry applies to the file of that name, and only while
	// its content matches the entry's Digest when one is given.
	Modules map[string]ModulePolicy `json:"modules,omitempty"`
}

// ModulePolicy is what the operator gives one module (one .wasm file).
type ModulePolicy struct {
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
	Tools map[string]ToolPolicy `json:"tools,omitempty"`
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
	Mounts []MountPolicy `json:"mounts,omitempty"`
}

// ToolPolicy bounds the calls of one tool.
type ToolPolicy struct {
	// MemoryMiB is the memory limit of one instance: linear memory, call
	// stack, tables, globals and the instance's records. Default 64.
	MemoryMiB int `json:"memoryMiB,omitempty"`
	// Timeout is the wall-clock limit of one call, also for a call run as a
	// task. Default 30s.
	Timeout Duration `json:"timeout,omitempty"`
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
	ResultCacheTTL Duration `json:"resultCacheTtl,omitempty"`
	// CacheWritable lets a cacheable tool with a writable mount be cached
	// (by default it is not: its result may depend on what it finds there).
	CacheWritable bool `json:"cacheWritable,omitempty"`
}

// MountPolicy grants one host directory to a module.
type MountPolicy struct {
	HostDir   string `json:"hostDir"`
	GuestPath string `json:"guestPath"`
	// Write allows the module to create, change and remove files. Default
	// read-only.
	Write bool `json:"write,omitempty"`
}

// Defaults of [ToolPolicy] and [Policy].
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
	DefaultLoadTimeout     = Duration(plugins.DefaultLoadTimeout)
	DefaultMaxCodeMiB      = 32
	// DefaultCacheMaxMiB bounds the compile cache on disk (Config.CacheMaxMiB).
	DefaultCacheMaxMiB = 1024
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

// ErrPolicy is wrapped by every policy validation error.
var ErrPolicy = errors.New("host: invalid policy")

// Duration is a time.Duration written in JSON as a Go duration string
// ("30s", "2m").
type Duration = strictjson.Duration

// maxPolicyBytes bounds a policy file.
const maxPolicyBytes = 1 << 20

// LoadPolicy reads and validates a policy file (JSON, see the README). Unknown
// fields are errors, so a typo cannot silently drop a limit.
func LoadPolicy(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrPolicy, path, err)
	}
	if len(b) > maxPolicyBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrPolicy, path, maxPolicyBytes)
	}
	p, err := ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy decodes and validates a policy document.
func ParsePolicy(b []byte) (*Policy, error) {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] != '{' {
		return nil, fmt.Errorf("%w: a policy is a JSON object, and this document does not start with {", ErrPolicy)
	}
	var p Policy
	if err := strictjson.Decode(b, nil, &p); err != nil {
		return nil, fmt.Errorf("%w: %v%s", ErrPolicy, err, formatHint(err))
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// formatHint explains the unknown fields that policies written for the
// earlier format (grants and limits keyed by tool name) contain.
func formatHint(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, `unknown field "tools"`):
		return `; limits and grants are now set per module: move "tools" entries under "modules": {"<file name without .wasm>": {"tools": {...}}} (see the README)`
	case strings.Contains(msg, `unknown field "env"`), strings.Contains(msg, `unknown field "passEnv"`), strings.Contains(msg, `unknown field "mounts"`):
		return `; env, passEnv and mounts are granted to a module, in its entry under "modules" (see the README)`
	}
	return ""
}

func (p *Policy) validate() error {
	switch {
	case p.MaxInstances < 0:
		return fmt.Errorf("%w: maxInstances is negative", ErrPolicy)
	case p.MemoryBudgetMiB < 0:
		return fmt.Errorf("%w: memoryBudgetMiB is negative", ErrPolicy)
	case p.LoadTimeout < 0:
		return fmt.Errorf("%w: loadTimeout is negative", ErrPolicy)
	case p.MaxCodeMiB < 0:
		return fmt.Errorf("%w: maxCodeMiB is negative", ErrPolicy)
	}
	if err := p.Defaults.validate("defaults"); err != nil {
		return err
	}
	boundTo := map[string]string{} // tool name → module
	for _, name := range slices.Sorted(maps.Keys(p.Modules)) {
		for _, t := range p.Modules[name].ToolNames {
			if t == "" {
				return fmt.Errorf("%w: modules.%s.toolNames: an empty name", ErrPolicy, name)
			}
			if o, ok := boundTo[t]; ok {
				return fmt.Errorf("%w: tool name %q is bound to two modules: modules.%s.toolNames and modules.%s.toolNames", ErrPolicy, t, o, name)
			}
			boundTo[t] = name
		}
	}
	for name, mp := range p.Modules {
		if err := mp.validate("modules." + name); err != nil {
			return err
		}
		if strings.HasSuffix(name, ".wasm") {
			return fmt.Errorf("%w: modules.%s: name the module without \".wasm\" (the file %s is the module %q)",
				ErrPolicy, name, name, strings.TrimSuffix(name, ".wasm"))
		}
	}
	return nil
}

func (mp *ModulePolicy) validate(where string) error {
	if mp.Digest != "" && !isDigest(mp.Digest) {
		return fmt.Errorf("%w: %s.digest %q is not \"sha256:\" and 64 lower-case hex digits", ErrPolicy, where, mp.Digest)
	}
	if mp.MaxInstances < 0 {
		return fmt.Errorf("%w: %s.maxInstances is negative", ErrPolicy, where)
	}
	if mp.MaxMemoryMiB < 0 || mp.MaxMemoryMiB > tenancy.MaxQuotaMiB {
		return fmt.Errorf("%w: %s.maxMemoryMiB %d is outside 0..%d", ErrPolicy, where, mp.MaxMemoryMiB, tenancy.MaxQuotaMiB)
	}
	if err := mp.Grants.validate(where); err != nil {
		return err
	}
	for name, tp := range mp.Tools {
		if err := tp.validate(where + ".tools." + name); err != nil {
			return err
		}
	}
	return nil
}

// isDigest reports whether d has the form of plugins.Digest.
func isDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (tp *ToolPolicy) validate(where string) error {
	switch {
	case tp.MemoryMiB < 0 || tp.MemoryMiB > MaxMemoryMiB:
		return fmt.Errorf("%w: %s.memoryMiB %d is outside 0..%d", ErrPolicy, where, tp.MemoryMiB, MaxMemoryMiB)
	case tp.Timeout < 0:
		return fmt.Errorf("%w: %s.timeout is negative", ErrPolicy, where)
	case tp.MaxOutputBytes < 0, tp.MaxLogBytes < 0, tp.MaxConcurrency < 0, tp.MaxQueue < 0,
		tp.MaxResultBlocks < 0, tp.MaxResultDepth < 0, tp.MaxResultValues < 0:
		return fmt.Errorf("%w: %s: limits must not be negative", ErrPolicy, where)
	case tp.MaxResultDepth > abi.MaxResultDepth:
		return fmt.Errorf("%w: %s.maxResultDepth %d is more than %d", ErrPolicy, where, tp.MaxResultDepth, abi.MaxResultDepth)
	}
	return nil
}

func (g *Grants) validate(where string) error {
	for k := range g.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: %s.env: invalid variable name %q", ErrPolicy, where, k)
		}
	}
	for _, k := range g.PassEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: %s.passEnv: invalid variable name %q", ErrPolicy, where, k)
		}
	}
	seen := map[string]bool{}
	for i, m := range g.Mounts {
		if !filepath.IsAbs(m.HostDir) {
			return fmt.Errorf("%w: %s.mounts[%d].hostDir %q is not an absolute path", ErrPolicy, where, i, m.HostDir)
		}
		if !strings.HasPrefix(m.GuestPath, "/") {
			return fmt.Errorf("%w: %s.mounts[%d].guestPath %q is not an absolute path", ErrPolicy, where, i, m.GuestPath)
		}
		if seen[m.GuestPath] {
			return fmt.Errorf("%w: %s.mounts: guestPath %q mounted twice", ErrPolicy, where, m.GuestPath)
		}
		seen[m.GuestPath] = true
		st, err := os.Stat(m.HostDir)
		if err != nil {
			return fmt.Errorf("%w: %s.mounts[%d]: %v", ErrPolicy, where, i, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("%w: %s.mounts[%d].hostDir %q is not a directory", ErrPolicy, where, i, m.HostDir)
		}
	}
	return nil
}

// forModule returns the entry of the policy that applies to module m: the
// entry of m's name, unless it pins another digest. A pin that does not
// match gives the zero entry (no grants, default limits) and an error that
// says so, for the catalog's problems.
func (p *Policy) forModule(m plugins.Module) (ModulePolicy, error) {
	if p == nil {
		return ModulePolicy{}, nil
	}
	mp, ok := p.Modules[m.Name]
	if !ok {
		return ModulePolicy{}, nil
	}
	if mp.Digest != "" && mp.Digest != m.Digest {
		return ModulePolicy{}, fmt.Errorf("%w: modules.%s pins digest %s but the file is %s: served with no grants and default limits",
			ErrPolicy, m.Name, mp.Digest, m.Digest)
	}
	return mp, nil
}

// forTool merges the tool's override in the module's entry mp over the
// defaults and fills the built-in defaults.
func (p *Policy) forTool(mp ModulePolicy, tool string) ToolPolicy {
	var base ToolPolicy
	if p != nil {
		base = p.Defaults
	}
	if o, ok := mp.Tools[tool]; ok {
		base = merge(base, o)
	}
	if base.MemoryMiB == 0 {
		base.MemoryMiB = DefaultMemoryMiB
	}
	if base.Timeout == 0 {
		base.Timeout = Duration(DefaultTimeout)
	}
	if base.MaxOutputBytes == 0 {
		base.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if base.MaxLogBytes == 0 {
		base.MaxLogBytes = DefaultMaxLogBytes
	}
	if base.MaxResultBlocks == 0 {
		base.MaxResultBlocks = DefaultMaxResultBlocks
	}
	if base.MaxResultDepth == 0 {
		base.MaxResultDepth = DefaultMaxResultDepth
	}
	if base.MaxResultValues == 0 {
		base.MaxResultValues = DefaultMaxResultValues
	}
	if base.MaxConcurrency == 0 {
		base.MaxConcurrency = DefaultMaxConcurrency
	}
	if base.MaxQueue == 0 {
		base.MaxQueue = queuePerSlot * base.MaxConcurrency
	}
	return base
}

func merge(base, o ToolPolicy) ToolPolicy {
	if o.MemoryMiB != 0 {
		base.MemoryMiB = o.MemoryMiB
	}
	if o.Timeout != 0 {
		base.Timeout = o.Timeout
	}
	if o.MaxOutputBytes != 0 {
		base.MaxOutputBytes = o.MaxOutputBytes
	}
	if o.MaxLogBytes != 0 {
		base.MaxLogBytes = o.MaxLogBytes
	}
	if o.MaxResultBlocks != 0 {
		base.MaxResultBlocks = o.MaxResultBlocks
	}
	if o.MaxResultDepth != 0 {
		base.MaxResultDepth = o.MaxResultDepth
	}
	if o.MaxResultValues != 0 {
		base.MaxResultValues = o.MaxResultValues
	}
	if o.MaxConcurrency != 0 {
		base.MaxConcurrency = o.MaxConcurrency
	}
	if o.MaxQueue != 0 {
		base.MaxQueue = o.MaxQueue
	}
	if o.ResultCacheTTL != 0 {
		base.ResultCacheTTL = o.ResultCacheTTL
	}
	base.CacheWritable = base.CacheWritable || o.CacheWritable
	return base
}

// resultLimits are the counts tp allows a result, for the runtime.
func (tp ToolPolicy) resultLimits() abi.ResultLimits {
	return abi.ResultLimits{MaxBlocks: tp.MaxResultBlocks, MaxDepth: tp.MaxResultDepth, MaxValues: tp.MaxResultValues}
}

func (p *Policy) loadTimeout() time.Duration {
	if p != nil && p.LoadTimeout > 0 {
		return time.Duration(p.LoadTimeout)
	}
	return time.Duration(DefaultLoadTimeout)
}

// DefaultNameGrace is [Policy].NameGrace's default.
const DefaultNameGrace = Duration(10 * time.Minute)

func (p *Policy) nameGrace() time.Duration {
	switch {
	case p == nil || p.NameGrace == 0:
		return time.Duration(DefaultNameGrace)
	case p.NameGrace < 0:
		return 0
	}
	return time.Duration(p.NameGrace)
}

// rules are what the policy says about the modules of snap for
// plugins.Build: the tool names bound to modules, how long a removed
// module's names stay reserved, and the modules the operator knows (an
// entry that applies to the file: they load first).
func (p *Policy) rules(snap *plugins.Snapshot) plugins.Rules {
	r := plugins.Rules{NameGrace: p.nameGrace()}
	if p == nil {
		return r
	}
	r.Bind, r.Known = map[string]string{}, map[string]bool{}
	for name, mp := range p.Modules {
		for _, t := range mp.ToolNames {
			r.Bind[t] = name
		}
	}
	for _, m := range snap.Modules() {
		if mp, ok := p.Modules[m.Name]; ok && (mp.Digest == "" || mp.Digest == m.Digest) {
			r.Known[m.Name] = true
		}
	}
	return r
}

func (p *Policy) maxCodeMiB() int {
	if p != nil && p.MaxCodeMiB > 0 {
		return p.MaxCodeMiB
	}
	return DefaultMaxCodeMiB
}

// memoryBudgetSetting is the memoryBudgetMiB asked for; 0 derives the
// budget from the machine.
func (p *Policy) memoryBudgetSetting() int {
	if p == nil {
		return 0
	}
	return p.MemoryBudgetMiB
}

func (p *Policy) maxInstances() int {
	if p != nil && p.MaxInstances > 0 {
		return p.MaxInstances
	}
	return DefaultMaxInstances
}

// moduleShare is the share of the instances and of the memory budget
// (bytes; budget is the server's) of a module whose entry is mp.
func (p *Policy) moduleShare(mp ModulePolicy, budget uint64) (slots int, memory uint64) {
	slots = max(1, p.maxInstances()/moduleShareDivisor)
	if mp.MaxInstances > 0 {
		slots = mp.MaxInstances
	}
	memory = budget / moduleShareDivisor
	if mp.MaxMemoryMiB > 0 {
		memory = uint64(mp.MaxMemoryMiB) << 20
	}
	return slots, memory
}

// describeTimeout bounds describe, and _initialize, at load.
const describeTimeout = 2 * time.Second

// loadLimits bound the load of module m: describe and _initialize run
// within them, and one instance of m must fit their memory, the most
// memory the policy gives any tool of m (its defaults, or an override in
// m's entry; capped at MaxMemoryMiB). A module that cannot run under that
// cannot run under its tools' limits either, so it is a load problem
// rather than a served module whose calls all fail; and describe never
// gets more than its tools would.
func (p *Policy) loadLimits(m plugins.Module) wasmrt.Limits {
	mp, _ := p.forModule(m) // a pin that does not match: the defaults, as for its calls
	mib := p.forTool(mp, "").MemoryMiB
	for tool := range mp.Tools {
		mib = max(mib, p.forTool(mp, tool).MemoryMiB)
	}
	return wasmrt.Limits{
		MemoryMiB:      min(mib, MaxMemoryMiB),
		Timeout:        describeTimeout,
		MaxOutputBytes: 1 << 20,
		MaxLogBytes:    DefaultMaxLogBytes,
	}
}
