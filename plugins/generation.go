package plugins

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
)

// Errors of [Build].
var (
	ErrLoad         = errors.New("plugins: module failed to load")
	ErrToolConflict = errors.New("plugins: tool name declared by two modules")
)

// Loader is what the host provides to [Build]: it compiles a module and runs
// it once to ask for its manifest. C is the host's compiled-module type; this
// package never looks inside it, so it stays free of any Wasm runtime.
//
// Load is called only for a digest no module of the previous generation
// had, never twice for one digest in one Build, and from the goroutine that
// called Build. The manifest it returns is validated by Build with
// [abi.DecodeManifest]; Load may refuse a module for reasons of its own
// (policy) by returning an error. When Load returns an error, or the
// manifest is invalid, Build calls Release on the compiled value if Load
// returned one (the host passes a zero C when there is nothing to release).
type Loader[C any] interface {
	Load(ctx context.Context, m Module, wasm []byte) (compiled C, manifest []byte, err error)
	Release(compiled C)
}

// Loaded is one module of a [Generation]: the file as scanned, its validated
// manifest, and the host's compiled module.
type Loaded[C any] struct {
	Module   Module
	Manifest *abi.Manifest // validated; do not modify
	Compiled C
}

// Generation is an immutable set of loaded modules and the tools they
// declare: what the host serves between two reloads. It is safe for
// concurrent use. Swapping one *Generation pointer is the whole reload; the
// host drains in-flight calls of the old generation before it releases the
// compiled modules [Build] reports as released.
type Generation[C any] struct {
	seq      uint64
	snap     *Snapshot
	mods     []Loaded[C]      // sorted by module name
	tools    map[string]int   // tool name → index in mods
	failed   map[string]error // digest → why it did not load; retried only when the digest changes
	problems []Problem
}

// Seq numbers generations built from one another, from 1.
func (g *Generation[C]) Seq() uint64 {
	if g == nil {
		return 0
	}
	return g.seq
}

// Snapshot returns the snapshot this generation was built from.
func (g *Generation[C]) Snapshot() *Snapshot { return g.snap }

// Modules returns the loaded modules, in name order. The slice is a copy.
func (g *Generation[C]) Modules() []Loaded[C] {
	if g == nil {
		return nil
	}
	return slices.Clone(g.mods)
}

// Tool finds the module that declares the tool called name.
func (g *Generation[C]) Tool(name string) (Loaded[C], abi.Tool, bool) {
	if g == nil {
		return Loaded[C]{}, abi.Tool{}, false
	}
	i, ok := g.tools[name]
	if !ok {
		return Loaded[C]{}, abi.Tool{}, false
	}
	l := g.mods[i]
	for _, t := range l.Manifest.Tools {
		if t.Name == name {
			return l, t, true
		}
	}
	return Loaded[C]{}, abi.Tool{}, false
}

