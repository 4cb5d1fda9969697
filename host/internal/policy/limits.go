package policy

import (
	"fmt"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/strictjson"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// ForModule returns the entry of the policy that applies to module m: the
// entry of m's name, unless it pins another digest. A pin that does not
// match gives the zero entry (no grants, default limits) and an error that
// says so, for the catalog's problems.
func (p *Policy) ForModule(m plugins.Module) (Module, error) {
	if p == nil {
		return Module{}, nil
	}
	mp, ok := p.Modules[m.Name]
	if !ok {
		return Module{}, nil
	}
	if mp.Digest != "" && mp.Digest != m.Digest {
		return Module{}, fmt.Errorf("%w: modules.%s pins digest %s but the file is %s: served with no grants and default limits",
			ErrInvalid, m.Name, mp.Digest, m.Digest)
	}
	return mp, nil
}

// ForTool merges the tool's override in the module's entry mp over the
// defaults and fills the built-in defaults: the tool's effective limits,
// every field set.
func (p *Policy) ForTool(mp Module, tool string) Tool {
	var base Tool
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
		base.Timeout = strictjson.Duration(DefaultTimeout)
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

func merge(base, o Tool) Tool {
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

// Limits turns an effective tool policy (from [Policy.ForTool]) and its
// module's grants into the runtime's limits. PassEnv is read through
// getenv (os.LookupEnv, or a fake in tests).
func (tp Tool) Limits(g Grants, getenv func(string) (string, bool)) wasmrt.Limits {
	lim := wasmrt.Limits{
		MemoryMiB:      tp.MemoryMiB,
		Timeout:        tp.Timeout.Std(),
		MaxOutputBytes: tp.MaxOutputBytes,
		MaxLogBytes:    tp.MaxLogBytes,
		Result:         tp.resultLimits(),
	}
	if len(g.Env)+len(g.PassEnv) > 0 {
		lim.Env = make(map[string]string, len(g.Env)+len(g.PassEnv))
		for _, k := range g.PassEnv {
			if v, ok := getenv(k); ok {
				lim.Env[k] = v
			}
		}
		for k, v := range g.Env {
			lim.Env[k] = v
		}
	}
	for _, mp := range g.Mounts {
		lim.Mounts = append(lim.Mounts, wasmrt.Mount{HostDir: mp.HostDir, GuestPath: mp.GuestPath, Write: mp.Write})
	}
	return lim
}

// resultLimits are the counts tp allows a result, for the runtime.
func (tp Tool) resultLimits() abi.ResultLimits {
	return abi.ResultLimits{MaxBlocks: tp.MaxResultBlocks, MaxDepth: tp.MaxResultDepth, MaxValues: tp.MaxResultValues}
}

// Bounds are the server-wide bounds of a policy, defaults filled: they
// size the runtime and admission when the server starts, and a change to
// them takes effect at the next start.
type Bounds struct {
	MaxInstances int
	// MemoryBudgetMiB is the memoryBudgetMiB asked for; 0 derives the
	// budget from the machine (see [Policy.MemoryBudget]).
	MemoryBudgetMiB int
	MaxCodeMiB      int
	LoadTimeout     time.Duration
}

// Bounds returns p's server-wide bounds.
func (p *Policy) Bounds() Bounds {
	b := Bounds{MaxInstances: DefaultMaxInstances, MaxCodeMiB: DefaultMaxCodeMiB, LoadTimeout: time.Duration(DefaultLoadTimeout)}
	if p == nil {
		return b
	}
	if p.MaxInstances > 0 {
		b.MaxInstances = p.MaxInstances
	}
	b.MemoryBudgetMiB = p.MemoryBudgetMiB
	if p.MaxCodeMiB > 0 {
		b.MaxCodeMiB = p.MaxCodeMiB
	}
	if p.LoadTimeout > 0 {
		b.LoadTimeout = time.Duration(p.LoadTimeout)
	}
	return b
}

func (p *Policy) nameGrace() time.Duration {
	switch {
	case p == nil || p.NameGrace == 0:
		return time.Duration(DefaultNameGrace)
	case p.NameGrace < 0:
		return 0
	}
	return time.Duration(p.NameGrace)
}

// Rules are what the policy says about the modules of snap for
// plugins.Build: the tool names bound to modules, how long a removed
// module's names stay reserved, and the modules the operator knows (an
// entry that applies to the file: they load first).
func (p *Policy) Rules(snap *plugins.Snapshot) plugins.Rules {
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

// ModuleShare is the share of the instances and of the memory budget
// (bytes; budget is the server's) of a module whose entry is mp.
func (p *Policy) ModuleShare(mp Module, budget uint64) (slots int, memory uint64) {
	slots = max(1, p.Bounds().MaxInstances/moduleShareDivisor)
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

// LoadLimits bound the load of module m: describe and _initialize run
// within them, and one instance of m must fit their memory, the most
// memory the policy gives any tool of m (its defaults, or an override in
// m's entry; capped at MaxMemoryMiB). A module that cannot run under that
// cannot run under its tools' limits either, so it is a load problem
// rather than a served module whose calls all fail; and describe never
// gets more than its tools would.
func (p *Policy) LoadLimits(m plugins.Module) wasmrt.Limits {
	mp, _ := p.ForModule(m) // a pin that does not match: the defaults, as for its calls
	mib := p.ForTool(mp, "").MemoryMiB
	for tool := range mp.Tools {
		mib = max(mib, p.ForTool(mp, tool).MemoryMiB)
	}
	return wasmrt.Limits{
		MemoryMiB:      min(mib, MaxMemoryMiB),
		Timeout:        describeTimeout,
		MaxOutputBytes: 1 << 20,
		MaxLogBytes:    DefaultMaxLogBytes,
	}
}
