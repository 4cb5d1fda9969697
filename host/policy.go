package host

import (
	"github.com/wasmtask/wasmtask/host/internal/policy"
	"github.com/wasmtask/wasmtask/host/internal/strictjson"
)

// Policy is the operator's sandbox policy: what the server admits at once,
// the limits of every tool, and what each module is granted. It is what
// grants memory, time, output, files and environment; a module's manifest
// may only ask (see abi.Tool.Grants, shown by `wasmtask inspect`). Deny by
// default: the zero Policy mounts nothing and passes no environment.
// Grants belong to modules (files), never to tool names (see
// policy.Policy for every member).
//
// A Policy is a value: after it is given to [New] it is not read again.
type Policy = policy.Policy

// ModulePolicy is what the operator gives one module (one .wasm file).
type ModulePolicy = policy.Module

// Grants are what a module may reach outside its sandbox. Default none.
type Grants = policy.Grants

// ToolPolicy bounds the calls of one tool.
type ToolPolicy = policy.Tool

// MountPolicy grants one host directory to a module.
type MountPolicy = policy.Mount

// Defaults of [ToolPolicy] and [Policy].
const (
	DefaultMemoryMiB       = policy.DefaultMemoryMiB
	DefaultTimeout         = policy.DefaultTimeout
	DefaultMaxOutputBytes  = policy.DefaultMaxOutputBytes
	DefaultMaxResultBlocks = policy.DefaultMaxResultBlocks
	DefaultMaxResultDepth  = policy.DefaultMaxResultDepth
	DefaultMaxResultValues = policy.DefaultMaxResultValues
	DefaultMaxLogBytes     = policy.DefaultMaxLogBytes
	DefaultMaxConcurrency  = policy.DefaultMaxConcurrency
	DefaultMaxInstances    = policy.DefaultMaxInstances
	DefaultLoadTimeout     = policy.DefaultLoadTimeout
	DefaultMaxCodeMiB      = policy.DefaultMaxCodeMiB
	// DefaultNameGrace is [Policy].NameGrace's default.
	DefaultNameGrace = policy.DefaultNameGrace
	// MaxMemoryMiB is the ceiling of any tool's memory (the runtime's).
	MaxMemoryMiB = policy.MaxMemoryMiB
)

// DefaultCacheMaxMiB bounds the compile cache on disk (Config.CacheMaxMiB).
const DefaultCacheMaxMiB = 1024

// ErrPolicy is wrapped by every policy validation error.
var ErrPolicy = policy.ErrInvalid

// Duration is a time.Duration written in JSON as a Go duration string
// ("30s", "2m").
type Duration = strictjson.Duration

// LoadPolicy reads and validates a policy file (JSON, see the README). Unknown
// fields are errors, so a typo cannot silently drop a limit.
func LoadPolicy(path string) (*Policy, error) { return policy.Load(path) }

// ParsePolicy decodes and validates a policy document.
func ParsePolicy(b []byte) (*Policy, error) { return policy.Parse(b) }
