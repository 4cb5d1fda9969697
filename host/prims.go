package host

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
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
	grants Grants          // the module's grants (its policy entry, when it applies to this file)
	slot   *admission.Tool // the module's share for them; carried over like a tool's
	need   uint64
}

// addPrims builds the servedPrims of module l for the catalog after prev, within its module's admission share ms.
func (s *Server) addPrims(prev *catalog, l plugins.Loaded[*wasmrt.Module], entry ModulePolicy, ms *admission.Module) *servedPrims {
	tp := s.cfg.Policy.ForTool(entry, "")
	sp := &servedPrims{module: l.Module, code: l.Compiled, lim: tp.Limits(entry.Grants, os.LookupEnv), tp: tp, grants: entry.Grants}
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
func (c *catalog) GetPrompt(ctx context.Context, from mcpserver.Caller, name string, args map[string]string, ev abi.Events, visible func(name, module string) bool) (res *abi.PromptResult, module string, err error) {
	module, sp, decl, ok := c.prims.Prompt(name)
	if !ok || (visible != nil && !visible(name, module)) {
		return nil, "", fmt.Errorf("%w: %q", mcpserver.ErrUnknownPrompt, name)
	}
	for _, a := range decl.Arguments {
		if _, given := args[a.Name]; a.Required && !given {
			detail := fmt.Sprintf("missing required argument %q", a.Name)
			return nil, module, &mcperr.Failure{Kind: mcperr.FailArguments, Detail: detail, Err: fmt.Errorf("prompt %q: %w: %s", name, ErrArguments, detail)}
		}
	}
	err = c.srv.runPrim(ctx, sp, from, func(ctx context.Context) (err error) {
		res, err = sp.code.Prompt(ctx, name, args, sp.lim, ev)
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

// ServedBy is the module that serves a resource, resource template or
// prompt, and what its requests (reads, prompts, completions) run with: the
// same numbers resources/read, prompts/get and completion/complete apply.
type ServedBy struct {
	Module            string     // name of the module
	Digest            string     // its content digest, "sha256:<hex>"
	Policy            ToolPolicy // the module's default limits, every default filled in
	Grants            Grants     // the module's grants (its policy entry, when it applies to this file)
	ModuleInstances   int        // requests of the module (calls too) that may run at once
	ModuleMemoryMiB   int        // memory those requests may reserve together
	ReservedMemoryMiB int        // what one request reserves of the server's memory budget
}

// ResourceInfo is a served resource as [Server.Resources] reports it.
type ResourceInfo struct {
	abi.Resource // the declaration
	ServedBy
}

// ResourceTemplateInfo is a served resource template as
// [Server.ResourceTemplates] reports it.
type ResourceTemplateInfo struct {
	abi.ResourceTemplate // the declaration
	ServedBy
}

// PromptInfo is a served prompt as [Server.Prompts] reports it.
type PromptInfo struct {
	abi.Prompt // the declaration
	ServedBy
}

// Resources returns the resources served now, sorted by URI: what
// resources/list shows a client that sees every module. Right after New
// it first waits for the modules found at start to load or fail.
func (s *Server) Resources() []ResourceInfo {
	c := s.served()
	mods, _, _ := c.prims.Modules()
	return infos(s, c, c.prims.Resources(nil), mods, func(r abi.Resource, by ServedBy) ResourceInfo {
		return ResourceInfo{Resource: r, ServedBy: by}
	})
}

// ResourceTemplates returns the resource templates served now, in the
// order a read tries them. Right after New it first waits for the modules
// found at start to load or fail.
func (s *Server) ResourceTemplates() []ResourceTemplateInfo {
	c := s.served()
	_, mods, _ := c.prims.Modules()
	return infos(s, c, c.prims.Templates(nil), mods, func(t abi.ResourceTemplate, by ServedBy) ResourceTemplateInfo {
		return ResourceTemplateInfo{ResourceTemplate: t, ServedBy: by}
	})
}

// Prompts returns the prompts served now, sorted by name. Right after New
// it first waits for the modules found at start to load or fail.
func (s *Server) Prompts() []PromptInfo {
	c := s.served()
	_, _, mods := c.prims.Modules()
	return infos(s, c, c.prims.Prompts(nil), mods, func(p abi.Prompt, by ServedBy) PromptInfo {
		return PromptInfo{Prompt: p, ServedBy: by}
	})
}

// served is the catalog served once the start is over.
func (s *Server) served() *catalog {
	_ = s.ready(context.Background(), "")
	return s.catalog.Load()
}

// infos pairs each declaration of list with what serves it (mods: the
// module of each, in the same order).
func infos[D, I any](s *Server, c *catalog, list []D, mods []string, info func(D, ServedBy) I) []I {
	out := make([]I, len(list))
	for i, d := range list {
		sp := c.primsBy[mods[i]]
		slots, memory := s.adm.ModuleShare(sp.slot.Module())
		out[i] = info(d, ServedBy{Module: sp.module.Name, Digest: sp.module.Digest, Policy: sp.tp, Grants: sp.grants,
			ModuleInstances: slots, ModuleMemoryMiB: int(memory >> 20), ReservedMemoryMiB: ceilMiB(sp.need)})
	}
	return out
}

// ReadResource reads uri on the path resources/read takes: the module
// that declares it (or the first template that matches it), the result
// cache for a resource declared cacheable, admission, then a fresh
// instance under the module's default limits and grants. It fails with
// [ErrUnknownResource] when nothing serves uri, and as [Server.Call]
// does when the guest fails. A ReadResult with Error set is the module's
// own error answer (abi.CodeResourceNotFound for a URI it does not know).
func (s *Server) ReadResource(ctx context.Context, uri string) (res *abi.ReadResult, err error) {
	err = s.directly(ctx, "", func(c *catalog) (err error) {
		res, _, err = c.ReadResource(ctx, mcpserver.Caller{}, uri, nil)
		return err
	})
	return res, directError(err, uri)
}

// GetPrompt renders prompt name with args on the path prompts/get takes:
// admission, then a fresh instance of its module under the module's
// default limits and grants. It fails with [ErrUnknownPrompt] when no
// prompt has the name, with [ErrArguments] when a required argument is
// missing, and as [Server.Call] does when the guest fails. A PromptResult
// with Error set is the module's own error answer.
func (s *Server) GetPrompt(ctx context.Context, name string, args map[string]string) (res *abi.PromptResult, err error) {
	err = s.directly(ctx, "", func(c *catalog) (err error) {
		res, _, err = c.GetPrompt(ctx, mcpserver.Caller{}, name, args, nil, nil)
		return err
	})
	return res, directError(err, name)
}

// Complete completes argument arg of ref (a prompt's argument, or a
// template's variable) on the path completion/complete takes; given holds
// the values of the other arguments already chosen. What no module
// declares it completes has no values, as for an MCP client. A
// CompleteResult with Error set is the module's own error answer.
func (s *Server) Complete(ctx context.Context, ref abi.CompleteRef, arg abi.CompleteArgument, given map[string]string) (res *abi.CompleteResult, err error) {
	err = s.directly(ctx, "", func(c *catalog) (err error) {
		res, err = c.Complete(ctx, mcpserver.Caller{}, ref, arg, given, nil)
		return err
	})
	return res, directError(err, "")
}

// directError turns the catalog's errors for the MCP layer back into the
// library's: the host's sentinels for what is unknown (named), and the
// error a Failure classifies.
func directError(err error, name string) error {
	var f *mcperr.Failure
	switch {
	case errors.Is(err, mcpserver.ErrUnknownResource):
		return fmt.Errorf("%w: %q", ErrUnknownResource, name)
	case errors.Is(err, mcpserver.ErrUnknownPrompt):
		return fmt.Errorf("%w: %q", ErrUnknownPrompt, name)
	case errors.As(err, &f) && f.Err != nil:
		return f.Err
	}
	return err
}
