//lint:file-ignore SA1019 go-sdk deprecates logging for protocol 2026-07-28 (SEP-2577); 2025-11-25 clients, which this server speaks, still receive a tool's log as notifications/message.

package mcpevents

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Client is where one request's tool events go: the client's session and
// what it declared, as the MCP room knows them when the request arrives.
type Client struct {
	// Session is go-sdk's session of the request: progress, logs and
	// 2025-11-25 questions are sent through it.
	Session *mcp.ServerSession
	// SessionID names the session in the server log.
	SessionID string
	// SessionContext ends with the session: a task's messages are written
	// with it when no tasks/result waits for the task.
	SessionContext context.Context
	// Modern marks a 2026-07-28 request: its client is sent nothing but
	// the answer (a tool's log goes to the server log, a task's progress
	// to its status message, and a plain call cannot ask).
	Modern bool
	// CanElicit reports that the client declared the elicitation
	// capability (in the request's _meta, or at initialize: a session's
	// calls run once it is initialized).
	CanElicit bool
	// CanSample and CanRoots report that the client declared the
	// sampling and the roots capability (as CanElicit).
	CanSample bool
	CanRoots  bool
	// Limits bounds the session's questions, whichever call or task asks.
	Limits *Limiter
	// Waiters are the server's waiting tasks/result requests: a task's
	// messages go out on a waiter's stream.
	Waiters *Waiters
	// Log is the server log.
	Log *slog.Logger
}

// errElicitUnsupported is what Events.Elicit returns when the client did not
// declare the elicitation capability. errors.Is(err, errors.ErrUnsupported)
// holds, as abi.Events asks.
var errElicitUnsupported error = elicitUnsupported{}

type elicitUnsupported struct{}

func (elicitUnsupported) Error() string        { return "the client cannot answer input requests" }
func (elicitUnsupported) Is(target error) bool { return target == errors.ErrUnsupported }

// logLevels maps abi log levels to MCP logging levels.
var logLevels = map[int32]mcp.LoggingLevel{
	abi.LogDebug:   "debug",
	abi.LogInfo:    "info",
	abi.LogWarning: "warning",
	abi.LogError:   "error",
}

func logLevel(l int32) mcp.LoggingLevel {
	if lv, ok := logLevels[l]; ok {
		return lv
	}
	return "info"
}

// Call is the abi.Events of a plain tools/call: everything goes out in
// the context of the request (on its stream over Streamable HTTP).
type Call struct {
	c     Client
	ctx   context.Context
	token any
	tool  string
}

// NewCall returns the events of a plain call of tool made by a request
// whose context is ctx and whose progress token is token (nil: none).
func NewCall(ctx context.Context, c Client, token any, tool string) *Call {
	return &Call{c: c, ctx: ctx, token: token, tool: tool}
}

func (e *Call) Progress(p, total float64, msg string) {
	if e.token == nil {
		return
	}
	_ = e.c.Session.NotifyProgress(e.ctx, &mcp.ProgressNotificationParams{ProgressToken: e.token, Progress: p, Total: total, Message: msg})
}

func (e *Call) Status(string) {}

func (e *Call) Log(level int32, msg string) {
	if e.c.Modern {
		// 2026-07-28 has no log notifications (SEP-2577): the server log.
		e.c.Log.Info("tool log", "tool", e.tool, "level", logLevel(level), "msg", msg)
		return
	}
	_ = e.c.Session.Log(e.ctx, &mcp.LoggingMessageParams{Level: logLevel(level), Logger: e.tool, Data: msg})
}

