package plugins

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rules are what the operator says about a [Build] beyond the directory
// itself: which module a tool name belongs to, how long a removed module's
// names wait for it, and which modules load first. The zero value binds
// nothing, reserves nothing and prefers no module: a name then goes to the
// module serving it, else to the first in file-name order. A Rules value is
// read during one Build only; do not change its maps while Build runs.
type Rules struct {
	// Bind binds tool names to modules: tool name → module name (the file
	// name without ".wasm"). A bound name is served by that module only,
	// whatever the order in which files appear or load, and whoever
	// served it before; another module that declares it is refused. A
	// name bound to a module that is not in the snapshot is not served.
	Bind map[string]string

	// NameGrace is how long the tool names a module served stay reserved
	// for it once its file has left the snapshot (a redeploy that removes
	// the file and copies it back): meanwhile another module that declares
	// one of them is refused, and the module gets them back when its file
	// returns. While the file is in the snapshot its names are its own,
	// also when its current version is still loading or failed to load.
	// Zero or negative: no reservation once the file is gone.
	NameGrace time.Duration

	// Known names the modules the operator knows (module name → true):
	// [Loads] loads them before the other modules of their source, and
	// [Generation.LoadingKnown] counts those still loading.
	Known map[string]bool
}

// maxGoneClaims bounds the reservations a Generation keeps for modules
// whose files have left the snapshot. Past it, the reservations of the
// modules that began serving most recently go first: a flood of short-lived
// modules cannot push out the reservation of one that served for long.
const maxGoneClaims = 1024

// claim is the tool names one module holds: those it serves; kept while
// its file is in the snapshot without serving (its new version loading,
// failed or refused), and for Rules.NameGrace after the file left.
type claim struct {
	path  string
	tools []string  // sorted
	since time.Time // when the module began to serve
	gone  time.Time // when its file left the snapshot; zero while it is in it
}

// live reports whether the claim still holds at now.
func (c claim) live(now time.Time, grace time.Duration) bool {
	return c.gone.IsZero() || now.Before(c.gone.Add(grace))
}

// Why a module is refused a tool name, in [ConflictError].
const (
	ConflictServed   = "served"   // the owner serves the name
	ConflictDeclared = "declared" // the owner declares it too and comes first in file-name order; neither served it before
	ConflictBound    = "bound"    // the operator's rules bind the name to the owner
	ConflictHeld     = "held"     // the owner served it, its file is still there, and its current version is not serving
	ConflictReserved = "reserved" // the owner served it and its file was removed: the name waits for it until Until
)