// ToolNames returns the names of all tools, sorted.
func (g *Generation[C]) ToolNames() []string {
	if g == nil {
		return nil
	}
	names := make([]string, 0, len(g.tools))
	for n := range g.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Problems returns the snapshot's problems and those of loading: modules
// that failed to compile or describe themselves, had an invalid manifest, or
// declared a tool another module already declares. A module whose new
// version failed but whose previous version loaded keeps serving the
// previous version; its problem says so.
func (g *Generation[C]) Problems() []Problem {
	if g == nil {
		return nil
	}
	return slices.Clone(g.problems)
}

// Build makes the next generation from prev (nil at start) and a new
// snapshot, steps one and two of a reload: load what changed, validate it
// fully. It loads only modules whose digest prev did not have (a renamed or
// unchanged file reuses its compiled module), keeps the previous version of
// a module whose new version fails, and gives each tool name to one module:
// modules already serving keep their tools, then new ones claim theirs in
// name order, and a module that declares a taken name is refused
// ([ErrToolConflict]).
//
// released lists the compiled modules of prev that next no longer uses; the
// host releases them once calls in flight on prev have ended. Build does not
// fail: every failure is a [Problem] of next. A done ctx makes the modules
// not yet loaded fail with the context's error.
func Build[C any](ctx context.Context, prev *Generation[C], snap *Snapshot, l Loader[C]) (next *Generation[C], released []C) {
	next = &Generation[C]{
		seq:      prev.Seq() + 1,
		snap:     snap,
		tools:    map[string]int{},
		failed:   map[string]error{},
		problems: snap.Problems(),
	}
	byDigest := map[string]Loaded[C]{} // previous and newly loaded, by digest
	prevByName := map[string]Loaded[C]{}
	if prev != nil {
		for _, p := range prev.mods {
			byDigest[p.Module.Digest] = p
			prevByName[p.Module.Name] = p
		}
	}
	fresh := map[string]bool{} // digests loaded by this Build

	type candidate struct {
		l       Loaded[C]
		serving bool // a module of this name was served before
	}
	var cands []candidate
	for _, m := range snap.modules {
		_, serving := prevByName[m.Name]
		if old, ok := byDigest[m.Digest]; ok {
			old.Module = m
			cands = append(cands, candidate{old, serving})
			continue
		}
		err := prev.failedDigest(m.Digest)
		if err == nil {
			var ld Loaded[C]
			ld, err = load(ctx, l, m)
			if err == nil {
				byDigest[m.Digest] = ld
				fresh[m.Digest] = true
				cands = append(cands, candidate{ld, serving})
				continue
			}
			if errors.Is(err, errRetry) {
				err = errors.Unwrap(err)
			} else {
				next.failed[m.Digest] = err
			}
		} else {
			next.failed[m.Digest] = err
		}
		if old, ok := prevByName[m.Name]; ok {
			cands = append(cands, candidate{old, true})
			next.problems = append(next.problems, Problem{Name: m.Name, Path: m.Path,
				Err: fmt.Errorf("%w (still serving the previous version, %s)", err, shortDigest(old.Module.Digest))})
		} else {
			next.problems = append(next.problems, Problem{Name: m.Name, Path: m.Path, Err: err})
		}
	}

	// Tool names: modules served before first, then the rest, each in name order.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case a.serving && !b.serving:
			return -1
		case !a.serving && b.serving:
			return 1
		}
		return strings.Compare(a.l.Module.Name, b.l.Module.Name)
	})
	claimed := map[string]string{} // tool → module
	var accepted []Loaded[C]
	for _, c := range cands {
		conflict := ""
		for _, t := range c.l.Manifest.Tools {
			if owner, ok := claimed[t.Name]; ok {
				conflict = fmt.Sprintf("tool %q is already declared by module %q", t.Name, owner)
				break
			}
		}
		if conflict != "" {
			next.problems = append(next.problems, Problem{Name: c.l.Module.Name, Path: c.l.Module.Path,
				Err: fmt.Errorf("%w: %s", ErrToolConflict, conflict)})
			continue
		}
		for _, t := range c.l.Manifest.Tools {
			claimed[t.Name] = c.l.Module.Name
		}
		accepted = append(accepted, c.l)
	}
	slices.SortFunc(accepted, func(a, b Loaded[C]) int { return strings.Compare(a.Module.Name, b.Module.Name) })
	next.mods = accepted
	used := map[string]bool{}
	for i, a := range accepted {
		used[a.Module.Digest] = true
		for _, t := range a.Manifest.Tools {
			next.tools[t.Name] = i
		}
	}
	sortProblems(next.problems)

	// Release what nothing uses any more: previous modules, and modules
	// loaded now but refused for a conflict. Each compiled value once.
	for d, ld := range byDigest {
		if used[d] {
			continue
		}
		if fresh[d] {
			l.Release(ld.Compiled)
			continue
		}
		released = append(released, ld.Compiled)
	}
	return next, released
}

func (g *Generation[C]) failedDigest(d string) error {
	if g == nil {
		return nil
	}
	return g.failed[d]
}

// errRetry marks a load failure that says nothing about the module's
// content (a done context, a file changed or gone since the scan): it is
// not remembered against the digest.
var errRetry = errors.New("retry")

type retryError struct{ err error }

func (e retryError) Error() string        { return e.err.Error() }
func (e retryError) Unwrap() error        { return e.err }
func (e retryError) Is(target error) bool { return target == errRetry }

// load reads, compiles and describes one module and validates its manifest.
func load[C any](ctx context.Context, l Loader[C], m Module) (Loaded[C], error) {
	if err := ctx.Err(); err != nil {
		return Loaded[C]{}, retryError{fmt.Errorf("%w: %w", ErrLoad, err)}
	}
	wasm, err := m.ReadBytes()
	if err != nil {
		return Loaded[C]{}, retryError{fmt.Errorf("%w: %w", ErrLoad, err)}
	}
	c, raw, err := l.Load(ctx, m, wasm)
	if err != nil {
		l.Release(c)
		err = fmt.Errorf("%w: %w", ErrLoad, err)
		if ctx.Err() != nil {
			err = retryError{err}
		}
		return Loaded[C]{}, err
	}
	man, err := abi.DecodeManifest(raw)
	if err != nil {
		l.Release(c)
		return Loaded[C]{}, fmt.Errorf("%w: %w", ErrLoad, err)
	}
	return Loaded[C]{Module: m, Manifest: man, Compiled: c}, nil
}
