package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/host/internal/taskcodec"
	"github.com/wasmtask/wasmtask/taskengine"
)

const (
	methodListTools = "tools/list"
	methodCallTool  = "tools/call"
)

// Catalog is one generation of the served tools: an immutable value, safe
// for concurrent use. The server asks [Config.Catalog] for the current one
// once per request and dispatches the request through it: the declaration
// a tools/call is checked against and the tool it runs are of one
// generation, the one tools/list rendered if no reload came between.
type Catalog interface {
	// Tools returns the served tools, sorted by name, with their
	// declarations normalised (abi.DecodeManifest). The slice is shared:
	// do not modify it.
	Tools() []abi.Tool
	// Tool returns what the MCP layer knows of the tool called name.
	Tool(name string) (ToolInfo, bool)
	// Call runs tool name with args (raw JSON from the request; parsed and
	// validated by the catalog, once, inside the call's admission and
	// deadline), reporting to ev. A failure is an error wrapping a
	// *[mcperr.Failure], or [ErrUnknownTool] when name is not (or no longer)
	// served. Call returns promptly once ctx is done. The questions a
	// tool passes to ev.Elicit have the flat requestedSchema MCP allows
	// (no references): their answers are checked against it. who is the
	// caller; cacheHit reports that the result came from the result cache.
	Call(ctx context.Context, who Caller, name string, args json.RawMessage, ev abi.Events) (res *abi.Result, cacheHit bool, err error)
}

// ToolInfo is what the MCP layer knows of one served tool: its
// declaration, where it comes from (for the audit log and Config.Visible)
// and which messages its calls can send before their result (the HTTP
// front answers a call that can send none without a stream).
type ToolInfo struct {
	Decl   abi.Tool
	Module string // the module file's name; "" when the catalog cannot tell
	Digest string // the module's digest; "" when the catalog cannot tell
	// Progress and Asks report that the tool's calls may report progress
	// and ask the client questions. Any call may log.
	Progress, Asks bool
}

// Caller is who makes a tool call, as the catalog needs it: the tenant its
// result may be shared within and its quotas counted against, and how a
// task's call learns of its place in the queue.
type Caller struct {
	Tenant string // the owner of the caller's tasks
	User   string // the authenticated tenant's name, "" without authentication
	// Queued is set for a task's call: the call waits for an instance
	// however long the queue (an accepted task is never failed for being
	// busy) and is told how many calls wait ahead of it as that changes,
	// and ahead < 0 once it starts. Nil for a plain call, which may be
	// refused for being busy instead.
	Queued func(ahead int)
}

// visibleTools returns the tools of c that visible admits, each as both
// eras render it and with its task support.
func visibleTools(c Catalog, visible func(tool string) bool) []mcpwire.ListedTool {
	tools := c.Tools()
	out := make([]mcpwire.ListedTool, 0, len(tools))
	for _, t := range tools {
		if visible(t.Name) {
			out = append(out, mcpwire.ListedTool{
				Tool:      mcpwire.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations},
				Execution: mcpwire.ToolExecution{TaskSupport: t.TaskSupport},
			})
		}
	}
	return out
}

// listTools renders the tools of the catalog that visible admits in one
// page (the set is bounded by the tool directory; a cursor from the client
// is ignored).
func listTools(c Catalog, visible func(tool string) bool) *mcpwire.ListToolsResult {
	return &mcpwire.ListToolsResult{Tools: visibleTools(c, visible)}
}

// ToolsChanged tells connected clients that the tool list changed
// (notifications/tools/list_changed, debounced by go-sdk). Call it after a
// catalog swap that changed what tools/list renders.
//
// go-sdk sends list_changed only when its own tool registry changes, and
// has no API to send it otherwise. The catalog is the only tool table; to
// make go-sdk notify, one placeholder registration is replaced. Our
// middleware answers tools/list and tools/call, so the placeholder is never
// listed nor called.
func (s *Server) ToolsChanged() {
	s.mcp.AddTool(&mcp.Tool{Name: listChangedPlaceholder, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("unreachable: tools/call is answered by the middleware")
		})
}

