package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
)

// This file is the server's one call path: admission, then one run of the
// guest in a fresh instance, for MCP's tools/call (plain or task) and for
// Server.Call alike.

// call runs tool name of catalog c, which the caller holds: it waits for a
// slot of the tool's gate and of the server's instance gate, then runs the
// guest, which parses and validates the arguments inside the slot and the
// call's deadline.
func (s *Server) call(ctx context.Context, c *catalog, name string, args json.RawMessage, ev abi.Events) (*abi.Result, error) {
	t, ok := c.tool(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	if err := t.gate.enter(ctx); err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	defer t.gate.leave()
	if err := s.instances.enter(ctx); err != nil {
		return nil, fmt.Errorf("tool %q: server-wide instance limit: %w", name, err)
	}
	defer s.instances.leave()

	// c is held by the caller, so its modules are open (or aborted by
	// CancelRemoved, which the call reports).
	return t.code.Call(ctx, name, args, t.lim, ev)
}

// failureOf classifies a call's error for the MCP layer, which words it.
func failureOf(err error) error {
	f := &mcpserver.Failure{Kind: mcpserver.FailInternal, Err: err}
	var ge *wasmrt.GuestError
	var ae *wasmrt.ArgumentsError
	var be *busyError
	switch {
	case errors.Is(err, ErrUnknownTool):
		return fmt.Errorf("%w: %w", mcpserver.ErrUnknownTool, err)
	case errors.As(err, &ae):
		f.Kind, f.Detail = mcpserver.FailArguments, ae.Detail
	case errors.As(err, &be):
		f.Kind, f.Detail = mcpserver.FailBusy, be.detail()
	case errors.Is(err, wasmrt.ErrAborted), errors.Is(err, wasmrt.ErrClosed) && !errors.As(err, &ge):
		f.Kind = mcpserver.FailRemoved
	case errors.As(err, &ge):
		f.Detail, f.Stderr = ge.Msg, ge.Stderr
		switch ge.Kind {
		case wasmrt.KindTimeout:
			f.Kind = mcpserver.FailTimeout
		case wasmrt.KindCanceled:
			f.Kind, f.Detail = mcpserver.FailCanceled, ""
			if errors.Is(err, wasmrt.ErrClosed) {
				f.Kind = mcpserver.FailShutdown
			}
		case wasmrt.KindOutOfMemory:
			f.Kind = mcpserver.FailOutOfMemory
		case wasmrt.KindBadOutput:
			f.Kind = mcpserver.FailBadOutput
		case wasmrt.KindOutputTooLarge:
			f.Kind = mcpserver.FailOutputTooLarge
		default:
			f.Kind = mcpserver.FailCrashed
		}
	case errors.Is(err, context.Canceled):
		f.Kind = mcpserver.FailCanceled
	case errors.Is(err, context.DeadlineExceeded):
		f.Kind = mcpserver.FailTimeout
	}
	return f
}

// gate admits at most n concurrent holders and lets at most q more wait.
// It is the admission of one tool, and (another gate) of the server's
// instances.
type gate struct {
	slots   chan struct{}
	waiting atomic.Int64
	queue   int64
}

func newGate(n, q int) *gate { return &gate{slots: make(chan struct{}, n), queue: int64(q)} }

// busyError is a gate's refusal; it wraps ErrBusy.
type busyError struct{ running, queued int }

func (e *busyError) Error() string { return fmt.Sprintf("%v: %s", ErrBusy, e.detail()) }
func (e *busyError) Unwrap() error { return ErrBusy }
func (e *busyError) detail() string {
	return fmt.Sprintf("%d calls running and %d waiting, the most its policy allows; try again later", e.running, e.queued)
}

func (g *gate) enter(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	if g.waiting.Add(1) > g.queue {
		g.waiting.Add(-1)
		return &busyError{running: cap(g.slots), queued: int(g.queue)}
	}
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (g *gate) leave() { <-g.slots }
