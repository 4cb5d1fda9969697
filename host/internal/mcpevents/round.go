package mcpevents

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// A 2026-07-28 server sends its client no requests: a plain call that
// needs input answers with an input_required result listing its
// questions, and the client calls again with the answers
// (inputResponses). wasmtask keeps nothing between the rounds: each round
// runs the tool in a fresh instance, as every call does, and answers its
// questions (elicitation, sampling, roots), in order, from the round's
// answers; the first question without an answer ends the round. A
// question's key is the one its tool chose, or a digest of its text and
// its rank among the round's questions with that text
// (mcpwire.QuestionKey), so an answer never reaches another question,
// whatever order questions asked together arrive in. The answers the tool
// took travel to the next round in the requestState the MCP room seals
// (Taken): a client answers each question once.
//
// A tool with taskStart begin_task runs this way until it calls
// begin_task, when the call becomes a task (for a client that declared the
// tasks extension): the task is created then, the client gets its handle,
// and the instance goes on as the task's work.

// errNeedsInput ends a round's guest at its first unanswered question.
var errNeedsInput = errors.New("the question waits for the client's next round")

// Round is the abi.Events of one round of a 2026-07-28 call that may ask
// questions, and may become a task, before it ends. It is safe for
// concurrent use.
type Round struct {
	c       Client
	tool    string
	answers map[string]json.RawMessage // this round's answers: its requestState's, then its inputResponses
	plain   abi.Events                 // progress before the task begins
	cancel  context.CancelFunc         // ends the guest
	begin   func() (taskengine.Task, error)

	mu        sync.Mutex
	asked     map[string]int                  // questions asked this round, by digest
	missing   map[string]mcpwire.InputRequest // questions without an answer
	taken     map[string]json.RawMessage      // answers the tool took, by key
	kinds     map[string]string               // the method of each key's question
	task      *Task                           // once a task
	begun     chan taskengine.Task            // the task, once begin_task made one
	refused   error                           // why the engine did not take the task
	badAnswer *RefusedAnswer                  // the round's first answer that mcpwire.CheckAnswer refused
}

// NewRound returns the events of one round of a call of tool. answers are
// the round's: those its requestState carries, and its inputResponses
// (mcpwire.AnswersOf), each checked when its question is asked; plain gets what is
// reported before the call is a task; cancel ends the guest. begin creates
// the task when the tool calls begin_task, and its work calls SetTask;
// nil: the call may not become a task.
func NewRound(c Client, tool string, answers map[string]json.RawMessage, plain abi.Events, cancel context.CancelFunc, begin func() (taskengine.Task, error)) *Round {
	return &Round{c: c, tool: tool, answers: answers, plain: plain, cancel: cancel, begin: begin, begun: make(chan taskengine.Task, 1)}
}

// SetTask makes ev the round's events from now on: the call is a task.
func (r *Round) SetTask(ev *Task) {
	r.mu.Lock()
	r.task = ev
	r.mu.Unlock()
}

// Begun delivers the task, once begin_task made one.
func (r *Round) Begun() <-chan taskengine.Task { return r.begun }

// Ended reports how a round that ended without becoming a task ends, in
// this order: the engine's refusal of its task (refused), else the first
// answer refused (bad), else the questions still without an answer (open;
// nil if none: the call's result stands).
func (r *Round) Ended() (open map[string]mcpwire.InputRequest, bad *RefusedAnswer, refused error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.missing, r.badAnswer, r.refused
}

func (r *Round) Progress(p, total float64, msg string) {
	if ev := r.taskEvents(); ev != nil {
		ev.Progress(p, total, msg)
		return
	}
	r.plain.Progress(p, total, msg)
}

func (r *Round) Status(msg string) {
	if ev := r.taskEvents(); ev != nil {
		ev.Status(msg)
	}
}

func (r *Round) Log(level int32, msg string) {
	r.c.Log.Info("tool log", "tool", r.tool, "level", logLevel(level), "msg", msg)
}

func (r *Round) taskEvents() *Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.task
}

// Elicit answers from the round's answers, each checked by
// mcpwire.CheckAnswer; a question without an answer ends the round (the
// guest is stopped: it is asked again in the next one), and so does one
// whose answer is refused (the round answers -32602). Once the call is a
// task, questions go to tasks/get.
func (r *Round) Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error) {
	if ev := r.taskEvents(); ev != nil {
		return ev.Elicit(ctx, req)
	}
	if !r.c.CanElicit {
		return abi.ElicitReply{}, errElicitUnsupported
	}
	a, err := r.answer(abi.Question{Key: req.Key, Method: abi.MethodElicit, Message: req.Message, RequestedSchema: req.RequestedSchema})
	return a.Reply, err
}

