package mcpevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// A running tool asks the user for input. A plain call sends
// elicitation/create on its own request's stream; a task's input requests
// wait in the engine (the task is input_required) and a waiting
// tasks/result delivers them (Waiters.Wait); a 2026-07-28 client
// answers them in a round's inputResponses (Round) or in tasks/update
// (AnswerInputs). Every answer passes mcpwire.CheckAnswer before the tool
// sees it.

// Answer is what an input request of a task is answered with: the
// client's reply, or why there is none. The engine keeps it for the
// task's work (taskengine.Run.RequestInput returns it).
type Answer struct {
	Reply  abi.ElicitReply // an elicitation's
	Result json.RawMessage // a sampling or roots request's
	Err    error
}

// RefusedAnswer is a 2026-07-28 answer that mcpwire.DecodeElicitResult or
// mcpwire.CheckAnswer refused: the request that carried it is refused
// (the MCP room words it, naming Key), and the question stays open.
type RefusedAnswer struct {
	Key string // the input request's key
	Err error  // why the answer does not fit its question
}

func (e *RefusedAnswer) Error() string {
	return "inputResponses[" + strconv.Quote(e.Key) + "]: " + e.Err.Error()
}

func (e *RefusedAnswer) Unwrap() error { return e.Err }

// Waiters are the tasks/result requests waiting on tasks, across the
// server's sessions: a task's progress and logs go out on a waiter's
// stream (over Streamable HTTP a write is routed by the request context
// it is made with), and each of its input requests is delivered by one
// waiter at a time. The zero value is ready; it is safe for concurrent
// use.
type Waiters struct {
	mu       sync.Mutex
	attached map[string]*attachment // by task ID
	busy     map[string]bool        // task ID + input ID being delivered
}

// attachment is a tasks/result request waiting on a task.
type attachment struct{ ctx context.Context }

// Wait waits for task id (of owner, in e) to end and returns it with its
// outcome, as e.Wait does, for a tasks/result request of context ctx on
// ss: while it waits, the task's messages go out with ctx and its input
// requests are delivered on ss (when the engine admits no more watchers
// of the task, only the first). A request for what ss's client did not
// declare (can) stays pending for a waiter whose client did.
func (w *Waiters) Wait(ctx context.Context, e *taskengine.Engine, ss *mcp.ServerSession, can Can, owner, id string) (taskengine.Task, taskengine.Outcome, error) {
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
	detach := w.attach(dctx, id)
	defer detach()
	for done := false; !done; {
		select {
		case t, ok := <-sub.C():
			if !ok {
				done = true
				break
			}
			if t.Status == taskengine.StatusInputRequired {
				w.deliver(dctx, e, ss, can, owner, id, &wg)
			}
			done = t.Status.Terminal()
		case <-ctx.Done():
			return taskengine.Task{}, taskengine.Outcome{}, ctx.Err()
		}
	}
	return e.Wait(ctx, owner, id)
}

// Can is what a waiting session's client declared it can answer.
type Can struct{ Elicit, Sample, Roots bool }

// answers reports whether a client that can c answers q.
func (c Can) answers(q abi.Question) bool {
	switch q.Method {
	case abi.MethodSample:
		return c.Sample
	case abi.MethodRoots:
		return c.Roots
	default:
		return c.Elicit
	}
}

// attach records the waiter of context ctx on task id, until detach: the
// task's messages go out with ctx.
func (w *Waiters) attach(ctx context.Context, id string) (detach func()) {
	a := &attachment{ctx}
	w.mu.Lock()
	prev := w.attached[id]
	if w.attached == nil {
		w.attached = make(map[string]*attachment)
	}
	w.attached[id] = a
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.attached[id] == a {
			if prev != nil && prev.ctx.Err() == nil {
				w.attached[id] = prev
			} else {
				delete(w.attached, id)
			}
		}
	}
}

// context is the context to write a task's messages with: that of a
// waiting tasks/result, or def.
func (w *Waiters) context(id string, def context.Context) context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a := w.attached[id]; a != nil && a.ctx.Err() == nil {
		return a.ctx
	}
	return def
}

// deliver sends each pending input request of task id (of owner, in e)
// that no other waiter is delivering and that ss's client can answer
// (elicitation/create, sampling/createMessage or roots/list) to ss, with
// the related-task _meta, and answers the task with the client's reply.
// Delivery goroutines belong to the calling waiter (wg), and end with
// ctx.
func (w *Waiters) deliver(ctx context.Context, e *taskengine.Engine, ss *mcp.ServerSession, can Can, owner, id string, wg *sync.WaitGroup) {
	reqs, err := e.PendingInput(ctx, owner, id)
	if err != nil {
		return
	}
	for _, r := range reqs {
		q, _ := r.Payload.(abi.Question)
		if !can.answers(q) {
			continue
		}
		key := id + "\x00" + r.ID
		w.mu.Lock()
		busy := w.busy[key]
		if w.busy == nil {
			w.busy = make(map[string]bool)
		}
		w.busy[key] = true
		w.mu.Unlock()
		if busy {
			continue
		}
		wg.Go(func() {
			defer func() {
				w.mu.Lock()
				delete(w.busy, key)
				w.mu.Unlock()
			}()
			ans := ask(ctx, ss, id, q)
			if ans.Err != nil && ctx.Err() != nil {
				return // the waiter left; the next tasks/result delivers it again
			}
			// An answer received is delivered even if the waiter leaves now
			// (the engine's SharedTimeout still caps it).
			_ = e.Answer(context.WithoutCancel(ctx), owner, id, r.ID, ans)
		})
	}
}

