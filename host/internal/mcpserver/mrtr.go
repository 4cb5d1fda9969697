package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// A 2026-07-28 server sends its client no requests: a plain call that
// needs input answers with an input_required result listing its
// questions, and the client calls again with the answers
// (inputResponses). wasmtask keeps nothing between the rounds: each round
// runs the tool in a fresh instance, as every call does, and answers its
// questions, in order, from the round's inputResponses; the first
// question without an answer ends the round. A question's key is a digest
// of its text and its rank among the round's questions with that text, so
// an answer never reaches another question, whatever order questions asked
// together arrive in.
//
// A tool with taskStart begin_task runs this way until it calls
// begin_task, when the call becomes a task (for a client that declared the
// tasks extension): the task is created then, the client gets its handle,
// and the instance goes on as the task's work.

// errNeedsInput ends a round's guest at its first unanswered question.
var errNeedsInput = errors.New("the question waits for the client's next round")

// staged is one round of a 2026-07-28 call that may ask questions, and
// may become a task, before it ends.
type staged struct {
	s       *Server
	rq      requestor
	tool    string
	answers map[string]abi.ElicitReply // this round's inputResponses
	mayTask bool                       // begin_task may make it a task
	plain   abi.Events                 // progress before the task begins
	cancel  context.CancelFunc         // ends the guest
	begin   func() (taskengine.Task, error)

	mu        sync.Mutex
	asked     map[string]int                  // questions asked this round, by digest
	missing   map[string]mcpwire.InputRequest // questions without an answer
	task      *taskEvents                     // once a task
	begun     chan taskengine.Task            // the task, once begin_task made one
	refused   error                           // why the engine did not take the task
	badAnswer error                           // the round's first answer that mcpwire.CheckAnswer refused
}

func (c *staged) Progress(p, total float64, msg string) {
	if ev := c.taskEvents(); ev != nil {
		ev.Progress(p, total, msg)
		return
	}
	c.plain.Progress(p, total, msg)
}

func (c *staged) Status(msg string) {
	if ev := c.taskEvents(); ev != nil {
		ev.Status(msg)
	}
}

func (c *staged) Log(level int32, msg string) {
	c.s.log.Info("tool log", "tool", c.tool, "level", logLevel(level), "msg", msg)
}

func (c *staged) taskEvents() *taskEvents {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.task
}

// Elicit answers from the round's inputResponses, each checked by
// mcpwire.CheckAnswer; a question without an answer ends the round (the guest is
// stopped: it is asked again in the next one), and so does one whose
// answer is refused (the round answers -32602). Once the call is a task,
// questions go to tasks/get.
func (c *staged) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	c.mu.Lock()
	if ev := c.task; ev != nil {
		c.mu.Unlock()
		return ev.Elicit(ctx, req)
	}
	if !c.rq.canElicit() {
		c.mu.Unlock()
		return abi.ElicitReply{}, errElicitUnsupported
	}
	if c.asked == nil {
		c.asked = make(map[string]int)
	}
	key := mcpwire.QuestionKey(req, c.asked)
	if a, ok := c.answers[key]; ok {
		c.mu.Unlock()
		a, err := mcpwire.CheckAnswer(req, a)
		if err == nil {
			return a, nil
		}
		// The answer is the request's params: the round ends refusing
		// them, and the question stays the client's to answer again.
		c.mu.Lock()
		if c.badAnswer == nil {
			c.badAnswer = rpcError(jsonrpc.CodeInvalidParams, "inputResponses[%s]: %v", strconv.Quote(key), err)
		}
		c.mu.Unlock()
		c.cancel()
		return abi.ElicitReply{}, err
	}
	if c.missing == nil {
		c.missing = make(map[string]mcpwire.InputRequest)
	}
	if len(c.missing) < abi.MaxElicitAll {
		c.missing[key] = mcpwire.ElicitInput(req)
	}
	c.mu.Unlock()
	c.cancel()
	return abi.ElicitReply{}, errNeedsInput
}

// BeginTask makes the call a task when the tool may be one for this
// client and no question of the round is open.
func (c *staged) BeginTask() bool {
	c.mu.Lock()
	if c.task != nil {
		c.mu.Unlock()
		return true
	}
	if !c.mayTask || len(c.missing) > 0 {
		c.mu.Unlock()
		return false
	}
	c.mu.Unlock()
	t, err := c.begin()
	if err != nil {
		// The engine holds all it may for this client: the call ends
		// with that error rather than run on unseen.
		c.mu.Lock()
		c.refused = err
		c.mu.Unlock()
		c.cancel()
		return false
	}
	c.begun <- t // capacity 1, sent once
	return true
}

