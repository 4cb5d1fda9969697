package wasmrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/guestio"
)

// ABI 1.2 requests beside calls: a read of a resource, a prompt, a
// completion. Each runs in a fresh instance, within lim, exactly as a
// call does; only the request and the decoding of its answer differ.

// Read reads the resource uri: one the manifest declares, or one that
// matched the declared template tmpl with the variables vars (the caller
// matched it).
func (m *Module) Read(ctx context.Context, uri, tmpl string, vars map[string]string, lim Limits) (*abi.ReadResult, error) {
	req := abi.Request{ABI: abi.Version, Method: abi.MethodRead, URI: uri, Template: tmpl, Variables: vars}
	out, err := m.serve(ctx, "read "+uri, req, lim, nil)
	if err != nil {
		return nil, err
	}
	defer guestio.PutOutput(out)
	res, err := abi.DecodeReadResult(out, uri, lim.Result)
	if err != nil {
		return nil, m.answerError("read "+uri, out, err)
	}
	return res, nil
}

// Prompt renders prompt name with args (an object of strings); ev gets
// its logs.
func (m *Module) Prompt(ctx context.Context, name string, args map[string]string, lim Limits, ev abi.Events) (*abi.PromptResult, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("prompt %q of %q: %w", name, m.name, err)
	}
	req := abi.Request{ABI: abi.Version, Method: abi.MethodPrompt, Prompt: name, Arguments: raw}
	out, err := m.serve(ctx, "prompt "+name, req, lim, ev)
	if err != nil {
		return nil, err
	}
	defer guestio.PutOutput(out)
	res, err := abi.DecodePromptResult(out, lim.Result)
	if err != nil {
		return nil, m.answerError("prompt "+name, out, err)
	}
	return res, nil
}

// Complete completes argument arg of ref, the other arguments given being
// given.
func (m *Module) Complete(ctx context.Context, ref abi.CompleteRef, arg abi.CompleteArgument, given map[string]string, lim Limits) (*abi.CompleteResult, error) {
	req := abi.Request{ABI: abi.Version, Method: abi.MethodComplete, Ref: &ref, Argument: &arg, Context: given}
	what := "complete " + arg.Name
	out, err := m.serve(ctx, what, req, lim, nil)
	if err != nil {
		return nil, err
	}
	defer guestio.PutOutput(out)
	res, err := abi.DecodeCompleteResult(out, lim.Result)
	if err != nil {
		return nil, m.answerError(what, out, err)
	}
	return res, nil
}

// serve runs req in a fresh instance and returns its stdout (the caller
// puts it back, guestio.PutOutput); what names the request in errors.
func (m *Module) serve(ctx context.Context, what string, req abi.Request, lim Limits, ev abi.Events) ([]byte, error) {
	if err := lim.validate(); err != nil {
		return nil, fmt.Errorf("%s of %q: %w", what, m.name, err)
	}
	if m.manifest == nil || !m.manifest.Serves() {
		return nil, fmt.Errorf("%s of %q: %w", what, m.name, ErrUnknownTool)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s of %q: %w", what, m.name, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctl := &callCtl{cancel: cancel}
	if !m.acquire(ctl) {
		return nil, fmt.Errorf("%s of %q: %w", what, m.name, ErrClosed)
	}
	defer m.releaseCall(ctl)
	out, gerr := m.r.run(ctx, m, what, b, lim, ev)
	if context.Cause(ctx) == ErrAborted {
		guestio.PutOutput(out)
		return nil, &GuestError{Module: m.name, Tool: what, Kind: KindCanceled, Msg: "the module was aborted", cause: ErrAborted}
	}
	if gerr != nil {
		return nil, gerr
	}
	return out, nil
}

// answerError is the GuestError of an answer that did not decode, or nil.
func (m *Module) answerError(what string, out []byte, err error) error {
	if err == nil {
		return nil
	}
	detail := strings.TrimPrefix(err.Error(), abi.ErrResult.Error()+": ")
	if errors.Is(err, abi.ErrResultTooLarge) {
		return &GuestError{Module: m.name, Tool: what, Kind: KindOutputTooLarge, Msg: detail, cause: err}
	}
	return &GuestError{Module: m.name, Tool: what, Kind: KindBadOutput, Msg: detail + snippet(out), cause: err}
}
