package host

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/primitives"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
)

// This file serves a catalog's resources, resource templates and prompts
// (ABI 1.2): the table says which module serves what
// (host/internal/primitives); each read, prompt and completion is admitted
// like a call, within its module's default limits and grants, and runs in
// a fresh instance.

// servedPrims is what a module's primitives run with.
type servedPrims struct {
	module plugins.Module
	code   *wasmrt.Module
	lim    wasmrt.Limits
	tp     ToolPolicy      // the module's default limits, which decide caching too
	slot   *admission.Tool // the module's share for them; carried over like a tool's
	need   uint64
}

// addPrims builds the servedPrims of module l for the catalog after prev, within its module's admission share ms.
func (s *Server) addPrims(prev *catalog, l plugins.Loaded[*wasmrt.Module], entry ModulePolicy, ms *admission.Module) *servedPrims {
	tp := s.cfg.Policy.ForTool(entry, "")
	sp := &servedPrims{module: l.Module, code: l.Compiled, lim: tp.Limits(entry.Grants, os.LookupEnv), tp: tp}
	sp.need = sp.code.Reservation(sp.lim)
	if p := prev.primsOf(l.Module.Name); p != nil && p.slot.Module() == ms {
		sp.slot = p.slot
		s.adm.ResizeTool(sp.slot, tp.MaxConcurrency, tp.MaxQueue)
	} else {
		sp.slot = s.adm.NewTool(ms, tp.MaxConcurrency, tp.MaxQueue)
	}
	return sp
}

// primsOf is the servedPrims of module name in c, nil when none.
func (c *catalog) primsOf(name string) *servedPrims {
	if c == nil {
		return nil
	}
	return c.primsBy[name]
}

// runPrim admits one request of sp's module for from and runs it.
func (s *Server) runPrim(ctx context.Context, sp *servedPrims, from mcpserver.Caller, run func(context.Context) error) error {
	return s.admit(ctx, sp.slot, sp.need, from, fmt.Sprintf("module %q", sp.module.Name), run)
}

// Resources implements mcpserver.Primitives.
func (c *catalog) Resources(visible func(name, module string) bool) []abi.Resource {
	return c.prims.Resources(visible)
}

// ResourceTemplates implements mcpserver.Primitives.
func (c *catalog) ResourceTemplates(visible func(name, module string) bool) []abi.ResourceTemplate {
	return c.prims.Templates(visible)
}

// Prompts implements mcpserver.Primitives.
func (c *catalog) Prompts(visible func(name, module string) bool) []abi.Prompt {
	return c.prims.Prompts(visible)
}

// route finds what serves uri, if visible admits it.
func (c *catalog) route(uri string, visible func(name, module string) bool) (primitives.Read[*servedPrims], bool) {
	if abi.CheckURI(uri) != nil {
		return primitives.Read[*servedPrims]{}, false
	}
	r, ok := c.prims.Route(uri)
	if !ok || (visible != nil && !visible(uri, r.Module)) {
		return primitives.Read[*servedPrims]{}, false
	}
	return r, true
}

// Routes implements mcpserver.Primitives.
func (c *catalog) Routes(uri string, visible func(name, module string) bool) bool {
	_, ok := c.route(uri, visible)
	return ok
}

// ReadResource implements mcpserver.Primitives.
func (c *catalog) ReadResource(ctx context.Context, from mcpserver.Caller, uri string, visible func(name, module string) bool) (res *abi.ReadResult, module string, err error) {
	r, ok := c.route(uri, visible)
	if !ok {
		return nil, "", fmt.Errorf("%w: %q", mcpserver.ErrUnknownResource, uri)
	}
	sp := r.Code
	read := func(ctx context.Context) (res *abi.ReadResult, err error) {
		err = c.srv.runPrim(ctx, sp, from, func(ctx context.Context) (err error) {
			res, err = sp.code.Read(ctx, uri, r.Template, r.Variables, sp.lim)
			return err
		})
		return res, err
	}
	if plan := c.srv.planFor(r.Cache, sp.tp, sp.lim); plan.ttl > 0 {
		res, err = c.srv.cachedRead(ctx, sp.module.Digest, plan, from.Tenant, uri, read)
	} else {
		res, err = read(ctx)
	}
	if err != nil {
		return nil, r.Module, failureOf(err)
	}
	return res, r.Module, nil
}

