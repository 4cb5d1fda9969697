package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
// error gets the status message errors.go words for it, in place of the
// last one its tool set.
func wireTaskOf(t taskengine.Task) mcpwire.Task {
	msg := t.StatusMessage
	if t.Err != nil && t.Status.Terminal() {
		tool := toolOf(t)
		msg = taskEndText(tool, t.Err)
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

func relatedMeta(id string) mcp.Meta {
	return mcp.Meta{relatedTaskKey: map[string]any{"taskId": id}}
}

func (s *Server) registerTaskMethods() error {
	return errors.Join(
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksGet, s.tasksGet),
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksResult, s.tasksResult),
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksList, s.tasksList),
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksCancel, s.tasksCancel),
		// Answered by the middleware (2026-07-28) or refused there.
		mcp.AddReceivingCustomMethod(s.mcp, methodTasksUpdate, func(context.Context, *mcp.ServerSession, *mcpwire.TaskUpdateParams) (*mcpwire.AckResult, error) {
			return nil, errMethodNotFound("method %q is not available", methodTasksUpdate)
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
		return rq, "", rpcError(jsonrpc.CodeInvalidParams, "%s: missing params.taskId", method)
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
		return nil, engineError(err, id)
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
		return nil, engineError(err, "")
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
		return nil, rpcError(jsonrpc.CodeInvalidParams, "cannot cancel task: already in terminal status '%s'", t.Status)
	}
	if err != nil {
		return nil, engineError(err, id)
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
	t, out, err := s.waitTask(ctx, rq, owner, id)
	if err != nil {
		if rq.sess.ctx.Err() != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil, rpcError(jsonrpc.CodeInternalError, "the server shut down while waiting for task %q", id)
			}
			return nil, rpcError(jsonrpc.CodeInternalError, "session closed while waiting for task %q", id)
		}
		return nil, engineError(err, id)
	}
	s.audit(auditTaskResult, owner, append(taskAttrs(t), slog.String("outcome", string(t.Status)))...)
	var rpc *jsonrpc.Error
	switch v, _ := out.Value.(*mcpwire.CallToolResult); {
	case v != nil:
		r := *v
		r.Meta = relatedMeta(id)
		maps.Copy(r.Meta, v.Meta) // a cache hit's marker
		return &r, nil
	case errors.As(out.Err, &rpc):
		return nil, rpc
	case t.Status == taskengine.StatusCancelled:
		return nil, rpcError(jsonrpc.CodeInternalError, "task %q was cancelled", id)
	case out.Err != nil:
		tool := toolOf(t)
		r := mcpwire.ToolError(failureText(tool, out.Err))
		r.Meta = relatedMeta(id)
		return r, nil
	}
	return nil, rpcError(jsonrpc.CodeInternalError, "task %q ended without a result", id)
}

// waitTask waits for the task to end, delivering its input requests while it
// waits.
func (s *Server) waitTask(ctx context.Context, rq requestor, owner, id string) (taskengine.Task, taskengine.Outcome, error) {
	e := s.cfg.Engine
	sub, err := e.Watch(ctx, owner, id)
	switch {
	case errors.Is(err, taskengine.ErrTooManyWatchers):
		return e.Wait(ctx, owner, id) // no input delivery from this waiter
	case err != nil:
		return taskengine.Task{}, taskengine.Outcome{}, err
	}
	defer sub.Stop()
	dctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	detach := s.attach(id, dctx)
	defer detach()
	for done := false; !done; {
		select {
		case t, ok := <-sub.C():
			if !ok {
				done = true
				break
			}
			if t.Status == taskengine.StatusInputRequired {
				s.deliverInputs(dctx, rq, owner, id, &wg)
			}
			done = t.Status.Terminal()
		case <-ctx.Done():
			return taskengine.Task{}, taskengine.Outcome{}, ctx.Err()
		}
	}
	return e.Wait(ctx, owner, id)
}

// attachment is a tasks/result request waiting on a task: the task's
// progress and input requests go out on its stream (over Streamable HTTP a
// write is routed by the request context it is made with).
type attachment struct{ ctx context.Context }

