package host

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/primitives"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// generation is the set of loaded modules plugins.Build makes per reload.
type generation = plugins.Generation[*wasmrt.Module]

// catalog is what the server serves between two reloads: one immutable
// value per generation, published behind one atomic pointer and swapped
// once per reload. For each served tool it holds everything a call needs —
// the declaration, the compiled module, the resolved limits and grants, and
// its share of the admission — so tools/list renders it and tools/call dispatches
// through it, and the two cannot disagree. It implements mcpserver.Catalog.
//
// A request holds the catalog it read (hold) until it ends (drop); a task
// holds it until its work returns. A reload retires the old catalog and
// hands it the modules the new one no longer uses. Those modules may be
// used by older retired catalogs too (a module kept while its next version
// loads serves several catalogs in a row), so they close only when this
// catalog and every older one have no holder left: the catalogs still
// alive form a chain from oldest to newest, and a retired catalog settles
// once it is at the head of that chain with no holder. A call always runs
// on the catalog it was dispatched through, never on a module closed under
// it.
type catalog struct {
	srv      *Server
	gen      *generation
	tools    map[string]*servedTool
	modules  map[string]*admission.Module // admission share of each served module, by name
	list     []abi.Tool                   // sorted by name
	listing  [32]byte                     // digest of list: a swap that changes it notifies clients
	problems []Problem                    // load problems, then policy problems

	prims   *primitives.Table[*servedPrims] // resources, templates and prompts (prims.go)
	primsBy map[string]*servedPrims         // by module name
	// Digests of what the resource (and template) lists and the prompt
	// list render, for list_changed.
	resourcesListing, promptsListing [sha256.Size]byte

	// Guarded by srv.holdMu.
	refs         int              // requests and tasks holding the catalog
	retired      bool             // a newer catalog is served
	released     []*wasmrt.Module // closed once settled
	older, newer *catalog         // neighbours in the chain of catalogs not yet settled
}

// hold takes a reference, unless the catalog is retired.
func (c *catalog) hold() bool {
	c.srv.holdMu.Lock()
	defer c.srv.holdMu.Unlock()
	if c.retired {
		return false
	}
	c.refs++
	return true
}

// drop gives a reference back; the last one of a retired catalog may
// settle it, and the retired catalogs after it.
func (c *catalog) drop() {
	c.srv.holdMu.Lock()
	c.refs--
	closing := c.settle()
	c.srv.holdMu.Unlock()
	closeModules(closing)
}

// succeed links next after c, the served catalog, before next is
// published.
func (c *catalog) succeed(next *catalog) {
	c.srv.holdMu.Lock()
	defer c.srv.holdMu.Unlock()
	c.newer, next.older = next, c
}

// retire marks the catalog replaced; released are the modules of it that
// the next catalog does not use.
func (c *catalog) retire(released []*wasmrt.Module) {
	c.srv.holdMu.Lock()
	c.retired = true
	c.released = released
	closing := c.settle()
	c.srv.holdMu.Unlock()
	closeModules(closing)
}

// settle unlinks, from the oldest end of the chain, each retired catalog
// without holders, and returns the modules they released. holdMu is held.
func (c *catalog) settle() (closing []*wasmrt.Module) {
	for c != nil && c.retired && c.refs == 0 && c.older == nil {
		closing = append(closing, c.released...)
		next := c.newer
		c.released, c.newer = nil, nil
		if next != nil {
			next.older = nil
		}
		c = next
	}
	return closing
}

// closeModules closes modules no catalog serves. Close does not wait:
// calls still running on them (a task started before a reload) finish,
// and the compiled code is freed after the last.
func closeModules(ms []*wasmrt.Module) {
	for _, m := range ms {
		m.Close(context.Background())
	}
}

// servedTool is one tool of a catalog.
type servedTool struct {
	decl   abi.Tool       // normalised by abi.DecodeManifest
	module plugins.Module // the file it came from
	code   *wasmrt.Module
	policy ToolPolicy      // effective limits: the operator's policy with every default filled
	grants Grants          // those of the module's policy entry, when it applies to this file
	lim    wasmrt.Limits   // limits and grants as the runtime takes them; PassEnv read when the catalog was built
	slot   *admission.Tool // its admission share; carried over from the previous catalog
	need   uint64          // bytes one call reserves of the memory budget: code.Reservation(lim)
	cache  cachePlan       // how its results are cached
}

