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
	"sync"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// generation is the set of loaded modules plugins.Build makes per reload.
type generation = plugins.Generation[*wasmrt.Module]

// catalog is what the server serves between two reloads: one immutable
// value per generation, published behind one atomic pointer and swapped
// once per reload. For each served tool it holds everything a call needs —
// the declaration, the compiled module, the resolved limits and grants, and
// the admission gate — so tools/list renders it and tools/call dispatches
// through it, and the two cannot disagree. It implements mcpserver.Catalog.
//
// A request holds the catalog it read (hold) until it ends (drop); a task
// holds it until its work returns. A reload retires the old catalog, and
// the modules only it used are closed when its last holder is done: a call
// always runs on the catalog it was dispatched through, never on a module
// closed under it.
type catalog struct {
	srv      *Server
	gen      *generation
	tools    map[string]*servedTool
	list     []abi.Tool // sorted by name
	listing  [32]byte   // digest of list: a swap that changes it notifies clients
	problems []Problem  // load problems, then policy entries that match no tool

	mu       sync.Mutex
	refs     int              // requests and tasks holding the catalog
	retired  bool             // a newer catalog is served
	released []*wasmrt.Module // closed when retired and refs is 0
}

// hold takes a reference, unless the catalog is retired.
func (c *catalog) hold() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.retired {
		return false
	}
	c.refs++
	return true
}

// drop gives a reference back; the last one of a retired catalog closes
// the modules it alone used.
func (c *catalog) drop() {
	c.mu.Lock()
	c.refs--
	var closing []*wasmrt.Module
	if c.retired && c.refs == 0 {
		closing, c.released = c.released, nil
	}
	c.mu.Unlock()
	closeModules(closing)
}

// retire marks the catalog replaced; released are the modules of it that
// the next catalog does not use.
func (c *catalog) retire(released []*wasmrt.Module) {
	c.mu.Lock()
	c.retired = true
	c.released = released
	var closing []*wasmrt.Module
	if c.refs == 0 {
		closing, c.released = c.released, nil
	}
	c.mu.Unlock()
	closeModules(closing)
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
	policy ToolPolicy    // effective: the operator's policy with every default filled
	lim    wasmrt.Limits // policy as the runtime takes it; PassEnv read when the catalog was built
	gate   *gate         // per tool; carried over from the previous catalog
}

// buildCatalog makes the catalog of gen. Gates of tools that prev served
// carry over, so a reload never lets more calls of a tool run at once than
// its policy allows.
func (s *Server) buildCatalog(gen *generation, prev *catalog) *catalog {
	c := &catalog{srv: s, gen: gen, tools: make(map[string]*servedTool)}
	for _, l := range gen.Modules() {
		for _, t := range l.Manifest.Tools {
			pol := s.cfg.Policy.forTool(t.Name)
			st := &servedTool{decl: t, module: l.Module, code: l.Compiled, policy: pol, lim: limitsOf(pol, os.LookupEnv)}
			if p, ok := prev.tool(t.Name); ok {
				st.gate = p.gate
			} else {
				st.gate = newGate(pol.MaxConcurrency, pol.MaxQueue)
			}
			c.tools[t.Name] = st
			c.list = append(c.list, t)
		}
	}
	slices.SortFunc(c.list, func(a, b abi.Tool) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(c.list)
	c.listing = sha256.Sum256(b)
	for _, p := range gen.Problems() {
		c.problems = append(c.problems, Problem{Module: p.Name, Path: p.Path, Err: p.Err})
	}
	if s.cfg.Policy != nil {
		for _, name := range slices.Sorted(maps.Keys(s.cfg.Policy.Tools)) {
			if _, ok := c.tools[name]; !ok {
				c.problems = append(c.problems, Problem{Err: fmt.Errorf("%w: tools.%s matches no served tool", ErrPolicy, name)})
			}
		}
	}
	return c
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

// Tool implements mcpserver.Catalog.
func (c *catalog) Tool(name string) (abi.Tool, bool) {
	t, ok := c.tools[name]
	if !ok {
		return abi.Tool{}, false
	}
	return t.decl, true
}

// Call implements mcpserver.Catalog: the server's one call path, with its
// errors classified for the MCP layer to word.
func (c *catalog) Call(ctx context.Context, name string, args json.RawMessage, ev abi.Events) (*abi.Result, error) {
	res, err := c.srv.call(ctx, c, name, args, ev)
	if err != nil {
		return nil, failureOf(err)
	}
	return res, nil
}

// limitsOf turns an effective tool policy into the runtime's limits. PassEnv
// is read through getenv.
func limitsOf(tp ToolPolicy, getenv func(string) (string, bool)) wasmrt.Limits {
	lim := wasmrt.Limits{
		MemoryMiB:      tp.MemoryMiB,
		Timeout:        tp.Timeout.std(),
		MaxOutputBytes: tp.MaxOutputBytes,
		MaxLogBytes:    tp.MaxLogBytes,
	}
	if len(tp.Env)+len(tp.PassEnv) > 0 {
		lim.Env = make(map[string]string, len(tp.Env)+len(tp.PassEnv))
		for _, k := range tp.PassEnv {
			if v, ok := getenv(k); ok {
				lim.Env[k] = v
			}
		}
		for k, v := range tp.Env {
			lim.Env[k] = v
		}
	}
	for _, mp := range tp.Mounts {
		lim.Mounts = append(lim.Mounts, wasmrt.Mount{HostDir: mp.HostDir, GuestPath: mp.GuestPath, Write: mp.Write})
	}
	return lim
}

var _ mcpserver.Catalog = (*catalog)(nil)