const listChangedPlaceholder = "io.wasmtask.list-changed"

// callTool answers tools/call, plain or task-augmented. The catalog is read
// once: the declaration checked here and the tool run are of one generation.
func (s *Server) callTool(ctx context.Context, rq requestor, p *mcp.CallToolParamsRaw) (mcp.Result, error) {
	if p == nil {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "tools/call: missing params")
	}
	taskMeta, isTask := p.Meta[mcpwire.LiftedTaskKey]
	reqID := p.Meta[mcpwire.RequestIDKey]
	delete(p.Meta, mcpwire.LiftedTaskKey)
	delete(p.Meta, mcpwire.RequestIDKey)
	cat, release, err := s.cfg.Catalog(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	handedOver := false // a created task releases the catalog when its work ends
	defer func() {
		if !handedOver {
			release()
		}
	}()
	info, ok := cat.Tool(p.Name)
	tool := info.Decl
	if !ok || !s.visible(rq.user, cat)(p.Name) {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "unknown tool %q", p.Name)
	}
	if err := s.checkArgs(p.Arguments); err != nil {
		return nil, err
	}
	if err := checkInputResponses(p.InputResponses); err != nil {
		return nil, err
	}
	if rq.headers != nil {
		// The edge checked these (HTTP 400) against the catalog of its
		// moment; this is the call's own, should a reload fall between.
		if err := mcpwire.CheckParamHeaders(tool.HeaderParams, p.Arguments, rq.headers); err != nil {
			return nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: err.Error()}
		}
	}
	if missing := rq.lacks(tool.Requires); len(missing) > 0 {
		return nil, errCapabilitiesNotDeclared(fmt.Sprintf("tool %q", p.Name), missing)
	}
	if rq.modern {
		// The server decides: a tool that may run as a task does so for
		// every request that declares the extension (params.task is not
		// part of this protocol and was dropped above).
		switch tool.TaskSupport {
		case abi.TaskRequired:
			if !rq.optedIn {
				return nil, errTasksNotDeclared(fmt.Sprintf("tool %q runs only as a task: it", p.Name))
			}
			isTask = true
		case abi.TaskOptional:
			isTask = rq.optedIn
		default:
			isTask = false
		}
	} else {
		switch support := tool.TaskSupport; {
		case isTask && support == abi.TaskForbidden:
			return nil, mcperr.MethodNotFound("tool %q does not support task-augmented calls (execution.taskSupport is forbidden)", p.Name)
		case !isTask && support == abi.TaskRequired:
			return nil, mcperr.MethodNotFound("tool %q must be called as a task (execution.taskSupport is required)", p.Name)
		}
	}
	token := p.GetProgressToken()
	if err := s.beginWork(); err != nil {
		return nil, err
	}
	if rq.modern && (isTask && tool.TaskStart == abi.TaskStartBegin || !isTask && rq.canAsk()) {
		// A call that may ask questions (input_required rounds) or
		// become a task only when its tool says so.
		handedOver = true
		return s.callStaged(ctx, rq, cat, release, tool.Name, p, isTask)
	}
	if !isTask {
		defer s.endWork()
		ctx, stop := withDone(ctx, rq.sess.ctx)
		defer stop()
		ev := mcpevents.NewCall(ctx, s.client(rq), token, tool.Name)
		res, err := s.execute(ctx, Caller{Tenant: rq.owner(), User: rq.user}, cat, tool.Name, p.Arguments, ev)
		s.audit(auditCall, rq.owner(), append(toolAttrs(cat, tool.Name), outcomeAttr(res, err))...)
		if res != nil && rq.modern {
			res.ResultType = resultComplete
		}
		return res, err
	}
	var ttl time.Duration
	if !rq.modern {
		// A 2026-07-28 client cannot ask for a TTL: the engine's default.
		if ttl, err = parseTaskParams(taskMeta); err != nil {
			s.endWork()
			return nil, err
		}
	}
	res, err := s.createTask(ctx, rq, cat, release, tool.Name, p.Arguments, token, ttl, reqID)
	handedOver = err == nil
	return res, err
}

