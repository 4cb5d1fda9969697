package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// This file renders the task engine for MCP 2026-07-28 with the tasks
// extension (io.modelcontextprotocol/tasks): a stateless wire where every
// request says its protocol version and capabilities in its own _meta, a
// tools/call result that is either a CallToolResult or a flat
// CreateTaskResult, tasks/get with the task's input requests, result or
// error inline, tasks/update for answers, and an idempotent tasks/cancel.
// The engine, the catalog and the call path are the ones 2025-11-25 uses;
// only the words on the wire differ.

const (
	// modernVersion is the first protocol version whose requests carry
	// their own _meta and whose tasks are the extension's.
	modernVersion = "2026-07-28"
	// tasksExtension names the tasks extension in capabilities.
	tasksExtension = "io.modelcontextprotocol/tasks"

	methodTasksUpdate = "tasks/update"
	methodDiscover    = "server/discover"

	// anonymousOwner owns the tasks of modern requests over HTTP without
	// authentication: such a request has no session, and the task ID
	// (130 random bits) is the bearer handle. Only a loopback listener or
	// an operator's explicit --insecure-no-auth serves them.
	anonymousOwner = "anonymous"

	resultComplete      = "complete"
	resultTask          = "task"
	resultInputRequired = "input_required"
)

// era is what a request's own _meta says about the protocol it speaks.
type era struct {
	modern    bool // protocolVersion ≥ 2026-07-28: stateless, the tasks extension's wire
	optedIn   bool // this request declares the tasks extension
	canElicit bool // this request declares the elicitation capability
	canSample bool // … sampling
	canRoots  bool // … roots
}

// eraOf reads a request's _meta. Nothing is inferred from earlier
// requests: a modern request stands alone.
func eraOf(meta map[string]any) era {
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	if v < modernVersion {
		return era{}
	}
	e := era{modern: true}
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	if ext, ok := caps["extensions"].(map[string]any); ok {
		_, e.optedIn = ext[tasksExtension]
	}
	_, e.canElicit = caps["elicitation"]
	_, e.canSample = caps["sampling"]
	_, e.canRoots = caps["roots"]
	return e
}

// errCapabilitiesNotDeclared answers a request of what that needs client
// capabilities its client did not declare (-32021, HTTP 400 on a
// 2026-07-28 request), naming them in data.requiredCapabilities.
func errCapabilitiesNotDeclared(what string, caps []string) error {
	required := make(map[string]any, len(caps))
	for _, c := range caps {
		required[c] = map[string]any{}
	}
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": required})
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: what + " needs the client capabilities " + strings.Join(caps, ", ") + ", which the client did not declare",
		Data:    data,
	}
}

// errTasksNotDeclared answers a modern request that needs the tasks
// extension without declaring it (-32021, HTTP 400).
func errTasksNotDeclared(what string) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: what + " needs the tasks extension (" + tasksExtension + "), which this request does not declare in its client capabilities",
		Data:    data,
	}
}

// modernTaskOf renders a task's fields. The status is the one the
// extension defines: a tool that returned a result with isError ran to
// completion (the engine's 2025-11-25 reading calls that failed).
func modernTaskOf(t taskengine.Task, out *taskengine.Outcome, resultType string) mcpwire.ModernTask {
	w := wireTaskOf(t)
	m := mcpwire.ModernTask{
		ResultType:     resultType,
		TaskID:         w.TaskID,
		Status:         w.Status,
		StatusMessage:  w.StatusMessage,
		CreatedAt:      w.CreatedAt,
		LastUpdatedAt:  w.LastUpdatedAt,
		TTLMs:          w.TTL,
		PollIntervalMs: w.PollInterval,
	}
	if out != nil && t.Status == taskengine.StatusFailed {
		if v, _ := out.Value.(*mcpwire.CallToolResult); v != nil {
			m.Status = string(taskengine.StatusCompleted)
		}
	}
	return m
}