// Sample answers a sampling question from the round's answers, as Elicit
// does.
func (r *Round) Sample(ctx context.Context, key string, req json.RawMessage) (json.RawMessage, error) {
	if ev := r.taskEvents(); ev != nil {
		return ev.Sample(ctx, key, req)
	}
	if !r.c.CanSample {
		return nil, errCannotAsk("the client did not declare sampling")
	}
	params, err := cleanSample(req)
	if err != nil {
		return nil, err
	}
	a, err := r.answer(abi.Question{Key: key, Method: abi.MethodSample, Params: params})
	return a.Result, err
}

// Roots answers a roots question from the round's answers, as Elicit does.
func (r *Round) Roots(ctx context.Context, key string) (json.RawMessage, error) {
	if ev := r.taskEvents(); ev != nil {
		return ev.Roots(ctx, key)
	}
	if !r.c.CanRoots {
		return nil, errCannotAsk("the client did not declare roots")
	}
	a, err := r.answer(abi.Question{Key: key, Method: abi.MethodRoots})
	return a.Result, err
}

// answer answers q from the round's answers, checked as tasks/update
// checks an answer (checkAnswer); without one, or with one refused, the
// round ends.
func (r *Round) answer(q abi.Question) (Answer, error) {
	key, raw, err := r.lookup(q)
	if err != nil {
		return Answer{}, err
	}
	a, err := checkAnswer(q, raw)
	if err != nil {
		return Answer{}, r.refuse(key, err)
	}
	r.took(key, raw)
	return a, nil
}

// lookup finds the answer to q among the round's. Without one, q is open:
// the round ends (the guest is stopped) and the client is asked it.
func (r *Round) lookup(q abi.Question) (key string, answer json.RawMessage, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asked == nil {
		r.asked = make(map[string]int)
	}
	key = mcpwire.QuestionKey(q, r.asked)
	method := cmp.Or(q.Method, abi.MethodElicit)
	if r.kinds == nil {
		r.kinds = make(map[string]string)
	}
	if k, ok := r.kinds[key]; ok && k != method {
		// One key, two kinds of question: no answer could fit both.
		return key, nil, fmt.Errorf("%w: the input key %q already names a question of another kind", abi.ErrBadClientRequest, key)
	}
	r.kinds[key] = method
	if a, ok := r.answers[key]; ok {
		return key, a, nil
	}
	if r.missing == nil {
		r.missing = make(map[string]mcpwire.InputRequest)
	}
	if len(r.missing) < abi.MaxElicitAll {
		r.missing[key] = mcpwire.QuestionInput(q)
	}
	r.cancel()
	return key, nil, errNeedsInput
}

// refuse ends the round on an answer that does not fit its question: the
// round answers -32602, and the question stays the client's to answer.
func (r *Round) refuse(key string, err error) error {
	r.mu.Lock()
	if r.badAnswer == nil {
		r.badAnswer = &RefusedAnswer{Key: key, Err: err}
	}
	r.mu.Unlock()
	r.cancel()
	return err
}

// took records an answer the tool took: the next round's state carries it.
func (r *Round) took(key string, answer json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.taken == nil {
		r.taken = make(map[string]json.RawMessage)
	}
	r.taken[key] = answer
}

// Taken are the answers the tool took this round, by key: what the
// round's requestState carries to the next.
func (r *Round) Taken() map[string]json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.taken)
}

// BeginTask makes the call a task when the tool may be one for this
// client and no question of the round is open.
func (r *Round) BeginTask() bool {
	r.mu.Lock()
	if r.task != nil {
		r.mu.Unlock()
		return true
	}
	if r.begin == nil || len(r.missing) > 0 {
		r.mu.Unlock()
		return false
	}
	r.mu.Unlock()
	t, err := r.begin()
	if err != nil {
		// The engine holds all it may for this client: the call ends
		// with that error rather than run on unseen.
		r.mu.Lock()
		r.refused = err
		r.mu.Unlock()
		r.cancel()
		return false
	}
	r.begun <- t // capacity 1, sent once
	return true
}