// buildCatalog makes the catalog of gen. Everything a tool gets from the
// policy — limits, grants, admission bounds — is looked up by the file
// that serves it (module name, and digest when the entry pins one), never
// by the tool's name, which any file may declare. Admission shares of
// tools and modules that prev served from the same module carry over, so a
// reload never lets more calls run at once than the policy allows.
func (s *Server) buildCatalog(gen *generation, prev *catalog) *catalog {
	c := &catalog{srv: s, gen: gen, tools: make(map[string]*servedTool), modules: make(map[string]*admission.Module), primsBy: map[string]*servedPrims{}}
	pol := s.cfg.Policy
	var sources []primitives.Source[*servedPrims]
	paths := map[string]string{}
	for _, l := range gen.Modules() {
		m := l.Module
		entry, err := pol.ForModule(m)
		if err != nil {
			c.problems = append(c.problems, Problem{Module: m.Name, Path: m.Path, Err: err})
		}
		modSlots, modMemory := pol.ModuleShare(entry, s.adm.Budget())
		ms := prev.module(m.Name)
		if ms != nil {
			s.adm.ResizeModule(ms, modSlots, modMemory)
		} else {
			ms = s.adm.NewModule(m.Name, modSlots, modMemory)
		}
		c.modules[m.Name] = ms
		if l.Manifest.Serves() {
			sp := s.addPrims(prev, l, entry, ms)
			c.primsBy[m.Name], paths[m.Name] = sp, m.Path
			sources = append(sources, primitives.Source[*servedPrims]{Module: m.Name, Manifest: l.Manifest, Code: sp})
		}
		for _, t := range l.Manifest.Tools {
			tp := pol.ForTool(entry, t.Name)
			st := &servedTool{decl: t, module: m, code: l.Compiled, policy: tp, grants: entry.Grants, lim: tp.Limits(entry.Grants, os.LookupEnv)}
			st.need = st.code.Reservation(st.lim)
			st.cache = s.cachePlanOf(t, tp, st.lim)
			if p, ok := prev.tool(t.Name); ok && p.slot.Module() == ms {
				st.slot = p.slot
				s.adm.ResizeTool(st.slot, tp.MaxConcurrency, tp.MaxQueue)
			} else {
				st.slot = s.adm.NewTool(ms, tp.MaxConcurrency, tp.MaxQueue)
			}
			if need := st.need; need > s.adm.Budget() {
				c.problems = append(c.problems, Problem{Module: m.Name, Path: m.Path, Err: fmt.Errorf("%w: tool %q: %s; its calls fail",
					ErrPolicy, t.Name, (&admission.BudgetError{Need: need, Budget: s.adm.Budget()}).Detail())})
			}
			c.tools[t.Name] = st
			c.list = append(c.list, t)
		}
		for _, name := range slices.Sorted(maps.Keys(entry.Tools)) {
			if !slices.ContainsFunc(l.Manifest.Tools, func(t abi.Tool) bool { return t.Name == name }) {
				c.problems = append(c.problems, Problem{Module: m.Name, Path: m.Path,
					Err: fmt.Errorf("%w: modules.%s.tools.%s: the module declares no such tool", ErrPolicy, m.Name, name)})
			}
		}
		if pol != nil {
			// The binding holds whatever the pin says: read the entry itself.
			for _, name := range pol.Modules[m.Name].ToolNames {
				if !slices.ContainsFunc(l.Manifest.Tools, func(t abi.Tool) bool { return t.Name == name }) {
					c.problems = append(c.problems, Problem{Module: m.Name, Path: m.Path,
						Err: fmt.Errorf("%w: modules.%s.toolNames: the module declares no tool %q (no other file may serve it)", ErrPolicy, m.Name, name)})
				}
			}
		}
	}
	c.buildPrims(sources, paths)
	slices.SortFunc(c.list, func(a, b abi.Tool) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(c.list)
	c.listing = sha256.Sum256(b)
	policyProblems := c.problems
	c.problems = nil
	for _, p := range gen.Problems() {
		c.problems = append(c.problems, Problem{Module: p.Name, Path: p.Path, Err: p.Err})
	}
	c.problems = append(c.problems, policyProblems...)
	if pol != nil {
		for _, name := range slices.Sorted(maps.Keys(pol.Modules)) {
			if _, ok := c.modules[name]; !ok && !slices.ContainsFunc(gen.Problems(), func(p plugins.Problem) bool { return p.Name == name }) {
				c.problems = append(c.problems, Problem{Module: name, Err: fmt.Errorf("%w: modules.%s matches no module in the tool directory", ErrPolicy, name)})
			}
		}
	}
	return c
}

// module returns the admission share of the module called name, nil when
// c does not serve it.
func (c *catalog) module(name string) *admission.Module {
	if c == nil {
		return nil
	}
	return c.modules[name]
}

func (c *catalog) tool(name string) (*servedTool, bool) {
	if c == nil {
		return nil, false
	}
	t, ok := c.tools[name]
	return t, ok
}

// Tools implements mcpserver.Catalog.
func (c *catalog) Tools() []abi.Tool { return c.list }

// Tool implements mcpserver.Catalog: a tool's calls report and ask only
// through the host functions its module imports.
func (c *catalog) Tool(name string) (mcpserver.ToolInfo, bool) {
	t, ok := c.tools[name]
	if !ok {
		return mcpserver.ToolInfo{}, false
	}
	reach := t.code.Reach()
	return mcpserver.ToolInfo{Decl: t.decl, Module: t.module.Name, Digest: t.module.Digest,
		Progress: reach.Progress, Asks: reach.Elicit}, true
}

// Call implements mcpserver.Catalog: the server's one call path, with its
// errors classified for the MCP layer to word.
func (c *catalog) Call(ctx context.Context, who mcpserver.Caller, name string, args json.RawMessage, ev abi.Events) (*abi.Result, bool, error) {
	res, hit, err := c.srv.call(ctx, c, who, name, args, ev)
	if err != nil {
		return nil, false, failureOf(err)
	}
	return res, hit, nil
}

var _ mcpserver.Catalog = (*catalog)(nil)