func (s *Server) attach(id string, ctx context.Context) (detach func()) {
	a := &attachment{ctx}
	s.mu.Lock()
	prev := s.attached[id]
	s.attached[id] = a
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.attached[id] == a {
			if prev != nil && prev.ctx.Err() == nil {
				s.attached[id] = prev
			} else {
				delete(s.attached, id)
			}
		}
	}
}

// deliveryContext is the context to write a task's messages with: that of a
// waiting tasks/result, or def.
func (s *Server) deliveryContext(id string, def context.Context) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.attached[id]; a != nil && a.ctx.Err() == nil {
		return a.ctx
	}
	return def
}

// watchStatus has notifications/tasks/status sent on each change of a
// task's status or status message, for transports that can write raw
// notifications (stdio): the engine hands each change to the session's
// statusRelay, whose one goroutine writes them. No goroutine per task.
func (s *Server) watchStatus(sess *session, owner, id string) {
	r := sess.relay
	if r == nil || !r.reserve(id) {
		return
	}
	// Called under the engine's lock, one change at a time per task: a
	// new status, or a new message within one (a queued task's place, the
	// tool's own status), is what a client polling tasks/get would see
	// change.
	last, lastMsg := taskengine.StatusWorking, ""
	stop, err := s.cfg.Engine.OnChange(owner, id, func(t taskengine.Task) {
		if t.Status == last && t.StatusMessage == lastMsg {
			return
		}
		last, lastMsg = t.Status, t.StatusMessage
		r.put(wireTaskOf(t), t.Status.Terminal())
	})
	r.track(id, stop, err)
}

// statusRelay carries a stdio session's task status changes from the
// engine, which must not block, to the connection, which may: the latest
// unsent status per task, in the order the tasks changed, written by one
// goroutine per session (run). Its maps hold at most one entry per task
// of the session being followed (the engine bounds those).
type statusRelay struct {
	mu      sync.Mutex
	pending map[string]mcpwire.Task // latest unsent status, by task ID
	order   []string                // task IDs in pending, oldest change first
	stops   map[string]func()       // the engine's callbacks to end, by task ID
	ended   bool
	wake    chan struct{} // capacity 1: something is pending
}

func newStatusRelay() *statusRelay {
	return &statusRelay{pending: make(map[string]mcpwire.Task), stops: make(map[string]func()), wake: make(chan struct{}, 1)}
}

// put records t as its task's latest status (terminal: its last). It
// never blocks.
func (r *statusRelay) put(t mcpwire.Task, terminal bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	if _, ok := r.pending[t.TaskID]; !ok {
		r.order = append(r.order, t.TaskID)
	}
	r.pending[t.TaskID] = t
	if terminal {
		delete(r.stops, t.TaskID) // the engine calls no more
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// reserve makes room for a task's callback before it is registered (the
// engine may call it at once, and report the task's end, before
// OnChange returns). It reports false when the relay has ended.
func (r *statusRelay) reserve(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	r.stops[id] = func() {}
	return true
}

// track keeps the end of a task's callback, for when the session ends
// first: unless the task already ended (put removed its place), the
// session is over, or there is no callback (err).
func (r *statusRelay) track(id string, stop func(), err error) {
	r.mu.Lock()
	_, keep := r.stops[id]
	keep = keep && err == nil
	if keep {
		r.stops[id] = stop
	} else if r.stops != nil {
		delete(r.stops, id)
	}
	r.mu.Unlock()
	if !keep && err == nil {
		stop()
	}
}

// run writes the pending statuses with notify until ctx is done or a
// write fails, then ends every callback still registered.
func (r *statusRelay) run(ctx context.Context, notify func(mcpwire.Task) error) {
	defer r.end()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		for {
			t, ok := r.next()
			if !ok {
				break
			}
			if notify(t) != nil {
				return
			}
		}
	}
}

// next takes the oldest pending status.
func (r *statusRelay) next() (mcpwire.Task, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return mcpwire.Task{}, false
	}
	id := r.order[0]
	r.order[0] = ""
	r.order = r.order[1:]
	t := r.pending[id]
	delete(r.pending, id)
	return t, true
}

// end stops the relay: no more puts, every callback ended.
func (r *statusRelay) end() {
	r.mu.Lock()
	r.ended = true
	stops := r.stops
	r.stops, r.pending, r.order = nil, nil, nil
	r.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