// maxInputResponses bounds the answers a 2026-07-28 call may carry: a
// call asks at most the runtime's 32 questions, and a round ends at its
// first unanswered one.
const maxInputResponses = 64

// checkInputResponses refuses a request that carries more answers than a
// call or prompt may ask questions.
func checkInputResponses(r mcp.InputResponseMap) error {
	if len(r) > maxInputResponses {
		return mcperr.RPC(jsonrpc.CodeInvalidParams, "inputResponses has %d answers; a request asks at most %d questions", len(r), maxInputResponses)
	}
	return nil
}

// checkArgs checks what the protocol asks of arguments, without parsing
// them: a bounded size, and absent, null or an object. The catalog parses
// and validates them once, when the call runs.
func (s *Server) checkArgs(raw json.RawMessage) error {
	if len(raw) > s.cfg.MaxArgumentBytes {
		return mcperr.RPC(jsonrpc.CodeInvalidParams, "arguments are %d bytes, more than the limit of %d", len(raw), s.cfg.MaxArgumentBytes)
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" || t[0] == '{' {
		return nil
	}
	return mcperr.RPC(jsonrpc.CodeInvalidParams, "arguments must be a JSON object")
}

// parseTaskParams reads the lifted params.task: an object with an optional
// non-negative integer ttl in milliseconds.
func parseTaskParams(v any) (time.Duration, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return 0, mcperr.RPC(jsonrpc.CodeInvalidParams, "params.task must be an object")
	}
	raw, ok := m["ttl"]
	if !ok || raw == nil {
		return 0, nil
	}
	ms, ok := raw.(float64)
	if !ok || ms < 0 || ms != math.Trunc(ms) {
		return 0, mcperr.RPC(jsonrpc.CodeInvalidParams, "params.task.ttl must be a non-negative integer (milliseconds)")
	}
	if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		ms = float64(math.MaxInt64 / int64(time.Millisecond))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// execute runs one tool call to its CallToolResult, or a JSON-RPC error for
// what tools/call itself answers with one. A failure is logged in full and
// answered with the text mcperr decides.
func (s *Server) execute(ctx context.Context, who Caller, cat Catalog, tool string, args json.RawMessage, ev abi.Events) (*mcpwire.CallToolResult, error) {
	res, hit, err := cat.Call(ctx, who, tool, args, ev)
	switch {
	case errors.Is(err, ErrUnknownTool):
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "unknown tool %q", tool)
	case err != nil:
		s.log.Info("tool call failed", "tool", tool, "err", err)
		return mcpwire.ToolError(mcperr.FailureText(tool, err)), nil
	case res == nil:
		s.log.Error("tool call returned no result", "tool", tool)
		return mcpwire.ToolError(mcperr.FailureText(tool, errors.New("no result"))), nil
	case res.Error != nil:
		// The tool asks for a protocol error (checked by abi.DecodeResult).
		return nil, &jsonrpc.Error{Code: res.Error.Code, Message: res.Error.Message}
	}
	out := mcpwire.RenderResult(res)
	if hit {
		out.Meta = mcp.Meta{cacheMetaKey: map[string]any{"hit": true}}
	}
	return out, nil
}

// cacheMetaKey marks a result the result cache answered (ABI.md).
const cacheMetaKey = "io.wasmtask/cache"

