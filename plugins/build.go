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
	ErrLoad         = errors.New("module failed to load")
	ErrToolConflict = errors.New("tool name declared by two modules")
)

// Loader is what the host provides to [Build]: it compiles a module and runs
// it once to ask for its manifest. C is the host's compiled-module type; this
// package never looks inside it, so it stays free of any Wasm runtime.
//
// Load is called only for a digest no module of the previous generation
// had, and never twice for one digest in one Build: from the goroutine that
// called Build, or, when the Loader is wrapped in [Loads], from a Loads
// worker (concurrently for different digests) with a context that ends at
// the load's deadline. The manifest it returns is the one [abi.DecodeManifest]
// returned: decoded, validated and normalised. Build trusts it and does not
// decode it again; it refuses only a nil manifest, as a load failure. Load
// may refuse a module for reasons of its own (policy) by returning an
// error. When Load returns an error, or no manifest, Build calls Release on
// the compiled value if Load returned one (the host passes a zero C when
// there is nothing to release).
type Loader[C any] interface {
	Load(ctx context.Context, m Module, wasm []byte) (compiled C, manifest *abi.Manifest, err error)
	Release(compiled C)
}

// Build makes the next generation from prev (nil at start) and a new
// snapshot, steps one and two of a reload: load what changed, validate it
// fully. It loads only modules whose digest prev did not have (a renamed or
// unchanged file reuses its compiled module), keeps the previous version of
// a module whose new version fails, and gives each tool name to one module:
// a name rules bind goes to its module; a name a module served stays its
// own while its file is in the snapshot and for rules.NameGrace after the
// file left; the other names go to the modules already serving, then to
// new ones in name order. A module that declares a name that is not its
// own is refused with a [*ConflictError] naming the owner's file.
//
// released lists the compiled modules of prev that next no longer uses; the
// host releases them once calls in flight on prev have ended. Build does not
// fail: every failure is a [Problem] of next. A done ctx makes the modules
// not yet loaded fail with the context's error.
//
// With a [*Loads] as l, Build never waits for a load: a module whose load
// has not finished is a problem wrapping [ErrLoading] (its previous version,
// if any, keeps serving), counted by [Generation.Loading]; build again when
// [Loads.Finished] says a load is done.
func Build[C any](ctx context.Context, prev *Generation[C], snap *Snapshot, l Loader[C], rules Rules) (next *Generation[C], released []C) {
	b := startBuild(prev, snap, l, rules)
	cands := b.loadChanged(ctx)
	b.assignTools(cands)
	sortProblems(b.next.problems)
	return b.next, b.release()
}

// building is one Build in progress: the generation it makes and the
// tables its steps share.
type building[C any] struct {
	prev       *Generation[C]
	next       *Generation[C]
	l          Loader[C]
	rules      Rules
	byDigest   map[string]Loaded[C] // prev's modules and those loaded by this Build
	prevByName map[string]Loaded[C]
	fresh      map[string]bool // digests loaded by this Build
}

func startBuild[C any](prev *Generation[C], snap *Snapshot, l Loader[C], rules Rules) *building[C] {
	b := &building[C]{
		prev: prev,
		next: &Generation[C]{
			seq:      prev.Seq() + 1,
			snap:     snap,
			tools:    map[string]int{},
			failed:   map[string]error{},
			problems: snap.Problems(),
			grace:    max(rules.NameGrace, 0),
		},
		l:          l,
		rules:      rules,
		byDigest:   map[string]Loaded[C]{},
		prevByName: map[string]Loaded[C]{},
		fresh:      map[string]bool{},
	}
	if prev != nil {
		for _, p := range prev.mods {
			b.byDigest[p.Module.Digest] = p
			b.prevByName[p.Module.Name] = p
		}
		for _, p := range prev.refused {
			b.byDigest[p.Module.Digest] = p
		}
	}
	return b
}

// candidate is a module that may serve in the next generation, before tool
// names are given out.
type candidate[C any] struct {
	l       Loaded[C]
	serving bool // a module of this name served in prev
}

// loadChanged makes a candidate of each module of the snapshot, loading
// those whose digest is new. When a module fails, the previous version of
// the module of that name, if any, stays the candidate; the failure is a
// problem either way.
func (b *building[C]) loadChanged(ctx context.Context) []candidate[C] {
	var cands []candidate[C]
	for _, m := range b.next.snap.modules {
		old, serving := b.prevByName[m.Name]
		ld, err := b.loadDigest(ctx, m)
		switch {
		case err == nil:
			cands = append(cands, candidate[C]{ld, serving})
		case serving:
			cands = append(cands, candidate[C]{old, true})
			b.problem(m, fmt.Errorf("%w (still serving the previous version, %s)", err, shortDigest(old.Module.Digest)))
		default:
			b.problem(m, err)
		}
	}
	return cands
}