// GetPrompt implements mcpserver.Primitives.
func (c *catalog) GetPrompt(ctx context.Context, from mcpserver.Caller, name string, args map[string]string, visible func(name, module string) bool) (res *abi.PromptResult, module string, err error) {
	module, sp, decl, ok := c.prims.Prompt(name)
	if !ok || (visible != nil && !visible(name, module)) {
		return nil, "", fmt.Errorf("%w: %q", mcpserver.ErrUnknownPrompt, name)
	}
	for _, a := range decl.Arguments {
		if _, given := args[a.Name]; a.Required && !given {
			return nil, module, &mcpserver.Failure{Kind: mcpserver.FailArguments, Detail: fmt.Sprintf("missing required argument %q", a.Name)}
		}
	}
	err = c.srv.runPrim(ctx, sp, from, func(ctx context.Context) (err error) {
		res, err = sp.code.Prompt(ctx, name, args, sp.lim, nil)
		return err
	})
	if err != nil {
		return nil, module, failureOf(err)
	}
	return res, module, nil
}

// Complete implements mcpserver.Primitives: a completion the modules do
// not declare, or of what visible does not admit, has no values.
func (c *catalog) Complete(ctx context.Context, from mcpserver.Caller, ref abi.CompleteRef, arg abi.CompleteArgument, given map[string]string, visible func(name, module string) bool) (*abi.CompleteResult, error) {
	module, sp, ok := c.prims.Completer(ref, arg.Name)
	name := ref.Name
	if ref.Type == abi.RefResource {
		name = ref.URI
	}
	if !ok || (visible != nil && !visible(name, module)) {
		return &abi.CompleteResult{Values: []string{}}, nil
	}
	var res *abi.CompleteResult
	err := c.srv.runPrim(ctx, sp, from, func(ctx context.Context) (err error) {
		res, err = sp.code.Complete(ctx, ref, arg, given, sp.lim)
		return err
	})
	if err != nil {
		return nil, failureOf(err)
	}
	return res, nil
}

// buildPrims makes c's table of sources, and reports as problems the
// declarations it does not serve (paths: each module's file).
func (c *catalog) buildPrims(sources []primitives.Source[*servedPrims], paths map[string]string) {
	c.prims = primitives.Build(sources)
	for _, cf := range c.prims.Conflicts() {
		c.problems = append(c.problems, Problem{Module: cf.Module, Path: paths[cf.Module], Err: cf})
	}
	rm, tm, pm := c.prims.Modules()
	c.resourcesListing = listing(c.prims.Resources(nil), rm, c.prims.Templates(nil), tm)
	c.promptsListing = listing(c.prims.Prompts(nil), pm)
}

// listing is a digest of what lists render (with the module of each item,
// which decides who sees it): a change of it is a list_changed.
func listing(parts ...any) [sha256.Size]byte {
	b, _ := json.Marshal(parts)
	return sha256.Sum256(b)
}

// notifyChanges tells clients what a swap from prev to next changed:
// the tool, resource and prompt lists (list_changed), and each subscribed
// resource whose module changed (resources/updated).
func (s *Server) notifyChanges(prev, next *catalog) {
	if prev.listing != next.listing {
		s.mcp.ToolsChanged()
	}
	if prev.resourcesListing != next.resourcesListing {
		s.mcp.ResourcesChanged()
	}
	if prev.promptsListing != next.promptsListing {
		s.mcp.PromptsChanged()
	}
	s.mcp.ResourcesUpdated(context.Background(), func(uri string) bool {
		return servedBy(prev, uri) != servedBy(next, uri)
	})
}

// servedBy is the digest of the module that serves uri in c, "" when none
// does: a read may answer differently once it changes.
func servedBy(c *catalog, uri string) string {
	r, ok := c.route(uri, nil)
	if !ok {
		return ""
	}
	return r.Code.module.Digest
}
