package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/taskengine"
)

const (
	methodInitialize = "initialize"
	methodListTools  = "tools/list"
	methodCallTool   = "tools/call"

	relatedTaskKey = "io.modelcontextprotocol/related-task"
)

// Application-defined JSON-RPC error code for "limit reached" (task store
// full, too many running tasks for this requestor).
const codeLimit = -32000

func rpcError(code int64, format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// methodNotFound is a -32601 error that keeps its message. go-sdk replaces
// the message of any error that errors.Is jsonrpc2's ErrMethodNotFound (a
// code comparison) with `method not found: "tools/call"`; this type is not
// Is-equal to it, but errors.As still finds its code when go-sdk encodes it.
type methodNotFound struct{ msg string }

func (e *methodNotFound) Error() string { return e.msg }

func (e *methodNotFound) As(target any) bool {
	if p, ok := target.(**jsonrpc.Error); ok {
		*p = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: e.msg}
		return true
	}
	return false
}

func errMethodNotFound(format string, args ...any) error {
	return &methodNotFound{msg: fmt.Sprintf(format, args...)}
}

// requestor identifies who sent a request: its session, and the auth user
// when the transport carried one.
type requestor struct {
	sess *session
	ss   *mcp.ServerSession
	user string
}

// owner is the taskengine owner of tasks this requestor creates and sees:
// the auth user when known (tasks then survive a reconnect), else the session.
func (r requestor) owner() string {
	if r.user != "" {
		return "user:" + r.user
	}
	return r.sess.owner
}

type requestorKey struct{}

func requestorFrom(ctx context.Context) (requestor, error) {
	r, ok := ctx.Value(requestorKey{}).(requestor)
	if !ok {
		return requestor{}, rpcError(jsonrpc.CodeInternalError, "internal error: request outside a session")
	}
	return r, nil
}

// middleware is the outermost receiving middleware. It recovers panics (go-sdk
// does not), records who the requestor is in the context (custom method
// handlers get no auth info otherwise), and answers initialize, tools/list
// and tools/call itself.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("panic while handling request", "method", method, "panic", r, "stack", string(debug.Stack()))
				res, err = nil, rpcError(jsonrpc.CodeInternalError, "internal error")
			}
		}()
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || ss == nil {
			return next(ctx, method, req)
		}
		var user string
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			user = ex.TokenInfo.UserID
		}
		rq := requestor{sess: s.sessionFor(ss, user), ss: ss, user: user}
		ctx = context.WithValue(ctx, requestorKey{}, rq)
		switch method {
		case methodInitialize:
			return s.initialize(ctx, method, req, next)
		case methodListTools:
			return s.listTools(), nil
		case methodCallTool:
			creq, ok := req.(*mcp.CallToolRequest)
			if !ok {
				return nil, rpcError(jsonrpc.CodeInternalError, "internal error: unexpected tools/call request type %T", req)
			}
			return s.callTool(ctx, rq, creq.Params)
		}
		return next(ctx, method, req)
	}
}

// initializeResult is go-sdk's InitializeResult with the tasks capability.
type initializeResult struct {
	mcp.ResultBase
	Capabilities    map[string]any      `json:"capabilities"`
	Instructions    string              `json:"instructions,omitempty"`
	ProtocolVersion string              `json:"protocolVersion"`
	ServerInfo      *mcp.Implementation `json:"serverInfo"`
}

var tasksCapability = map[string]any{
	"list":     map[string]any{},
	"cancel":   map[string]any{},
	"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
}

func (s *Server) initialize(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	if err != nil {
		return nil, err
	}
	ir, ok := res.(*mcp.InitializeResult)
	if !ok {
		return res, nil
	}
	caps := map[string]any{}
	if b, err := json.Marshal(ir.Capabilities); err == nil {
		_ = json.Unmarshal(b, &caps)
	}
	caps["tasks"] = tasksCapability
	out := &initializeResult{
		Capabilities:    caps,
		Instructions:    ir.Instructions,
		ProtocolVersion: ir.ProtocolVersion,
		ServerInfo:      ir.ServerInfo,
	}
	out.Meta = ir.Meta
	return out, nil
}