// createTask submits a task-augmented call and answers with CreateTaskResult.
// reqID is the request's JSON-RPC ID where the connection gave it (stdio):
// the connection announces the task when it writes that response.
// The caller counted the task in (beginWork); its work counts it out.
func (s *Server) createTask(ctx context.Context, rq requestor, cat Catalog, release func(), tool string, args json.RawMessage, token any, ttl time.Duration, reqID any) (mcp.Result, error) {
	owner := rq.owner()
	info := &taskcodec.Meta{Tool: tool, Attrs: toolAttrs(cat, tool)}
	work := func(ctx context.Context, run *taskengine.Run) taskengine.Outcome {
		defer s.endWork()
		defer release()
		id := run.ID()
		ev := mcpevents.NewTask(s.client(rq), run, token, tool)
		who := Caller{Tenant: owner, User: rq.user, Queued: func(ahead int) {
			if ahead >= 0 {
				run.SetStatusMessage(fmt.Sprintf("queued: %d calls waiting ahead of this task for an instance", ahead))
			} else {
				run.SetStatusMessage("running")
			}
		}}
		res, err := s.execute(ctx, who, cat, tool, args, ev)
		s.audit(auditTaskFinish, owner, append(append(slices.Clip(info.Attrs), slog.String("task", id)), outcomeAttr(res, err))...)
		if ctx.Err() != nil {
			return taskengine.Outcome{Err: endedBy(ctx)}
		}
		if err != nil {
			return taskengine.Outcome{Err: err}
		}
		if res.IsError {
			run.SetStatusMessage(firstText(res, "the tool reported an error"))
		}
		return taskengine.Outcome{Value: res, Failed: res.IsError, Size: res.Size()}
	}
	t, err := s.cfg.Engine.Submit(ctx, owner, taskengine.SubmitOptions{TTL: ttl, Meta: info}, work)
	if err != nil {
		s.endWork()
		s.audit(auditTaskCreate, owner, append(slices.Clip(info.Attrs), slog.String("outcome", "refused"), slog.String("reason", err.Error()))...)
		return nil, mcperr.Engine(err, "")
	}
	s.audit(auditTaskCreate, owner, append(taskAttrs(t), slog.String("outcome", "created"), slog.Duration("ttl", t.TTL))...)
	if rq.modern {
		// Submit has returned: a tasks/get for this ID resolves.
		return &mcpwire.ModernTaskResult{ModernTask: modernTaskOf(t, nil, resultTask)}, nil
	}
	if c := rq.sess.conn; c != nil {
		if reqID != nil {
			c.ExpectTask(reqID, t.ID) // before the response is written
		}
		if r := rq.sess.relay; r != nil {
			// notifications/tasks/status for each change, in the words
			// of tasks/get.
			r.Follow(s.cfg.Engine, owner, t.ID, wireTaskOf)
		}
	}
	return &mcpwire.CreateTaskResult{Task: wireTaskOf(t)}, nil
}

// endedBy is why the engine ended a task's context, in the engine's terms:
// what the work returns once the task is over is its end, not a tool error
// of its own (the engine may not have recorded the end yet when the work
// returns: either way the task ends the same).
func endedBy(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return taskengine.ErrDeadline
	}
	return context.Cause(ctx)
}

func firstText(r *mcpwire.CallToolResult, def string) string {
	for _, c := range r.Content {
		if t := c.PlainText(); c.Type == "text" && t != "" {
			if len(t) > 200 {
				return t[:200]
			}
			return t
		}
	}
	return def
}

// withDone returns a context that is done when ctx or also is done. It keeps
// ctx's values (go-sdk routes writes over HTTP by them).
func withDone(ctx, also context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(also, cancel)
	return ctx, func() { stop(); cancel() }
}

// visible is Config.Visible for user over cat's tools.
func (s *Server) visible(user string, cat Catalog) func(tool string) bool {
	if s.cfg.Visible == nil {
		return func(string) bool { return true }
	}
	return func(tool string) bool {
		info, _ := cat.Tool(tool)
		return s.cfg.Visible(user, KindTool, tool, info.Module)
	}
}
