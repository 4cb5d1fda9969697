package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Task methods of MCP 2025-11-25.
const (
	methodTasksGet    = "tasks/get"
	methodTasksResult = "tasks/result"
	methodTasksList   = "tasks/list"
	methodTasksCancel = "tasks/cancel"
	methodTaskStatus  = "notifications/tasks/status"
)

// listPageSize is the tasks/list page size.
const listPageSize = 50

// wireTaskOf renders a task. A task the engine or its work ended with an
// error gets the status message mcperr words for it, in place of the
// last one its tool set.
func wireTaskOf(t taskengine.Task) mcpwire.Task {
	msg := t.StatusMessage
	if t.Err != nil && t.Status.Terminal() {
		tool := toolOf(t)
		msg = mcperr.TaskEndText(tool, t.Err)
	}
	w := mcpwire.Task{
		TaskID:        t.ID,
		Status:        string(t.Status),
		StatusMessage: msg,
		CreatedAt:     t.CreatedAt.UTC().Format(mcpwire.TimeFormat),
		LastUpdatedAt: t.LastUpdatedAt.UTC().Format(mcpwire.TimeFormat),
		PollInterval:  t.PollInterval.Milliseconds(),
	}
	if t.TTL > 0 {
		ms := t.TTL.Milliseconds()
		w.TTL = &ms
	}
	return w
}

func (s *Server) registerTaskMethods() error {
	return errors.Join(
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksGet, s.tasksGet),
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksResult, s.tasksResult),
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksList, s.tasksList),
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksCancel, s.tasksCancel),
		// Answered by the middleware (2026-07-28) or refused there.
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksUpdate, func(context.Context, *mcp.ServerSession, *mcpwire.TaskUpdateParams) (*mcpwire.AckResult, error) {
			return nil, mcperr.MethodNotFound("method %q is not available", methodTasksUpdate)
		}),
	)
}

// taskTarget checks a task request's params (go-sdk passes nil when the
// client omitted them) and returns the requestor and task ID.
func taskTarget(ctx context.Context, method string, p *mcpwire.TaskIDParams) (requestor, string, error) {
	rq, err := requestorFrom(ctx)
	if err != nil {
		return rq, "", err
	}
	if p == nil || p.TaskID == "" {
		return rq, "", mcperr.RPC(jsonrpc.CodeInvalidParams, "%s: missing params.taskId", method)
	}
	return rq, p.TaskID, nil
}

func (s *Server) tasksGet(ctx context.Context, _ *mcp.ServerSession, p *mcpwire.TaskIDParams) (*mcpwire.TaskResult, error) {
	rq, id, err := taskTarget(ctx, methodTasksGet, p)
	if err != nil {
		return nil, err
	}
	t, err := s.cfg.Engine.Get(ctx, rq.owner(), id)
	if err != nil {
		return nil, mcperr.Engine(err, id)
	}
	return &mcpwire.TaskResult{Task: wireTaskOf(t)}, nil
}

func (s *Server) tasksList(ctx context.Context, _ *mcp.ServerSession, p *mcpwire.ListTasksParams) (*mcpwire.ListTasksResult, error) {
	rq, err := requestorFrom(ctx)
	if err != nil {
		return nil, err
	}
	var cursor string
	if p != nil {
		cursor = p.Cursor
	}
	ts, next, err := s.cfg.Engine.List(ctx, rq.owner(), cursor, listPageSize)
	if err != nil {
		return nil, mcperr.Engine(err, "")
	}
	out := &mcpwire.ListTasksResult{Tasks: make([]mcpwire.Task, len(ts)), NextCursor: next}
	for i, t := range ts {
		out.Tasks[i] = wireTaskOf(t)
	}
	return out, nil
}

func (s *Server) tasksCancel(ctx context.Context, _ *mcp.ServerSession, p *mcpwire.TaskIDParams) (*mcpwire.TaskResult, error) {
	rq, id, err := taskTarget(ctx, methodTasksCancel, p)
	if err != nil {
		return nil, err
	}
	t, err := s.cfg.Engine.Cancel(ctx, rq.owner(), id)
	if errors.Is(err, taskengine.ErrTerminal) {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "cannot cancel task: already in terminal status '%s'", t.Status)
	}
	if err != nil {
		return nil, mcperr.Engine(err, id)
	}
	s.audit(auditTaskCancel, rq.owner(), append(taskAttrs(t), slog.String("outcome", string(t.Status)))...)
	return &mcpwire.TaskResult{Task: wireTaskOf(t)}, nil
}

// tasksResult blocks until the task is terminal and returns what tools/call
// would have returned. While it waits it delivers the task's input requests
// (elicitations) to the client, on this request's stream.
func (s *Server) tasksResult(ctx context.Context, _ *mcp.ServerSession, p *mcpwire.TaskIDParams) (*mcpwire.CallToolResult, error) {
	rq, id, err := taskTarget(ctx, methodTasksResult, p)
	if err != nil {
		return nil, err
	}
	owner := rq.owner()
	s.beginWait()
	defer s.endWait()
	ctx, stop := withDone(ctx, rq.sess.ctx)
	defer stop()
	t, out, err := s.waiters.Wait(ctx, s.cfg.Engine, rq.ss, rq.can(), owner, id)
	if err != nil {
		if rq.sess.ctx.Err() != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil, mcperr.RPC(jsonrpc.CodeInternalError, "the server shut down while waiting for task %q", id)
			}
			return nil, mcperr.RPC(jsonrpc.CodeInternalError, "session closed while waiting for task %q", id)
		}
		return nil, mcperr.Engine(err, id)
	}
	s.audit(auditTaskResult, owner, append(taskAttrs(t), slog.String("outcome", string(t.Status)))...)
	var rpc *jsonrpc.Error
	switch v, _ := out.Value.(*mcpwire.CallToolResult); {
	case v != nil:
		r := *v
		r.Meta = mcpwire.RelatedTask(id)
		maps.Copy(r.Meta, v.Meta) // a cache hit's marker
		return &r, nil
	case errors.As(out.Err, &rpc):
		return nil, rpc
	case t.Status == taskengine.StatusCancelled:
		return nil, mcperr.RPC(jsonrpc.CodeInternalError, "task %q was cancelled", id)
	case out.Err != nil:
		tool := toolOf(t)
		r := mcpwire.ToolError(mcperr.FailureText(tool, out.Err))
		r.Meta = mcpwire.RelatedTask(id)
		return r, nil
	}
	return nil, mcperr.RPC(jsonrpc.CodeInternalError, "task %q ended without a result", id)
}
