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
	slot   *admission.Tool // the module's share for them; carried over like a tool's
	need   uint64
}

// Errors of the primitives, for the MCP layer to word.
var (
	// ErrUnknownResource: no served resource or template has the URI.
	ErrUnknownResource = errors.New("host: unknown resource")
	// ErrUnknownPrompt: no prompt of that name is served.
	ErrUnknownPrompt = errors.New("host: unknown prompt")
)

// addPrims builds the servedPrims of module l for the catalog after prev, within its module's admission share ms.
func (s *Server) addPrims(prev *catalog, l plugins.Loaded[*wasmrt.Module], entry ModulePolicy, ms *admission.Module) *servedPrims {
	tp := s.cfg.Policy.forTool(entry, "")
	sp := &servedPrims{module: l.Module, code: l.Compiled, lim: limitsOf(tp, entry.Grants, os.LookupEnv)}
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
	who := admission.Caller{Tenant: from.Tenant, Queued: from.Queued}
	if from.User != "" {
		who.Slots, who.Memory, who.Strict = s.tenantShare(from.User)
	}
	if err := s.adm.EnterAs(ctx, sp.slot, sp.need, who); err != nil {
		return fmt.Errorf("module %q: %w", sp.module.Name, err)
	}
	defer s.adm.LeaveAs(sp.slot, sp.need, who.Tenant)
	return run(ctx)
}

// Resources implements mcpserver.Catalog.
func (c *catalog) Resources() []abi.Resource { return c.prims.Resources() }

// ResourceTemplates implements mcpserver.Catalog.
func (c *catalog) ResourceTemplates() []abi.ResourceTemplate { return c.prims.Templates() }

// Prompts implements mcpserver.Catalog.
func (c *catalog) Prompts() []abi.Prompt { return c.prims.Prompts() }

// ReadResource implements mcpserver.Catalog.
func (c *catalog) ReadResource(ctx context.Context, from mcpserver.Caller, uri string) (res *abi.ReadResult, module string, err error) {
	if abi.CheckURI(uri) != nil {
		return nil, "", fmt.Errorf("%w: %q", ErrUnknownResource, uri)
	}
	r, ok := c.prims.Route(uri)
	if !ok {
		return nil, "", fmt.Errorf("%w: %q", ErrUnknownResource, uri)
	}
	sp := r.Code
	err = c.srv.runPrim(ctx, sp, from, func(ctx context.Context) (err error) {
		res, err = sp.code.Read(ctx, uri, r.Template, r.Variables, sp.lim)
		return err
	})
	if err != nil {
		return nil, r.Module, failureOf(err)
	}
	return res, r.Module, nil
}

// GetPrompt implements mcpserver.Catalog.
func (c *catalog) GetPrompt(ctx context.Context, from mcpserver.Caller, name string, args map[string]string, ev abi.Events) (res *abi.PromptResult, module string, err error) {
	module, sp, decl, ok := c.prims.Prompt(name)
	if !ok {
		return nil, "", fmt.Errorf("%w: %q", ErrUnknownPrompt, name)
	}
	for _, a := range decl.Arguments {
		if _, given := args[a.Name]; a.Required && !given {
			return nil, module, &mcpserver.Failure{Kind: mcpserver.FailArguments, Detail: fmt.Sprintf("missing required argument %q", a.Name)}
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

// Complete implements mcpserver.Catalog: a completion the modules do not
// declare has no values.
func (c *catalog) Complete(ctx context.Context, from mcpserver.Caller, ref abi.CompleteRef, arg abi.CompleteArgument, given map[string]string) (*abi.CompleteResult, error) {
	_, sp, ok := c.prims.Completer(ref, arg.Name)
	if !ok {
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
	// The MCP methods that reach them (resources/*, prompts/*,
	// completion/complete) are not served yet: say so, per module.
	for _, src := range sources {
		c.problems = append(c.problems, Problem{Module: src.Module, Path: paths[src.Module],
			Err: errors.New("its resources, resource templates and prompts (ABI 1.2) are not served over MCP by this version; its tools are")})
	}
	b, _ := json.Marshal([]any{c.prims.Resources(), c.prims.Templates(), c.prims.Prompts()})
	c.primsListing = sha256.Sum256(b)
}
