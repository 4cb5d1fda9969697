//lint:file-ignore SA1019 go-sdk deprecates logging for protocol 2026-07-28 (SEP-2577); 2025-11-25 clients, which this server speaks, still receive a tool's log as notifications/message.

package mcpserver

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/taskengine"
)

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

// callEvents are the Events of a plain tools/call: everything goes out in
// the context of the request (on its stream over Streamable HTTP).
type callEvents struct {
	s     *Server
	rq    requestor
	ctx   context.Context
	token any
	tool  string
}

func (e *callEvents) Progress(p, total float64, msg string) {
	if e.token == nil {
		return
	}
	_ = e.rq.ss.NotifyProgress(e.ctx, &mcp.ProgressNotificationParams{ProgressToken: e.token, Progress: p, Total: total, Message: msg})
}

func (e *callEvents) Status(string) {}

func (e *callEvents) Log(level int32, msg string) {
	if e.rq.modern {
		// 2026-07-28 has no log notifications (SEP-2577): the server log.
		e.s.log.Info("tool log", "tool", e.tool, "level", logLevel(level), "msg", msg)
		return
	}
	_ = e.rq.ss.Log(e.ctx, &mcp.LoggingMessageParams{Level: logLevel(level), Logger: e.tool, Data: msg})
}

func (e *callEvents) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	// A 2026-07-28 server sends the client no requests of its own: a
	// plain call cannot ask (a task can, through tasks/get).
	if e.rq.modern || !e.rq.canElicit() {
		return abi.ElicitReply{}, errElicitUnsupported
	}
	if err := e.rq.sess.elicits.begin(time.Now()); err != nil {
		e.s.log.Info("input request refused", "tool", e.tool, "session", e.rq.sess.id, "err", err)
		return abi.ElicitReply{}, err
	}
	defer e.rq.sess.elicits.end()
	ctx, stop := withDone(e.ctx, ctx)
	defer stop()
	a := e.s.elicit(ctx, e.rq.ss, "", req)
	if a.err != nil {
		e.s.log.Info("input request failed", "tool", e.tool, "err", a.err)
	}
	return a.reply, a.err
}

// taskEvents are the Events of a task's work. Progress keeps the original
// request's progress token and carries the related-task _meta; input requests
// move the task to input_required and are delivered by tasks/result.
type taskEvents struct {
	s     *Server
	rq    requestor
	run   *taskengine.Run
	id    string
	token any
	tool  string
}

func (e *taskEvents) Progress(p, total float64, msg string) {
	if e.rq.modern {
		// No notifications from a 2026-07-28 task: tasks/get shows it.
		e.run.SetProgress(p, total, progressText(p, total, msg))
		return
	}
	e.run.SetProgress(p, total, msg)
	if e.token == nil {
		return
	}
	ctx := e.s.deliveryContext(e.id, e.rq.sess.ctx)
	_ = e.rq.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		Meta:          relatedMeta(e.id),
		ProgressToken: e.token,
		Progress:      p,
		Total:         total,
		Message:       msg,
	})
}

func (e *taskEvents) Status(msg string) { e.run.SetStatusMessage(msg) }

func (e *taskEvents) Log(level int32, msg string) {
	if e.rq.modern {
		e.s.log.Info("tool log", "tool", e.tool, "task", e.id, "level", logLevel(level), "msg", msg)
		return
	}
	ctx := e.s.deliveryContext(e.id, e.rq.sess.ctx)
	_ = e.rq.ss.Log(ctx, &mcp.LoggingMessageParams{Meta: relatedMeta(e.id), Level: logLevel(level), Logger: e.tool, Data: msg})
}

func (e *taskEvents) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	if !e.rq.canElicit() {
		return abi.ElicitReply{}, errElicitUnsupported
	}
	if err := e.rq.sess.elicits.begin(time.Now()); err != nil {
		e.s.log.Info("input request refused", "tool", e.tool, "session", e.rq.sess.id, "err", err)
		return abi.ElicitReply{}, err
	}
	defer e.rq.sess.elicits.end()
	v, err := e.run.RequestInput(ctx, req)
	if errors.Is(err, taskengine.ErrTooManyInputs) {
		return abi.ElicitReply{}, elicitLimit("this task already has as many input requests waiting as it may")
	}
	if err != nil {
		return abi.ElicitReply{}, err
	}
	a, _ := v.(elicitAnswer)
	return a.reply, a.err
}

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

// BeginTask: a plain call stays one.
func (e *callEvents) BeginTask() bool { return false }

// BeginTask: a task's work already is one.
func (e *taskEvents) BeginTask() bool { return true }