// openQuestions returns the round's unanswered questions, nil if none.
func (c *staged) openQuestions() map[string]mcpwire.InputRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.missing
}

// callStaged runs one round of a 2026-07-28 call: to its result, to its
// first unanswered question (input_required), or — when the tool calls
// begin_task and mayTask — to a task, whose handle it returns while the
// instance goes on as the task's work. The caller counted the call in
// (beginWork) and hands over release: both end with the instance.
func (s *Server) callStaged(ctx context.Context, rq requestor, cat Catalog, release func(), tool string, p *mcp.CallToolParamsRaw, mayTask bool) (mcp.Result, error) {
	owner := rq.owner()
	ctx, stop := withDone(ctx, rq.sess.ctx)
	defer stop()
	// The instance outlives the request once it is a task: its context
	// is its own (nothing of the request's), ended by the request until
	// then, by the task after.
	runCtx, cancel := context.WithCancel(context.Background())
	stopWithRequest := context.AfterFunc(ctx, cancel)
	c := &staged{
		s: s, rq: rq, tool: tool, answers: mcpwire.AnswersOf(p.InputResponses), mayTask: mayTask,
		plain:  &callEvents{s: s, rq: rq, ctx: ctx, token: p.GetProgressToken(), tool: tool},
		cancel: cancel,
		begun:  make(chan taskengine.Task, 1),
	}
	type ending struct {
		res *mcpwire.CallToolResult
		err error
	}
	ended := make(chan ending, 1)   // the instance's end, for the round
	outcome := make(chan ending, 1) // the same, for the task's work
	info := &taskInfo{tool: tool, attrs: toolAttrs(cat, tool)}
	c.begin = func() (taskengine.Task, error) {
		started := make(chan struct{})
		work := func(tctx context.Context, run *taskengine.Run) taskengine.Outcome {
			c.mu.Lock()
			c.task = &taskEvents{s: s, rq: rq, run: run, id: run.ID(), tool: tool}
			c.mu.Unlock()
			close(started)
			stop := context.AfterFunc(tctx, cancel) // a cancelled task stops the instance
			defer stop()
			e := <-outcome
			s.audit(auditTaskFinish, owner, append(append(slices.Clip(info.attrs), slog.String("task", run.ID())), outcomeAttr(e.res, e.err))...)
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
			s.audit(auditTaskCreate, owner, append(slices.Clip(info.attrs), slog.String("outcome", "refused"), slog.String("reason", err.Error()))...)
			return taskengine.Task{}, err
		}
		<-started
		// From here the request no longer ends the instance: the task does.
		stopWithRequest()
		s.audit(auditTaskCreate, owner, append(taskAttrs(t), slog.String("outcome", "created"), slog.Duration("ttl", t.TTL))...)
		return t, nil
	}
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
					e = ending{err: rpcError(jsonrpc.CodeInternalError, "internal error")}
				}
			}()
			e.res, e.err = s.execute(runCtx, Caller{Tenant: owner, User: rq.user}, cat, tool, p.Arguments, c)
		}()
		outcome <- e
		ended <- e
	}()

	select {
	case t := <-c.begun:
		return &mcpwire.ModernTaskResult{ModernTask: modernTaskOf(t, nil, resultTask)}, nil
	case e := <-ended:
		select {
		case t := <-c.begun: // it began, then ended at once
			return &mcpwire.ModernTaskResult{ModernTask: modernTaskOf(t, nil, resultTask)}, nil
		default:
		}
		c.mu.Lock()
		refused, bad := c.refused, c.badAnswer
		c.mu.Unlock()
		if refused != nil {
			return nil, engineError(refused, "")
		}
		if bad != nil {
			return nil, bad
		}
		if open := c.openQuestions(); open != nil {
			return &mcpwire.InputRequiredResult{ResultType: resultInputRequired, InputRequests: open}, nil
		}
		s.audit(auditCall, owner, append(toolAttrs(cat, tool), outcomeAttr(e.res, e.err))...)
		if e.res != nil {
			e.res.ResultType = resultComplete
		}
		return e.res, e.err
	}
}