// wireTool is an MCP Tool with execution.taskSupport, which go-sdk's Tool
// type lacks.
type wireTool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *abi.Annotations `json:"annotations,omitempty"`
	Execution    toolExecution    `json:"execution"`
}

type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

type listToolsResult struct {
	mcp.ResultBase
	Tools []wireTool `json:"tools"`
}

// listTools returns every tool in one page (the set is bounded by the
// plugin directory; a cursor from the client is ignored).
func (s *Server) listTools() *listToolsResult {
	set := s.tools.Load()
	out := &listToolsResult{Tools: make([]wireTool, 0, len(set.sorted))}
	for _, e := range set.sorted {
		t := e.tool
		out.Tools = append(out.Tools, wireTool{
			Name:         t.Name,
			Title:        t.Title,
			Description:  t.Description,
			InputSchema:  t.InputSchema,
			OutputSchema: t.OutputSchema,
			Annotations:  t.Annotations,
			Execution:    toolExecution{TaskSupport: t.TaskSupport},
		})
	}
	return out
}

// callToolResult is an MCP CallToolResult.
type callToolResult struct {
	mcp.ResultBase
	Content           []abi.Content   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

func toolError(msg string) *callToolResult {
	return &callToolResult{Content: []abi.Content{{Type: "text", Text: msg}}, IsError: true}
}

func renderResult(r *abi.Result) *callToolResult {
	c := r.Content
	if c == nil {
		c = []abi.Content{}
	}
	return &callToolResult{Content: c, StructuredContent: r.StructuredContent, IsError: r.IsError}
}

// callTool answers tools/call, plain or task-augmented.
func (s *Server) callTool(ctx context.Context, rq requestor, p *mcp.CallToolParamsRaw) (mcp.Result, error) {
	if p == nil {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "tools/call: missing params")
	}
	taskMeta, isTask := p.Meta[liftedTaskKey]
	delete(p.Meta, liftedTaskKey)
	e, ok := s.tools.Load().byName[p.Name]
	if !ok {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "unknown tool %q", p.Name)
	}
	args, err := s.checkArgs(p.Arguments)
	if err != nil {
		return nil, err
	}
	switch support := e.tool.TaskSupport; {
	case isTask && support == abi.TaskForbidden:
		return nil, errMethodNotFound("tool %q does not support task-augmented calls (execution.taskSupport is forbidden)", p.Name)
	case !isTask && support == abi.TaskRequired:
		return nil, errMethodNotFound("tool %q must be called as a task (execution.taskSupport is required)", p.Name)
	}
	token := p.GetProgressToken()
	if !isTask {
		ctx, stop := withDone(ctx, rq.sess.ctx)
		defer stop()
		ev := &callEvents{s: s, ss: rq.ss, ctx: ctx, token: token, tool: e.tool.Name}
		res, err := s.execute(ctx, e, args, ev)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	ttl, err := parseTaskParams(taskMeta)
	if err != nil {
		return nil, err
	}
	return s.createTask(rq, e, args, token, ttl)
}

// checkArgs checks that arguments are absent or a JSON object of bounded size.
func (s *Server) checkArgs(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) > s.cfg.MaxArgumentBytes {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "arguments are %d bytes, more than the limit of %d", len(raw), s.cfg.MaxArgumentBytes)
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "arguments must be a JSON object")
	}
	return t, nil
}

// parseTaskParams reads the lifted params.task: an object with an optional
// non-negative integer ttl in milliseconds.
func parseTaskParams(v any) (time.Duration, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return 0, rpcError(jsonrpc.CodeInvalidParams, "params.task must be an object")
	}
	raw, ok := m["ttl"]
	if !ok || raw == nil {
		return 0, nil
	}
	ms, ok := raw.(float64)
	if !ok || ms < 0 || ms != math.Trunc(ms) {
		return 0, rpcError(jsonrpc.CodeInvalidParams, "params.task.ttl must be a non-negative integer (milliseconds)")
	}
	if ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		ms = float64(math.MaxInt64 / int64(time.Millisecond))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// execute runs one tool call to its CallToolResult, or a JSON-RPC error for