func (e *Call) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	// A 2026-07-28 server sends the client no requests of its own: a
	// plain call cannot ask (a task can, through tasks/get).
	if e.c.Modern || !e.c.CanElicit {
		return abi.ElicitReply{}, errElicitUnsupported
	}
	if err := e.c.Limits.begin(time.Now()); err != nil {
		e.c.Log.Info("input request refused", "tool", e.tool, "session", e.c.SessionID, "err", err)
		return abi.ElicitReply{}, err
	}
	defer e.c.Limits.end()
	// The request's context (go-sdk routes writes over HTTP by its
	// values), also done when the guest's question is.
	rctx, cancel := context.WithCancel(e.ctx)
	stop := context.AfterFunc(ctx, cancel)
	defer func() { stop(); cancel() }()
	a := elicit(rctx, e.c.Session, "", req)
	if a.Err != nil {
		e.c.Log.Info("input request failed", "tool", e.tool, "err", a.Err)
	}
	return a.Reply, a.Err
}

// BeginTask: a plain call stays one.
func (e *Call) BeginTask() bool { return false }

// Task is the abi.Events of a task's work. Progress keeps the original
// request's progress token and carries the related-task _meta; input
// requests move the task to input_required and are delivered by
// tasks/result (Waiters.Wait).
type Task struct {
	c     Client
	run   *taskengine.Run
	token any
	tool  string
}

// NewTask returns the events of the work of task run, a call of tool by a
// request whose progress token is token (nil: none).
func NewTask(c Client, run *taskengine.Run, token any, tool string) *Task {
	return &Task{c: c, run: run, token: token, tool: tool}
}

func (e *Task) Progress(p, total float64, msg string) {
	if e.c.Modern {
		// No notifications from a 2026-07-28 task: tasks/get shows it.
		e.run.SetProgress(p, total, progressText(p, total, msg))
		return
	}
	e.run.SetProgress(p, total, msg)
	if e.token == nil {
		return
	}
	id := e.run.ID()
	ctx := e.c.Waiters.context(id, e.c.SessionContext)
	_ = e.c.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		Meta:          mcpwire.RelatedTask(id),
		ProgressToken: e.token,
		Progress:      p,
		Total:         total,
		Message:       msg,
	})
}

func (e *Task) Status(msg string) { e.run.SetStatusMessage(msg) }

func (e *Task) Log(level int32, msg string) {
	id := e.run.ID()
	if e.c.Modern {
		e.c.Log.Info("tool log", "tool", e.tool, "task", id, "level", logLevel(level), "msg", msg)
		return
	}
	ctx := e.c.Waiters.context(id, e.c.SessionContext)
	_ = e.c.Session.Log(ctx, &mcp.LoggingMessageParams{Meta: mcpwire.RelatedTask(id), Level: logLevel(level), Logger: e.tool, Data: msg})
}

func (e *Task) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	if !e.c.CanElicit {
		return abi.ElicitReply{}, errElicitUnsupported
	}
	if err := e.c.Limits.begin(time.Now()); err != nil {
		e.c.Log.Info("input request refused", "tool", e.tool, "session", e.c.SessionID, "err", err)
		return abi.ElicitReply{}, err
	}
	defer e.c.Limits.end()
	a, err := e.request(ctx, abi.Question{Key: req.Key, Method: abi.MethodElicit, Message: req.Message, RequestedSchema: req.RequestedSchema})
	if err != nil {
		return abi.ElicitReply{}, err
	}
	return a.Reply, a.Err
}

// request makes q an input request of the task (it is input_required
// until every one is answered) and waits for its answer.
func (e *Task) request(ctx context.Context, q abi.Question) (Answer, error) {
	v, err := e.run.RequestInput(ctx, q)
	if errors.Is(err, taskengine.ErrTooManyInputs) {
		return Answer{}, elicitLimit("this task already has as many input requests waiting as it may")
	}
	if err != nil {
		return Answer{}, err
	}
	a, _ := v.(Answer)
	return a, nil
}

// BeginTask: a task's work already is one.
func (e *Task) BeginTask() bool { return true }

// progressText is a 2026-07-28 task's status message for a progress
// report: "3/10 copying" (or "3 copying" with no total).
func progressText(p, total float64, msg string) string {
	out := strconv.FormatFloat(p, 'f', -1, 64)
	if total > 0 {
		out += "/" + strconv.FormatFloat(total, 'f', -1, 64)
	}
	if msg != "" {
		out += " " + msg
	}
	return out
}