// loadDigest returns the loaded module of m's digest: prev's or this
// Build's when either has it, else loaded now. A failure that says
// something about the content is remembered against the digest, so that it
// is not loaded again until the content changes.
func (b *building[C]) loadDigest(ctx context.Context, m Module) (Loaded[C], error) {
	if ld, ok := b.byDigest[m.Digest]; ok {
		ld.Module = m
		return ld, nil
	}
	if err := b.failedBefore(m.Digest); err != nil {
		b.fail(m, err)
		return Loaded[C]{}, err
	}
	var ld Loaded[C]
	var err error
	if p, ok := b.l.(*Loads[C]); ok {
		ld, err = p.take(m, b.rules.Known[m.Name])
	} else {
		ld, err = load(ctx, b.l, m)
	}
	var retry retryError
	switch {
	case errors.Is(err, ErrLoading):
		b.next.loading++
		if b.rules.Known[m.Name] {
			b.next.loadingKnown++
		}
		return Loaded[C]{}, err
	case errors.As(err, &retry):
		return Loaded[C]{}, retry.err
	case err != nil:
		b.fail(m, err)
		return Loaded[C]{}, err
	}
	b.byDigest[m.Digest] = ld
	b.fresh[m.Digest] = true
	return ld, nil
}

// fail remembers that m's digest failed to load, and counts a failure at
// a limit.
func (b *building[C]) fail(m Module, err error) {
	b.next.failed[m.Digest] = err
	if hitLimit(err) {
		b.next.limited++
	}
}

// hitLimit reports whether a load failed because the module passed a
// limit: the load's deadline ([ErrLoadTimeout]) or one of the Loader's own,
// such as a time limit on describe (an error wrapping
// context.DeadlineExceeded while the load's own context was live: such an
// error is never taken for a retry).
func hitLimit(err error) bool {
	return errors.Is(err, ErrLoadTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// failedBefore returns why the digest d failed to load in an earlier Build
// or earlier in this one (two files with the same content), or nil.
func (b *building[C]) failedBefore(d string) error {
	if err := b.next.failed[d]; err != nil {
		return err
	}
	if b.prev == nil {
		return nil
	}
	return b.prev.failed[d]
}

// index makes mods the generation's modules, in name order, and indexes
// their tools.
func (g *Generation[C]) index(mods []Loaded[C]) {
	slices.SortFunc(mods, func(x, y Loaded[C]) int { return strings.Compare(x.Module.Name, y.Module.Name) })
	g.mods = mods
	for i, m := range mods {
		for _, t := range m.Manifest.Tools {
			g.tools[t.Name] = i
		}
	}
}

// release releases what this Build loaded that the next generation does
// not use, and returns prev's
// compiled modules that it does not use, for the host to release once the
// calls in flight on prev have ended. Each compiled value is handled once.
func (b *building[C]) release() (released []C) {
	used := make(map[string]bool, len(b.next.mods)+len(b.next.refused))
	for _, m := range b.next.mods {
		used[m.Module.Digest] = true
	}
	for _, m := range b.next.refused {
		used[m.Module.Digest] = true
	}
	for d, ld := range b.byDigest {
		switch {
		case used[d]:
		case b.fresh[d]:
			b.l.Release(ld.Compiled)
		default:
			released = append(released, ld.Compiled)
		}
	}
	return released
}

func (b *building[C]) problem(m Module, err error) {
	b.next.problems = append(b.next.problems, Problem{Name: m.Name, Path: m.Path, Err: err})
}

// retryError marks a load failure that says nothing about the module's
// content (a done context, a file changed or gone since the scan): it is
// not remembered against the digest.
type retryError struct{ err error }

func (e retryError) Error() string { return e.err.Error() }
func (e retryError) Unwrap() error { return e.err }

// load reads one module's bytes and has the Loader compile and describe it.
func load[C any](ctx context.Context, l Loader[C], m Module) (Loaded[C], error) {
	if err := ctx.Err(); err != nil {
		return Loaded[C]{}, retryError{fmt.Errorf("%w: %w", ErrLoad, err)}
	}
	wasm, err := m.readBytes()
	if err != nil {
		return Loaded[C]{}, retryError{fmt.Errorf("%w: %w", ErrLoad, err)}
	}
	c, man, err := l.Load(ctx, m, wasm)
	switch {
	case err != nil && ctx.Err() != nil:
		l.Release(c)
		return Loaded[C]{}, retryError{fmt.Errorf("%w: %w", ErrLoad, err)}
	case err != nil:
		l.Release(c)
		return Loaded[C]{}, fmt.Errorf("%w: %w", ErrLoad, err)
	case man == nil:
		l.Release(c)
		return Loaded[C]{}, fmt.Errorf("%w: the loader returned no manifest", ErrLoad)
	}
	return Loaded[C]{Module: m, Manifest: man, Compiled: c}, nil
}