// what tools/call itself answers with one.
func (s *Server) execute(ctx context.Context, e *toolEntry, args json.RawMessage, ev Events) (*callToolResult, error) {
	if e.schema != nil {
		var v any
		if err := json.Unmarshal(args, &v); err != nil {
			return nil, rpcError(jsonrpc.CodeInvalidParams, "arguments are not valid JSON: %v", err)
		}
		if err := e.schema.Validate(v); err != nil {
			return toolError(fmt.Sprintf("invalid arguments for tool %q: %v", e.tool.Name, err)), nil
		}
	}
	res, err := s.cfg.Tools.Call(ctx, e.tool.Name, args, ev)
	switch {
	case errors.Is(err, ErrUnknownTool):
		return nil, rpcError(jsonrpc.CodeInvalidParams, "unknown tool %q", e.tool.Name)
	case err != nil:
		return toolError(err.Error()), nil
	case res == nil:
		return toolError(fmt.Sprintf("tool %q returned no result", e.tool.Name)), nil
	}
	return renderResult(res), nil
}

// createTask submits a task-augmented call and answers with CreateTaskResult.
func (s *Server) createTask(rq requestor, e *toolEntry, args json.RawMessage, token any, ttl time.Duration) (mcp.Result, error) {
	owner := rq.owner()
	work := func(ctx context.Context, run *taskengine.Run) taskengine.Outcome {
		id := run.ID()
		ev := &taskEvents{s: s, rq: rq, run: run, owner: owner, id: id, token: token, tool: e.tool.Name}
		res, err := s.execute(ctx, e, args, ev)
		if err != nil {
			s.log.Info("task finished", "task", id, "tool", e.tool.Name, "owner", owner, "error", err)
			return taskengine.Outcome{Err: err}
		}
		b, _ := json.Marshal(res)
		if res.IsError {
			run.SetStatusMessage(firstText(res, "the tool reported an error"))
		}
		s.log.Info("task finished", "task", id, "tool", e.tool.Name, "owner", owner, "isError", res.IsError)
		return taskengine.Outcome{Value: res, Failed: res.IsError, Size: int64(len(b))}
	}
	t, err := s.cfg.Engine.Submit(owner, taskengine.SubmitOptions{TTL: ttl, Meta: e.tool.Name}, work)
	if err != nil {
		s.log.Warn("task refused", "tool", e.tool.Name, "owner", owner, "err", err)
		return nil, engineError(err, "")
	}
	s.log.Info("task created", "task", t.ID, "tool", e.tool.Name, "owner", owner, "ttl", t.TTL)
	if rq.sess.notify != nil {
		s.watchStatus(rq.sess, owner, t.ID)
	}
	return &createTaskResult{Task: wireTaskOf(t)}, nil
}

func firstText(r *callToolResult, def string) string {
	for _, c := range r.Content {
		if c.Type == "text" && c.Text != "" {
			if len(c.Text) > 200 {
				return c.Text[:200]
			}
			return c.Text
		}
	}
	return def
}

// engineError maps a taskengine error to a JSON-RPC error.
func engineError(err error, id string) error {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return rpc
	case errors.Is(err, taskengine.ErrNotFound):
		return rpcError(jsonrpc.CodeInvalidParams, "task not found: %q (unknown, expired, or not yours)", id)
	case errors.Is(err, taskengine.ErrBadCursor):
		return rpcError(jsonrpc.CodeInvalidParams, "invalid cursor")
	case errors.Is(err, taskengine.ErrOwnerLimit):
		return rpcError(codeLimit, "too many running tasks for this requestor; wait for one to finish or cancel one")
	case errors.Is(err, taskengine.ErrFull):
		return rpcError(codeLimit, "the server's task store is full of running tasks; try again later")
	case errors.Is(err, taskengine.ErrClosed):
		return rpcError(jsonrpc.CodeInternalError, "server shutting down")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return rpcError(jsonrpc.CodeInternalError, "internal error: %v", err)
}

// withDone returns a context that is done when ctx or also is done. It keeps
// ctx's values (go-sdk routes writes over HTTP by them).
func withDone(ctx, also context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(also, cancel)
	return ctx, func() { stop(); cancel() }
}
