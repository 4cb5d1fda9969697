package policy

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/strictjson"
	"github.com/wasmtask/wasmtask/host/internal/tenancy"
)

// maxPolicyBytes bounds a policy file.
const maxPolicyBytes = 1 << 20

// Load reads and validates a policy file (JSON, see the README). Unknown
// fields are errors, so a typo cannot silently drop a limit.
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	if len(b) > maxPolicyBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrInvalid, path, maxPolicyBytes)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Parse decodes and validates a policy document.
func Parse(b []byte) (*Policy, error) {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] != '{' {
		return nil, fmt.Errorf("%w: a policy is a JSON object, and this document does not start with {", ErrInvalid)
	}
	var p Policy
	if err := strictjson.Decode(b, nil, &p); err != nil {
		return nil, fmt.Errorf("%w: %v%s", ErrInvalid, err, formatHint(err))
	}
	if err := p.Validate(); err != nil {
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

// Validate reports the first problem of p, wrapping [ErrInvalid]; nil
// when p is valid (nil is). [Parse] and [Load] validate what they return;
// a Policy built in Go is validated by the host when it is put in force.
func (p *Policy) Validate() error {
	if p == nil {
		return nil
	}
	switch {
	case p.MaxInstances < 0:
		return fmt.Errorf("%w: maxInstances is negative", ErrInvalid)
	case p.MemoryBudgetMiB < 0:
		return fmt.Errorf("%w: memoryBudgetMiB is negative", ErrInvalid)
	case p.LoadTimeout < 0:
		return fmt.Errorf("%w: loadTimeout is negative", ErrInvalid)
	case p.MaxCodeMiB < 0:
		return fmt.Errorf("%w: maxCodeMiB is negative", ErrInvalid)
	}
	if err := p.Defaults.validate("defaults"); err != nil {
		return err
	}
	boundTo := map[string]string{} // tool name → module
	for _, name := range slices.Sorted(maps.Keys(p.Modules)) {
		for _, t := range p.Modules[name].ToolNames {
			if t == "" {
				return fmt.Errorf("%w: modules.%s.toolNames: an empty name", ErrInvalid, name)
			}
			if o, ok := boundTo[t]; ok {
				return fmt.Errorf("%w: tool name %q is bound to two modules: modules.%s.toolNames and modules.%s.toolNames", ErrInvalid, t, o, name)
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
				ErrInvalid, name, name, strings.TrimSuffix(name, ".wasm"))
		}
	}
	return nil
}

func (mp *Module) validate(where string) error {
	if mp.Digest != "" && !isDigest(mp.Digest) {
		return fmt.Errorf("%w: %s.digest %q is not \"sha256:\" and 64 lower-case hex digits", ErrInvalid, where, mp.Digest)
	}
	if mp.MaxInstances < 0 {
		return fmt.Errorf("%w: %s.maxInstances is negative", ErrInvalid, where)
	}
	if mp.MaxMemoryMiB < 0 || mp.MaxMemoryMiB > tenancy.MaxQuotaMiB {
		return fmt.Errorf("%w: %s.maxMemoryMiB %d is outside 0..%d", ErrInvalid, where, mp.MaxMemoryMiB, tenancy.MaxQuotaMiB)
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

func (tp *Tool) validate(where string) error {
	switch {
	case tp.MemoryMiB < 0 || tp.MemoryMiB > MaxMemoryMiB:
		return fmt.Errorf("%w: %s.memoryMiB %d is outside 0..%d", ErrInvalid, where, tp.MemoryMiB, MaxMemoryMiB)
	case tp.Timeout < 0:
		return fmt.Errorf("%w: %s.timeout is negative", ErrInvalid, where)
	case tp.MaxOutputBytes < 0, tp.MaxLogBytes < 0, tp.MaxConcurrency < 0, tp.MaxQueue < 0,
		tp.MaxResultBlocks < 0, tp.MaxResultDepth < 0, tp.MaxResultValues < 0:
		return fmt.Errorf("%w: %s: limits must not be negative", ErrInvalid, where)
	case tp.MaxResultDepth > abi.MaxResultDepth:
		return fmt.Errorf("%w: %s.maxResultDepth %d is more than %d", ErrInvalid, where, tp.MaxResultDepth, abi.MaxResultDepth)
	}
	return nil
}

func (g *Grants) validate(where string) error {
	for k := range g.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: %s.env: invalid variable name %q", ErrInvalid, where, k)
		}
	}
	for _, k := range g.PassEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: %s.passEnv: invalid variable name %q", ErrInvalid, where, k)
		}
	}
	seen := map[string]bool{}
	for i, m := range g.Mounts {
		if !filepath.IsAbs(m.HostDir) {
			return fmt.Errorf("%w: %s.mounts[%d].hostDir %q is not an absolute path", ErrInvalid, where, i, m.HostDir)
		}
		if !strings.HasPrefix(m.GuestPath, "/") {
			return fmt.Errorf("%w: %s.mounts[%d].guestPath %q is not an absolute path", ErrInvalid, where, i, m.GuestPath)
		}
		if seen[m.GuestPath] {
			return fmt.Errorf("%w: %s.mounts: guestPath %q mounted twice", ErrInvalid, where, m.GuestPath)
		}
		seen[m.GuestPath] = true
		st, err := os.Stat(m.HostDir)
		if err != nil {
			return fmt.Errorf("%w: %s.mounts[%d]: %v", ErrInvalid, where, i, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("%w: %s.mounts[%d].hostDir %q is not a directory", ErrInvalid, where, i, m.HostDir)
		}
	}
	return nil
}
