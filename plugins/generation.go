package plugins

import (
	"slices"
	"time"

	"github.com/wasmtask/wasmtask/abi"
)

// Loaded is one module of a [Generation]: the file as scanned, its manifest
// as the [Loader] returned it, and the host's compiled module.
type Loaded[C any] struct {
	Module   Module
	Manifest *abi.Manifest // from abi.DecodeManifest; do not modify
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
	refused  []Loaded[C]      // loaded but not served (a tool name taken): kept so that the next Build need not load them again
	tools    map[string]int   // tool name → index in mods
	failed   map[string]error // digest → why it did not load; retried only when the digest changes
	problems []Problem
	claims   map[string]claim // by module name: the tool names each module holds (names.go)
	grace    time.Duration    // Rules.NameGrace of the Build that made it

	loading      int // modules of the snapshot whose load has not finished (see Loads)
	loadingKnown int // those of them Rules.Known names
	limited      int // modules of the snapshot whose load failed at a limit
}

// Seq numbers generations built from one another, from 1.
func (g *Generation[C]) Seq() uint64 {
	if g == nil {
		return 0
	}
	return g.seq
}

// Loading reports how many modules of the snapshot were still loading when
// the generation was built ([ErrLoading]); 0 when every module has loaded
// or failed.
func (g *Generation[C]) Loading() int {
	if g == nil {
		return 0
	}
	return g.loading
}

// LoadingKnown reports how many of the modules [Generation.Loading]
// counts are modules [Rules].Known names.
func (g *Generation[C]) LoadingKnown() int {
	if g == nil {
		return 0
	}
	return g.loadingKnown
}

// Limited reports how many modules of the snapshot failed to load because
// they passed a limit: the load's deadline ([ErrLoadTimeout]), or a limit
// of the Loader's own such as describe's time limit (an error wrapping
// context.DeadlineExceeded). Such a module is not loaded again until its
// content changes.
func (g *Generation[C]) Limited() int {
	if g == nil {
		return 0
	}
	return g.limited
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

// Problems returns the snapshot's problems and those of loading: modules
// the [Loader] refused (they failed to compile or to describe themselves,
// had an invalid manifest, or were refused by policy) or that declared a
// tool another module already declares. A module whose new
// version failed but whose previous version loaded keeps serving the
// previous version; its problem says so.
func (g *Generation[C]) Problems() []Problem {
	if g == nil {
		return nil
	}
	return slices.Clone(g.problems)
}