// renderModernTask is tasks/get's answer: the task and the payload of its
// status — the input requests pending, the result, or the error.
func (s *Server) renderModernTask(ctx context.Context, owner string, t taskengine.Task) (*mcpwire.ModernTaskResult, error) {
	e := s.cfg.Engine
	switch {
	case t.Status == taskengine.StatusInputRequired:
		reqs, err := e.PendingInput(ctx, owner, t.ID)
		if err != nil {
			return nil, mcperr.Engine(err, t.ID)
		}
		out := &mcpwire.ModernTaskResult{ModernTask: modernTaskOf(t, nil, resultComplete)}
		if len(reqs) == 0 {
			// Answered since Get: input_required must list what it
			// waits for, and nothing is waited for.
			out.Status = string(taskengine.StatusWorking)
			return out, nil
		}
		out.InputRequests = make(map[string]mcpwire.InputRequest, len(reqs))
		for _, r := range reqs {
			q, _ := r.Payload.(abi.Question)
			out.InputRequests[r.ID] = mcpwire.QuestionInput(q)
		}
		return out, nil
	case !t.Status.Terminal():
		return &mcpwire.ModernTaskResult{ModernTask: modernTaskOf(t, nil, resultComplete)}, nil
	}
	id := t.ID
	t, outcome, err := e.Wait(ctx, owner, id) // terminal: returns at once
	if err != nil {
		return nil, mcperr.Engine(err, id)
	}
	out := &mcpwire.ModernTaskResult{ModernTask: modernTaskOf(t, &outcome, resultComplete)}
	if t.Status == taskengine.StatusCancelled {
		return out, nil
	}
	var rpc *jsonrpc.Error
	switch v, _ := outcome.Value.(*mcpwire.CallToolResult); {
	case v != nil:
		// The CallToolResult the call would have returned, a
		// 2026-07-28 result: with its resultType (clients check it).
		r := *v
		r.ResultType = resultComplete
		out.Result = &r
	case errors.As(outcome.Err, &rpc):
		out.Error = rpc
	default:
		// The engine ended it (run time, TTL, shutdown) or the work
		// failed without a result: an internal error, worded as the
		// status message is.
		out.Status = string(taskengine.StatusFailed)
		out.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: out.StatusMessage}
		if out.Error.Message == "" {
			out.Error.Message = "the task failed"
		}
	}
	return out, nil
}

// modernTaskMethod answers tasks/get, tasks/update and tasks/cancel of a
// modern request that declared the extension.
func (s *Server) modernTaskMethod(ctx context.Context, rq requestor, method string, req mcp.Request) (mcp.Result, error) {
	owner := rq.owner()
	switch method {
	case methodTasksGet:
		p, _ := req.GetParams().(*mcpwire.TaskIDParams)
		_, id, err := taskTarget(ctx, method, p)
		if err != nil {
			return nil, err
		}
		t, err := s.cfg.Engine.Get(ctx, owner, id)
		if err != nil {
			return nil, mcperr.Engine(err, id)
		}
		return s.renderModernTask(ctx, owner, t)
	case methodTasksCancel:
		p, _ := req.GetParams().(*mcpwire.TaskIDParams)
		_, id, err := taskTarget(ctx, method, p)
		if err != nil {
			return nil, err
		}
		t, err := s.cfg.Engine.Cancel(ctx, owner, id)
		switch {
		case errors.Is(err, taskengine.ErrTerminal):
			// The extension's cancel is idempotent: a task already
			// ended is acknowledged as it is.
		case err != nil:
			return nil, mcperr.Engine(err, id)
		default:
			s.audit(auditTaskCancel, owner, append(taskAttrs(t), slog.String("outcome", string(t.Status)))...)
		}
		return &mcpwire.AckResult{ResultType: resultComplete}, nil
	case methodTasksUpdate:
		p, _ := req.GetParams().(*mcpwire.TaskUpdateParams)
		var id string
		if p != nil {
			id = p.TaskID
		}
		if id == "" {
			return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "%s: missing params.taskId", method)
		}
		if err := mcpevents.AnswerInputs(ctx, s.cfg.Engine, owner, id, p.InputResponses); err != nil {
			var bad *mcpevents.RefusedAnswer
			if errors.As(err, &bad) {
				return nil, mcperr.RefusedAnswer(bad)
			}
			return nil, mcperr.Engine(err, id)
		}
		return &mcpwire.AckResult{ResultType: resultComplete}, nil
	}
	return nil, mcperr.MethodNotFound("method %q is not part of protocol version %s", method, modernVersion)
}

// discover adds the tasks extension to server/discover's capabilities.
// The 2025-11-25 capabilities.tasks is never advertised here, nor is
// logging: modern requests get no log notifications.
func discover(res mcp.Result) mcp.Result {
	dr, ok := res.(*mcp.DiscoverResult)
	if !ok || dr.Capabilities == nil {
		return res
	}
	c := *dr.Capabilities
	caps := &c
	caps.Extensions = maps.Clone(caps.Extensions)
	//lint:ignore SA1019 cleared, not used: 2026-07-28 clients get no log notifications.
	caps.Logging = nil
	caps.AddExtension(tasksExtension, map[string]any{})
	out := *dr
	out.Capabilities = caps
	return &out
}

func listModernTools(c Catalog, visible func(string) bool, private bool) *mcpwire.ModernListTools {
	tools := visibleTools(c, visible)
	out := &mcpwire.ModernListTools{ResultType: resultComplete, Tools: make([]mcpwire.Tool, len(tools)), CacheScope: "public"}
	if private {
		out.CacheScope = "private"
	}
	for i, t := range tools {
		out.Tools[i] = t.Tool
	}
	return out
}
