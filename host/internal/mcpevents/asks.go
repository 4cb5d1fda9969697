//lint:file-ignore SA1019 go-sdk deprecates sampling and roots for protocol 2026-07-28 (SEP-2577); 2025-11-25 clients, which this server speaks, still answer them.

package mcpevents

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
)

// A call may ask its client for a message from its model
// (sampling/createMessage) and for its roots (roots/list), within the
// session's bounds on questions (the limiter of elicitation): a plain
// 2025-11-25 call on its request's stream, a task through its input
// requests, a 2026-07-28 plain request in its input rounds (Round).

var (
	_ abi.Asker = (*Call)(nil)
	_ abi.Asker = (*Task)(nil)
	_ abi.Asker = (*Round)(nil)
)

// errCannotAsk is what Sample and Roots return when the client cannot be
// asked: errors.Is(err, errors.ErrUnsupported) holds.
func errCannotAsk(what string) error {
	return fmt.Errorf("%w (%s)", errElicitUnsupported, what)
}

// Sample sends req to the client as sampling/createMessage (an input
// key names nothing on a 2025-11-25 stream).
func (e *Call) Sample(ctx context.Context, _ string, req json.RawMessage) (json.RawMessage, error) {
	if e.c.Modern || !e.c.CanSample {
		return nil, errCannotAsk("the client did not declare sampling")
	}
	params, err := sampleParams(req)
	if err != nil {
		return nil, err
	}
	return e.ask(ctx, "sampling", func(ctx context.Context) (any, error) { return e.c.Session.CreateMessage(ctx, params) })
}

// Roots asks the client for roots/list.
func (e *Call) Roots(ctx context.Context, _ string) (json.RawMessage, error) {
	if e.c.Modern {
		return nil, errCannotAsk("a 2026-07-28 request cannot be asked back")
	}
	return e.ask(ctx, "roots", func(ctx context.Context) (any, error) { return e.c.Session.ListRoots(ctx, &mcp.ListRootsParams{}) })
}

// ask sends one request to the client in the context of the call's
// request (go-sdk routes it by its values over HTTP), also ended when the
// guest's ctx is, and returns the result as JSON.
func (e *Call) ask(ctx context.Context, what string, send func(context.Context) (any, error)) (json.RawMessage, error) {
	if err := e.c.Limits.begin(time.Now()); err != nil {
		e.c.Log.Info("request to the client refused", "what", what, "tool", e.tool, "session", e.c.SessionID, "err", err)
		return nil, err
	}
	defer e.c.Limits.end()
	rctx, cancel := context.WithCancel(e.ctx)
	stop := context.AfterFunc(ctx, cancel)
	defer func() { stop(); cancel() }()
	res, err := send(rctx)
	if err != nil {
		e.c.Log.Info("request to the client failed", "what", what, "tool", e.tool, "err", err)
		return nil, errCannotAsk(what + " failed")
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, errCannotAsk(what + " failed")
	}
	return checkResult(what, b)
}

// checkResult checks a 2025-11-25 client's result of a sampling or roots
// request as a 2026-07-28 answer is checked (mcpwire.CheckSampleAnswer,
// CheckRootsAnswer): one bound on what reaches a tool, whatever the era.
func checkResult(what string, b json.RawMessage) (json.RawMessage, error) {
	check := mcpwire.CheckRootsAnswer
	if what == "sampling" {
		check = mcpwire.CheckSampleAnswer
	}
	out, err := check(b)
	if err != nil {
		return nil, errCannotAsk(what + " answered with a result the tool cannot take: " + err.Error())
	}
	return out, nil
}

// Sample and Roots of a task are input requests of the task, as its
// elicitations are: a 2025-11-25 tasks/result delivers them
// (sampling/createMessage, roots/list with the related-task _meta), a
// 2026-07-28 client answers them in tasks/update.
func (e *Task) Sample(ctx context.Context, _ string, req json.RawMessage) (json.RawMessage, error) {
	if !e.c.CanSample {
		return nil, errCannotAsk("the client did not declare sampling")
	}
	params, err := cleanSample(req)
	if err != nil {
		return nil, err
	}
	return e.ask(ctx, "sampling", abi.Question{Method: abi.MethodSample, Params: params})
}

func (e *Task) Roots(ctx context.Context, _ string) (json.RawMessage, error) {
	if !e.c.CanRoots {
		return nil, errCannotAsk("the client did not declare roots")
	}
	return e.ask(ctx, "roots", abi.Question{Method: abi.MethodRoots})
}

func (e *Task) ask(ctx context.Context, what string, q abi.Question) (json.RawMessage, error) {
	if err := e.c.Limits.begin(time.Now()); err != nil {
		e.c.Log.Info("request to the client refused", "what", what, "tool", e.tool, "session", e.c.SessionID, "err", err)
		return nil, err
	}
	defer e.c.Limits.end()
	a, err := e.request(ctx, q)
	if err != nil {
		return nil, err
	}
	if a.Err != nil {
		return nil, errCannotAsk(what + " failed")
	}
	return a.Result, nil
}

// cleanSample is a tool's sampling request as the client may get it:
// checked (sampleParams) and encoded anew, so nothing of the tool's but
// what MCP defines (no _meta, no unknown members) reaches the client.
func cleanSample(req json.RawMessage) (json.RawMessage, error) {
	params, err := sampleParams(req)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", abi.ErrBadClientRequest, err)
	}
	return b, nil
}

// sampleParams reads a tool's sampling request as go-sdk's params: at
// least one message and a positive maxTokens, no _meta of the tool's.
func sampleParams(req json.RawMessage) (*mcp.CreateMessageParams, error) {
	var params mcp.CreateMessageParams
	if err := json.Unmarshal(req, &params); err != nil {
		return nil, fmt.Errorf("%w: %v", abi.ErrBadClientRequest, err)
	}
	if len(params.Messages) == 0 || params.MaxTokens <= 0 {
		return nil, fmt.Errorf("%w: sampling needs messages and a positive maxTokens", abi.ErrBadClientRequest)
	}
	params.Meta = nil // the request's _meta is the host's to set
	return &params, nil
}