// ask sends q to the client, with the related-task _meta of task taskID,
// and waits for the answer.
func ask(ctx context.Context, ss *mcp.ServerSession, taskID string, q abi.Question) Answer {
	var res any
	var err error
	switch q.Method {
	case abi.MethodSample:
		//lint:ignore SA1019 sampling is deprecated only for protocol 2026-07-28; 2025-11-25 clients answer it.
		var params *mcp.CreateMessageParams
		if params, err = sampleParams(q.Params); err == nil {
			params.Meta = mcpwire.RelatedTask(taskID)
			//lint:ignore SA1019 sampling is deprecated only for protocol 2026-07-28; 2025-11-25 clients answer it.
			res, err = ss.CreateMessage(ctx, params)
		}
	case abi.MethodRoots:
		//lint:ignore SA1019 roots are deprecated only for protocol 2026-07-28; 2025-11-25 clients answer them.
		res, err = ss.ListRoots(ctx, &mcp.ListRootsParams{Meta: mcpwire.RelatedTask(taskID)})
	default:
		return elicit(ctx, ss, taskID, q.Elicitation())
	}
	if err != nil {
		return Answer{Err: fmt.Errorf("%s failed: %w", q.Method, err)}
	}
	b, err := json.Marshal(res)
	if err == nil {
		what := "roots"
		if q.Method == abi.MethodSample {
			what = "sampling"
		}
		b, err = checkResult(what, b)
	}
	if err != nil {
		return Answer{Err: err}
	}
	return Answer{Result: b}
}

// elicit sends one elicitation/create to the client and waits for the reply.
func elicit(ctx context.Context, ss *mcp.ServerSession, taskID string, req abi.ElicitRequest) Answer {
	params := &mcp.ElicitParams{Mode: "form", Message: req.Message}
	if len(req.RequestedSchema) > 0 {
		params.RequestedSchema = req.RequestedSchema
	}
	if taskID != "" {
		params.Meta = mcpwire.RelatedTask(taskID)
	}
	res, err := ss.Elicit(ctx, params)
	if err != nil {
		return Answer{Err: fmt.Errorf("elicitation failed: %w", err)}
	}
	reply := abi.ElicitReply{Action: res.Action}
	if res.Content != nil {
		if b, err := json.Marshal(res.Content); err == nil {
			reply.Content = b
		}
	}
	// go-sdk checked the answer against the schema already; the check
	// every era shares (mcpwire.CheckAnswer) goes further. A response cannot be
	// refused: the question fails.
	reply, err = mcpwire.CheckAnswer(req, reply)
	if err != nil {
		return Answer{Err: fmt.Errorf("elicitation failed: %w", err)}
	}
	return Answer{Reply: reply}
}

// AnswerInputs answers tasks/update: it hands each response that answers
// a pending input request of task id (of owner, in e) to the work waiting
// for it, once every one of them passed mcpwire.CheckAnswer. A refused
// answer refuses the update (a *[RefusedAnswer]) and no question is
// answered; an error of the engine is returned as it is. Keys that answer
// nothing (never asked, already answered, withdrawn) are ignored without
// being decoded.
func AnswerInputs(ctx context.Context, e *taskengine.Engine, owner, id string, responses map[string]json.RawMessage) error {
	pending, err := e.PendingInput(ctx, owner, id)
	if err != nil {
		return err
	}
	type answer struct {
		key    string
		answer Answer
	}
	var answers []answer
	for _, r := range pending {
		raw, ok := responses[r.ID]
		if !ok {
			continue
		}
		q, _ := r.Payload.(abi.Question)
		a, err := checkAnswer(q, raw)
		if err != nil {
			return &RefusedAnswer{Key: r.ID, Err: err}
		}
		answers = append(answers, answer{r.ID, a})
	}
	for _, a := range answers {
		// A request withdrawn in the meantime answers nothing: ignored.
		_ = e.Answer(ctx, owner, id, a.key, a.answer)
	}
	return nil
}

// checkAnswer reads raw, a 2026-07-28 client's answer to q, as the tool
// receives it.
func checkAnswer(q abi.Question, raw json.RawMessage) (Answer, error) {
	switch q.Method {
	case abi.MethodSample:
		res, err := mcpwire.CheckSampleAnswer(raw)
		return Answer{Result: res}, err
	case abi.MethodRoots:
		res, err := mcpwire.CheckRootsAnswer(raw)
		return Answer{Result: res}, err
	}
	reply, err := mcpwire.DecodeElicitResult(raw)
	if err == nil {
		reply, err = mcpwire.CheckAnswer(q.Elicitation(), reply)
	}
	return Answer{Reply: reply}, err
}
