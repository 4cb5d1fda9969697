package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
)

// This file is the server's one call path: admission, then one run of the
// guest in a fresh instance, for MCP's tools/call (plain or task) and for
// Server.Call alike.

// call runs tool name of catalog c, which the caller holds, for from: the
// admission controller admits it (tool, module, server slots and memory
// budget, see admission), then the guest runs, parsing and validating the
// arguments inside the slot and the call's deadline. hit reports that the
// result came from the result cache. The zero Caller is the library's own
// direct call: one implicit tenant, without a share.
func (s *Server) call(ctx context.Context, c *catalog, from mcpserver.Caller, name string, args json.RawMessage, ev abi.Events) (res *abi.Result, hit bool, err error) {
	t, ok := c.tool(name)
	if !ok {
		return nil, false, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	start := time.Now()
	defer func() { s.metrics.observeCall(name, from.User, res, err, start) }()
	run := func(ctx context.Context, ev abi.Events) (res *abi.Result, err error) {
		err = s.admit(ctx, t.slot, t.need, from, fmt.Sprintf("tool %q", name), func(ctx context.Context) (err error) {
			// c is held by the caller, so its modules are open (or aborted
			// by CancelRemoved, which the call reports).
			res, err = t.code.Call(ctx, name, args, t.lim, ev)
			return err
		})
		return res, err
	}
	if t.cache.ttl > 0 {
		if res, hit, ok, err := s.cachedCall(ctx, t, from.Tenant, name, args, ev, run); ok {
			return res, hit, err
		}
	}
	res, err = run(ctx, ev)
	return res, false, err
}

// admit runs fn once the admission controller admits a request of
// slot, reserving need bytes, for from (with its tenant's share); what
// names the request in the error of a refusal. Every request that runs a
// guest (a call, a read, a prompt, a completion) enters through it.
func (s *Server) admit(ctx context.Context, slot *admission.Tool, need uint64, from mcpserver.Caller, what string, fn func(context.Context) error) error {
	who := admission.Caller{Tenant: from.Tenant, Queued: from.Queued}
	if from.User != "" {
		who.Slots, who.Memory, who.Strict = s.tenantShare(from.User)
	}
	entered := time.Now()
	err := s.adm.EnterAs(ctx, slot, need, who)
	s.metrics.wait.Observe(time.Since(entered).Seconds())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer s.adm.LeaveAs(slot, need, who.Tenant)
	return fn(ctx)
}

// failureOf classifies a call's error for the MCP layer, which words it.
func failureOf(err error) error {
	f := &mcperr.Failure{Kind: mcperr.FailInternal, Err: err}
	var ge *wasmrt.GuestError
	var ae *wasmrt.ArgumentsError
	var be *admission.BusyError
	var me *admission.BudgetError
	switch {
	case errors.Is(err, ErrUnknownTool):
		return fmt.Errorf("%w: %w", mcpserver.ErrUnknownTool, err)
	case errors.As(err, &ae):
		f.Kind, f.Detail = mcperr.FailArguments, ae.Detail
	case errors.As(err, &be):
		f.Kind, f.Detail = mcperr.FailBusy, be.Detail()
	case errors.As(err, &me):
		f.Kind, f.Detail = mcperr.FailOverBudget, me.Detail()
	case errors.Is(err, wasmrt.ErrAborted), errors.Is(err, wasmrt.ErrClosed) && !errors.As(err, &ge):
		f.Kind = mcperr.FailRemoved
	case errors.As(err, &ge):
		f.Detail, f.Stderr = ge.Msg, ge.Stderr
		switch ge.Kind {
		case wasmrt.KindTimeout:
			f.Kind = mcperr.FailTimeout
		case wasmrt.KindCanceled:
			f.Kind, f.Detail = mcperr.FailCanceled, ""
			if errors.Is(err, wasmrt.ErrClosed) {
				f.Kind = mcperr.FailShutdown
			}
		case wasmrt.KindOutOfMemory:
			f.Kind = mcperr.FailOutOfMemory
		case wasmrt.KindBadOutput:
			f.Kind = mcperr.FailBadOutput
		case wasmrt.KindOutputTooLarge:
			f.Kind = mcperr.FailOutputTooLarge
		default:
			f.Kind = mcperr.FailCrashed
		}
	case errors.Is(err, context.Canceled):
		f.Kind = mcperr.FailCanceled
	case errors.Is(err, context.DeadlineExceeded):
		f.Kind = mcperr.FailTimeout
	}
	return f
}
