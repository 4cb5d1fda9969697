package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime/debug"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/host/internal/roundstate"
	"github.com/wasmtask/wasmtask/host/internal/taskcodec"
	"github.com/wasmtask/wasmtask/taskengine"
)

// A 2026-07-28 plain call that needs input answers input_required and is
// run again, fresh, with the answers; a tool with taskStart begin_task
// runs that way until it calls begin_task, when its task is created. The
// round's events (its questions, answers and begin_task) are an
// mcpevents.Round; this file runs the round and says how it ended.

// callStaged runs one round of a 2026-07-28 call: to its result, to its
// first unanswered question (input_required), or — when the tool calls
// begin_task and mayTask — to a task, whose handle it returns while the
// instance goes on as the task's work. The caller counted the call in
// (beginWork) and hands over release: both end with the instance.
func (s *Server) callStaged(ctx context.Context, rq requestor, cat Catalog, release func(), tool string, p *mcp.CallToolParamsRaw, mayTask bool) (mcp.Result, error) {
	owner := rq.owner()
	bind := roundstate.Binding{Tenant: owner, Method: methodCallTool, Name: tool, Args: p.Arguments}
	answers, err := s.roundAnswers(bind, p.RequestState, p.InputResponses)
	if err != nil {
		s.endWork()
		release()
		return nil, err
	}
	ctx, stop := withDone(ctx, rq.sess.ctx)
	defer stop()
	// The instance outlives the request once it is a task: its context
	// is its own (nothing of the request's), ended by the request until
	// then, by the task after.
	runCtx, cancel := context.WithCancel(context.Background())
	stopWithRequest := context.AfterFunc(ctx, cancel)
	type ending struct {
		res *mcpwire.CallToolResult
		err error
	}
	ended := make(chan ending, 1)   // the instance's end, for the round
	outcome := make(chan ending, 1) // the same, for the task's work
	info := &taskcodec.Meta{Tool: tool, Attrs: toolAttrs(cat, tool)}
	client := s.client(rq)
	var r *mcpevents.Round
	begin := func() (taskengine.Task, error) {
		started := make(chan struct{})
		work := func(tctx context.Context, run *taskengine.Run) taskengine.Outcome {
			r.SetTask(mcpevents.NewTask(client, run, nil, tool))
			close(started)
			stop := context.AfterFunc(tctx, cancel) // a cancelled task stops the instance
			defer stop()
			e := <-outcome
			s.audit(auditTaskFinish, owner, append(append(slices.Clip(info.Attrs), slog.String("task", run.ID())), outcomeAttr(e.res, e.err))...)
			if tctx.Err() != nil {
				return taskengine.Outcome{Err: endedBy(tctx)}
			}
			if e.err != nil {
				return taskengine.Outcome{Err: e.err}
			}
			if e.res.IsError {
				run.SetStatusMessage(firstText(e.res, "the tool reported an error"))
			}
			return taskengine.Outcome{Value: e.res, Failed: e.res.IsError, Size: e.res.Size()}
		}
		t, err := s.cfg.Engine.Submit(ctx, owner, taskengine.SubmitOptions{Meta: info}, work)
		if err != nil {
			s.audit(auditTaskCreate, owner, append(slices.Clip(info.Attrs), slog.String("outcome", "refused"), slog.String("reason", err.Error()))...)
			return taskengine.Task{}, err
		}
		<-started
		// From here the request no longer ends the instance: the task does.
		stopWithRequest()
		s.audit(auditTaskCreate, owner, append(taskAttrs(t), slog.String("outcome", "created"), slog.Duration("ttl", t.TTL))...)
		return t, nil
	}
	if !mayTask {
		begin = nil // begin_task answers that the call stays one
	}
	plain := mcpevents.NewCall(ctx, client, p.GetProgressToken(), tool)
	r = mcpevents.NewRound(client, tool, answers, plain, cancel, begin)
	go func() {
		defer s.endWork()
		defer release()
		defer cancel()
		var e ending
		func() {
			// This goroutine is the call's own: a panic in the call path
			// (not the guest, which wasmrt contains) must not end the
			// process, as the middleware and the engine ensure elsewhere.
			defer func() {
				if r := recover(); r != nil {
					s.log.Error("panic while running a tool", "tool", tool, "panic", r, "stack", string(debug.Stack()))
					e = ending{err: mcperr.RPC(jsonrpc.CodeInternalError, "internal error")}
				}
			}()
			e.res, e.err = s.execute(runCtx, Caller{Tenant: owner, User: rq.user}, cat, tool, p.Arguments, r)
		}()
		outcome <- e
		ended <- e
	}()

	select {
	case t := <-r.Begun():
		return &mcpwire.ModernTaskResult{ModernTask: modernTaskOf(t, nil, resultTask)}, nil
	case e := <-ended:
		select {
		case t := <-r.Begun(): // it began, then ended at once
			return &mcpwire.ModernTaskResult{ModernTask: modernTaskOf(t, nil, resultTask)}, nil
		default:
		}
		if _, _, refused := r.Ended(); refused != nil {
			return nil, mcperr.Engine(refused, "")
		}
		if res, err := s.roundOutcome(r, bind); res != nil || err != nil {
			return res, err
		}
		s.audit(auditCall, owner, append(toolAttrs(cat, tool), outcomeAttr(e.res, e.err))...)
		if e.res != nil {
			e.res.ResultType = resultComplete
		}
		return e.res, e.err
	}
}

// roundAnswers are the answers of a round of the request b stands for:
// its inputResponses, then those its requestState carries (the state must
// open for this very request: -32602 otherwise) for the questions they do
// not answer — so a client can correct an answer the state holds (the
// tool runs from the start every round). Each is checked when its
// question is asked.
func (s *Server) roundAnswers(b roundstate.Binding, state string, responses mcp.InputResponseMap) (map[string]json.RawMessage, error) {
	answers := mcpwire.AnswersOf(responses)
	if state == "" {
		return answers, nil
	}
	st, err := s.state.Open(b, state)
	if err != nil {
		return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "%s: %v", b.Method, err)
	}
	for k, a := range st.Answers {
		if _, ok := answers[k]; !ok {
			answers[k] = a
		}
	}
	return answers, nil
}

// roundOutcome is how round r of the request b stands for ends when it
// does not complete: the error of an answer refused, or input_required
// with its open questions and the sealed state of the answers it took.
// Both nil: the round completed, and its result stands.
func (s *Server) roundOutcome(r *mcpevents.Round, b roundstate.Binding) (mcp.Result, error) {
	open, bad, _ := r.Ended()
	if bad != nil {
		return nil, mcperr.RefusedAnswer(bad)
	}
	if open == nil {
		return nil, nil
	}
	state, err := s.state.Seal(b, roundstate.State{Answers: r.Taken()})
	if errors.Is(err, roundstate.ErrTooLarge) {
		return nil, mcperr.RPC(mcperr.CodeLimit, "%s: %v (at most %d KiB in all)", b.Method, err, roundstate.MaxBytes>>10)
	}
	if err != nil {
		return nil, mcperr.RPC(jsonrpc.CodeInternalError, "%s: %v", b.Method, err)
	}
	return &mcpwire.InputRequiredResult{ResultType: resultInputRequired, InputRequests: open, RequestState: state}, nil
}
