package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
)

// Policy is the operator's sandbox policy: server-wide defaults and
// overrides per tool name. It is what grants memory, time, output, files and
// environment to a tool; a module's manifest may only ask (see
// abi.Tool.Grants, shown by `wasmtask inspect`). Deny by default: the zero
// Policy mounts nothing and passes no environment.
//
// A Policy is a value: after it is given to [New] it is not read again.
type Policy struct {
	// Defaults apply to every tool; a zero field means the built-in default
	// given on [ToolPolicy].
	Defaults ToolPolicy `json:"defaults"`
	// Tools overrides Defaults field by field for the named tools. A field
	// left zero in an override keeps the default. Env and Mounts of an
	// override replace those of Defaults.
	Tools map[string]ToolPolicy `json:"tools,omitempty"`
	// MaxInstances bounds the Wasm instances alive at once across all tools
	// (each is one running call). Default 64.
	MaxInstances int `json:"maxInstances,omitempty"`
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
	// MaxLogBytes bounds the log (stderr and log messages) of a call.
	// Default 64 KiB.
	MaxLogBytes int `json:"maxLogBytes,omitempty"`
	// MaxConcurrency bounds the calls of this tool running at once. Default 8.
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
	// MaxQueue bounds the calls waiting for a free slot; one more is refused
	// with a "busy" tool error. Default 4 × MaxConcurrency.
	MaxQueue int `json:"maxQueue,omitempty"`
	// Env lists environment variables the guest sees, with their values.
	// Risk: anything here is readable by the tool. Default none.
	Env map[string]string `json:"env,omitempty"`
	// PassEnv names variables of the server's own environment to pass on,
	// read once per tool, at its first call. Risk: as Env. Default none.
	PassEnv []string `json:"passEnv,omitempty"`
	// Mounts grants host directories. They are opened with os.Root, so
	// symbolic links cannot lead out of them. Risk: a writable mount lets the
	// tool change those files. Default none.
	Mounts []MountPolicy `json:"mounts,omitempty"`
}

// MountPolicy grants one host directory to a tool.
type MountPolicy struct {
	HostDir   string `json:"hostDir"`
	GuestPath string `json:"guestPath"`
	// Write allows the tool to create, change and remove files. Default
	// read-only.
	Write bool `json:"write,omitempty"`
}

// Defaults of [ToolPolicy] and [Policy].
const (
	DefaultMemoryMiB      = 64
	DefaultTimeout        = 30 * time.Second
	DefaultMaxOutputBytes = 1 << 20
	DefaultMaxLogBytes    = 64 << 10
	DefaultMaxConcurrency = 8
	DefaultMaxInstances   = 64
	// MaxMemoryMiB is the ceiling of any tool's memory (the runtime's).
	MaxMemoryMiB = 256
)

// ErrPolicy is wrapped by every policy validation error.
var ErrPolicy = errors.New("host: invalid policy")

// Duration is a time.Duration written in JSON as a Go duration string
// ("30s", "2m").
type Duration time.Duration

// MarshalJSON writes d as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\": %v", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

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
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the policy", ErrPolicy)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Policy) validate() error {
	if p.MaxInstances < 0 {
		return fmt.Errorf("%w: maxInstances is negative", ErrPolicy)
	}
	if err := p.Defaults.validate("defaults"); err != nil {
		return err
	}
	for name, tp := range p.Tools {
		if err := tp.validate("tools." + name); err != nil {
			return err
		}
	}
	return nil
}

func (tp *ToolPolicy) validate(where string) error {
	switch {
	case tp.MemoryMiB < 0 || tp.MemoryMiB > MaxMemoryMiB:
		return fmt.Errorf("%w: %s.memoryMiB %d is outside 0..%d", ErrPolicy, where, tp.MemoryMiB, MaxMemoryMiB)
	case tp.Timeout < 0:
		return fmt.Errorf("%w: %s.timeout is negative", ErrPolicy, where)
	case tp.MaxOutputBytes < 0, tp.MaxLogBytes < 0, tp.MaxConcurrency < 0, tp.MaxQueue < 0:
		return fmt.Errorf("%w: %s: limits must not be negative", ErrPolicy, where)
	}
	for k := range tp.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: %s.env: invalid variable name %q", ErrPolicy, where, k)
		}
	}
	for _, k := range tp.PassEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: %s.passEnv: invalid variable name %q", ErrPolicy, where, k)
		}
	}
	seen := map[string]bool{}
	for i, m := range tp.Mounts {
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

// forTool merges the tool's override over the defaults and fills the
// built-in defaults. PassEnv is left for limitsOf to read.
func (p *Policy) forTool(name string) ToolPolicy {
	var base ToolPolicy
	if p != nil {
		base = p.Defaults
		if o, ok := p.Tools[name]; ok {
			base = merge(base, o)
		}
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
	if base.MaxConcurrency == 0 {
		base.MaxConcurrency = DefaultMaxConcurrency
	}
	if base.MaxQueue == 0 {
		base.MaxQueue = 4 * base.MaxConcurrency
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
	if o.MaxConcurrency != 0 {
		base.MaxConcurrency = o.MaxConcurrency
	}
	if o.MaxQueue != 0 {
		base.MaxQueue = o.MaxQueue
	}
	if o.Env != nil || o.PassEnv != nil {
		base.Env, base.PassEnv = o.Env, o.PassEnv
	}
	if o.Mounts != nil {
		base.Mounts = o.Mounts
	}
	return base
}

func (d Duration) std() time.Duration { return time.Duration(d) }

func (p *Policy) maxInstances() int {
	if p != nil && p.MaxInstances > 0 {
		return p.MaxInstances
	}
	return DefaultMaxInstances
}

// loadLimits bound the describe run that asks a module for its manifest
// when it is loaded.
var loadLimits = wasmrt.Limits{
	MemoryMiB:      DefaultMemoryMiB,
	Timeout:        2 * time.Second,
	MaxOutputBytes: 1 << 20,
	MaxLogBytes:    DefaultMaxLogBytes,
}