// ConflictError is the error of a module refused because a tool name it
// declares belongs to another module. It names both files: the refused one
// is the [Problem]'s, the owner's is here. errors.Is(err, ErrToolConflict)
// holds.
type ConflictError struct {
	Tool      string
	Owner     string    // the module the name belongs to
	OwnerPath string    // its file; "" when no file of that module is known
	Why       string    // one of the Conflict constants
	Until     time.Time // ConflictReserved: when the reservation ends
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString(ErrToolConflict.Error() + ": ")
	switch e.Why {
	case ConflictBound:
		fmt.Fprintf(&b, "tool %q is bound to module %q by the operator", e.Tool, e.Owner)
	case ConflictReserved, ConflictHeld:
		fmt.Fprintf(&b, "tool %q is reserved for module %q", e.Tool, e.Owner)
	default:
		fmt.Fprintf(&b, "tool %q is already declared by module %q", e.Tool, e.Owner)
	}
	if e.OwnerPath != "" {
		fmt.Fprintf(&b, " (%s)", e.OwnerPath)
	}
	switch e.Why {
	case ConflictServed:
		b.WriteString(", which serves it")
	case ConflictDeclared:
		b.WriteString(", first in file-name order")
	case ConflictBound:
		if e.OwnerPath == "" {
			b.WriteString(", whose file is not in the directory")
		}
	case ConflictHeld:
		b.WriteString(", which served it and whose current version does not serve yet")
	case ConflictReserved:
		fmt.Fprintf(&b, ", which served it until its file was removed; reserved until %s", e.Until.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Is reports whether target is ErrToolConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrToolConflict }

// holder is who a tool name belongs to before this Build gives it out.
type holder struct {
	module, path, why string
	until             time.Time
}

// holders returns the tool names that belong to a module before any
// candidate claims them: bound by the rules, or held by a live claim of
// prev. A module that is a candidate of this Build holds only the names
// its candidate still declares: a name its new version dropped is free at
// once.
func (b *building[C]) holders(now time.Time, cands []candidate[C]) map[string]holder {
	h := map[string]holder{}
	declares := map[string]map[string]bool{} // module → tools of its candidate
	for _, c := range cands {
		ts := map[string]bool{}
		for _, t := range c.l.Manifest.Tools {
			ts[t.Name] = true
		}
		declares[c.l.Module.Name] = ts
	}
	for mod, c := range b.liveClaims(now) {
		m, present := b.next.snap.module(mod)
		for _, t := range c.tools {
			if ts, ok := declares[mod]; ok && !ts[t] {
				continue
			}
			switch {
			case !present:
				h[t] = holder{module: mod, path: c.path, why: ConflictReserved, until: c.gone.Add(b.rules.NameGrace)}
			case b.prev.serves(t, mod):
				h[t] = holder{module: mod, path: m.Path, why: ConflictServed}
			default:
				h[t] = holder{module: mod, path: m.Path, why: ConflictHeld}
			}
		}
	}
	for t, mod := range b.rules.Bind {
		path := ""
		if m, ok := b.next.snap.module(mod); ok {
			path = m.Path
		}
		h[t] = holder{module: mod, path: path, why: ConflictBound}
	}
	return h
}

// liveClaims returns prev's claims that still hold at now, with gone set
// for the modules not in this Build's snapshot (now, for a file that has
// just left).
func (b *building[C]) liveClaims(now time.Time) map[string]claim {
	out := map[string]claim{}
	if b.prev == nil {
		return out
	}
	for mod, c := range b.prev.claims {
		if m, present := b.next.snap.module(mod); present {
			c.gone, c.path = time.Time{}, m.Path
		} else if c.gone.IsZero() {
			c.gone = now
		}
		if c.live(now, b.rules.NameGrace) {
			out[mod] = c
		}
	}
	return out
}

// serves reports whether g serves tool from the module called mod.
func (g *Generation[C]) serves(tool, mod string) bool {
	i, ok := g.tools[tool]
	return ok && g.mods[i].Module.Name == mod
}

// assignTools gives each tool name to one module. A name bound by the
// rules goes to its module only; a name a module holds (it served it, and
// its file is still there or left less than NameGrace ago) goes to that
// module only; the other names go to the modules served before first, then
// to the rest, each in name order. A module that declares a name that is
// not its own is refused ([ConflictError]). The modules that are not
// refused become the next generation's, and the claims are carried on.
func (b *building[C]) assignTools(cands []candidate[C]) {
	now := time.Now()
	held := b.holders(now, cands)
	slices.SortStableFunc(cands, func(x, y candidate[C]) int {
		switch {
		case x.serving && !y.serving:
			return -1
		case !x.serving && y.serving:
			return 1
		}
		return strings.Compare(x.l.Module.Name, y.l.Module.Name)
	})
	taken := map[string]candidate[C]{} // tool → module given it by this Build
	var accepted []Loaded[C]
	var conflicts []*ConflictError
	for _, c := range cands {
		if err := b.conflict(c, held, taken); err != nil {
			b.problem(c.l.Module, err)
			b.next.refused = append(b.next.refused, c.l)
			conflicts = append(conflicts, err)
			continue
		}
		for _, t := range c.l.Manifest.Tools {
			taken[t.Name] = c
		}
		accepted = append(accepted, c.l)
	}
	b.next.index(accepted)
	for _, ce := range conflicts {
		// Say what the owner does now that the Build has decided.
		serves := slices.ContainsFunc(accepted, func(l Loaded[C]) bool { return l.Module.Name == ce.Owner })
		switch {
		case ce.Why == ConflictServed && !serves:
			ce.Why = ConflictHeld
		case ce.Why == ConflictHeld && serves:
			ce.Why = ConflictServed
		}
	}
	b.next.claims = b.carryClaims(now)
}

// conflict says which tool of c is not c's to serve, or is nil.
func (b *building[C]) conflict(c candidate[C], held map[string]holder, taken map[string]candidate[C]) *ConflictError {
	name := c.l.Module.Name
	for _, t := range c.l.Manifest.Tools {
		if h, ok := held[t.Name]; ok && h.module != name {
			return &ConflictError{Tool: t.Name, Owner: h.module, OwnerPath: h.path, Why: h.why, Until: h.until}
		}
		if o, ok := taken[t.Name]; ok {
			why := ConflictDeclared
			if o.serving {
				why = ConflictServed
			}
			return &ConflictError{Tool: t.Name, Owner: o.l.Module.Name, OwnerPath: o.l.Module.Path, Why: why}
		}
	}
	return nil
}

// carryClaims makes the next generation's claims: each served module
// claims the names it serves; a module of the snapshot that does not serve
// keeps its previous claim; a module whose file left keeps its claim until
// NameGrace has passed. A name served by another module leaves every other
// claim, so claims never overlap. Reservations of files gone are bounded
// by maxGoneClaims.
func (b *building[C]) carryClaims(now time.Time) map[string]claim {
	next := map[string]claim{}
	live := b.liveClaims(now)
	for _, m := range b.next.mods {
		c := claim{path: m.Module.Path, since: now}
		if p, ok := live[m.Module.Name]; ok {
			c.since = p.since
		}
		for _, t := range m.Manifest.Tools {
			c.tools = append(c.tools, t.Name)
		}
		slices.Sort(c.tools)
		next[m.Module.Name] = c
	}
	var gone []string
	for mod, p := range live {
		if _, serves := next[mod]; serves {
			continue
		}
		p.tools = slices.DeleteFunc(slices.Clone(p.tools), func(t string) bool { _, ok := b.next.tools[t]; return ok })
		if len(p.tools) == 0 {
			continue
		}
		if !p.gone.IsZero() {
			gone = append(gone, mod)
		}
		next[mod] = p
	}
	if len(gone) > maxGoneClaims {
		// Keep the modules that began serving first.
		slices.SortFunc(gone, func(x, y string) int { return cmp.Or(next[x].since.Compare(next[y].since), strings.Compare(x, y)) })
		for _, mod := range gone[maxGoneClaims:] {
			delete(next, mod)
		}
	}
	return next
}

// ReservedUntil returns when the earliest reservation of a removed
// module's tool names ends (see [Rules].NameGrace), and false when there is
// none. A module refused for such a name may serve it from then on: build
// again at that time.
func (g *Generation[C]) ReservedUntil() (time.Time, bool) {
	if g == nil {
		return time.Time{}, false
	}
	var first time.Time
	for _, c := range g.claims {
		if c.gone.IsZero() {
			continue
		}
		if end := c.gone.Add(g.grace); first.IsZero() || end.Before(first) {
			first = end
		}
	}
	return first, !first.IsZero()
}
