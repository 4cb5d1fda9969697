package taskengine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Run is the work's handle on its own task. Its methods are safe for
// concurrent use; once the task is terminal they change nothing.
type Run struct {
	e *Engine
	t *task
}

// InputRequest is a pending request of work for input (for example an
// elicitation). ID is unique within its task.
type InputRequest struct {
	ID      string
	Payload any
}

// inputWait is one RequestInput call blocked for its answer.
type inputWait struct {
	req      InputRequest
	payload  []byte   // with Config.Shared: req.Payload, encoded
	answered bool     // set under Engine.mu when reply holds the answer
	reply    chan any // capacity 1
}

// ID returns the task's ID.
func (r *Run) ID() string { return r.t.key.id }

// SetStatusMessage sets the task's status message ([Task.StatusMessage]).
// Only work sets it; the engine leaves the last one in place when it ends
// the task.
func (r *Run) SetStatusMessage(msg string) {
	e, t := r.e, r.t
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.status.Terminal() {
		return
	}
	t.msg = msg
	t.updatedAt = time.Now()
	e.notifyLocked(t)
}

// SetProgress records a progress report (total 0 = unknown); a non-empty
// msg also becomes the status message.
func (r *Run) SetProgress(progress, total float64, msg string) {
	e, t := r.e, r.t
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.status.Terminal() {
		return
	}
	t.progress, t.total = progress, total
	if msg != "" {
		t.msg = msg
	}
	t.updatedAt = time.Now()
	e.notifyLocked(t)
}

// RequestInput asks whoever holds the task for input and blocks until it is
// answered. The task is input_required while at least one request is
// pending and goes back to working when the last one is answered or
// withdrawn. If ctx or the task ends first, the request is withdrawn and
// RequestInput returns the cause: [ErrCancelled] or [ErrClosed] when the task
// was cancelled or the engine closed, [ErrDeadline] when the run time limit
// (or TTL) passed, or else ctx's own [context.Cause]. It returns
// [ErrTooManyInputs] when MaxPendingInputs requests are already pending, and
// [ErrTerminal] if the task ended otherwise (a stray call after the work
// returned).
func (r *Run) RequestInput(ctx context.Context, payload any) (any, error) {
	e, t := r.e, r.t
	var encoded []byte
	if e.cfg.Shared != nil {
		var err error
		if encoded, err = e.cfg.Codec.Encode(KindInput, payload); err != nil {
			return nil, fmt.Errorf("%w: encode input: %w", ErrShared, err)
		}
	}
	e.mu.Lock()
	if t.status.Terminal() {
		e.mu.Unlock()
		return nil, t.endCause()
	}
	if len(t.inputs) >= e.cfg.MaxPendingInputs {
		e.mu.Unlock()
		return nil, ErrTooManyInputs
	}
	t.inputSeq++
	w := &inputWait{
		req:     InputRequest{ID: strconv.Itoa(t.inputSeq), Payload: payload},
		payload: encoded,
		reply:   make(chan any, 1),
	}
	t.inputs = append(t.inputs, w)
	now := time.Now()
	if t.status == StatusWorking {
		_ = e.setStatusLocked(t, StatusInputRequired, now) // legal: working → input_required
	} else {
		t.updatedAt = now
		e.notifyLocked(t)
	}
	taskCtx := t.ctx
	e.mu.Unlock()

	select {
	case v := <-w.reply:
		return v, nil
	case <-ctx.Done():
	case <-taskCtx.Done():
	}
	// The task's end wins over ctx's own cause: ctx is usually the task's
	// context or derives from it, so both are done, and select would pick
	// either (at the run time limit, context.DeadlineExceeded or ErrDeadline).
	err := context.Cause(ctx)
	if taskCtx.Err() != nil {
		err = causeOf(taskCtx)
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if w.answered { // the answer won the race
		return <-w.reply, nil
	}
	if i := slices.Index(t.inputs, w); i >= 0 {
		t.inputs = slices.Delete(t.inputs, i, i+1)
		e.resumeLocked(t, time.Now())
	}
	return nil, err
}

// endCause is what RequestInput returns on a terminal task: the reason it
// was stopped, or ErrTerminal if its work already returned.
func (t *task) endCause() error {
	if t.status == StatusCancelled || t.outcome.Err == ErrDeadline {
		return t.outcome.Err
	}
	return ErrTerminal
}

// causeOf maps the cause of a task context's end to the error work sees.
func causeOf(ctx context.Context) error {
	if err := context.Cause(ctx); err != context.DeadlineExceeded {
		return err
	}
	return ErrDeadline
}

// resumeLocked puts an input_required task with no pending request back to
// working.
func (e *Engine) resumeLocked(t *task, now time.Time) {
	if len(t.inputs) == 0 && t.status == StatusInputRequired {
		_ = e.setStatusLocked(t, StatusWorking, now) // legal: input_required → working
		return
	}
	t.updatedAt = now
	e.notifyLocked(t)
}

// PendingInput returns the input requests of owner's task id that await an
// answer, oldest first (none once the task is terminal). ctx bounds the
// read of another replica's task.
func (e *Engine) PendingInput(ctx context.Context, owner, id string) ([]InputRequest, error) {
	e.mu.Lock()
	t, err := e.lookupLocked(owner, id, time.Now())
	if err != nil {
		e.mu.Unlock()
		if e.isRemote(err) {
			reqs, err := e.pendingRemote(ctx, owner, id)
			return reqs, callerErr(ctx, err)
		}
		return nil, err
	}
	defer e.mu.Unlock()
	reqs := make([]InputRequest, len(t.inputs))
	for i, w := range t.inputs {
		reqs[i] = w.req
	}
	return reqs, nil
}

// Answer delivers answer to the pending input request requestID of owner's
// task id, unblocking the work's RequestInput. It returns ErrNotFound for an
// unknown task and ErrNoSuchInput when no such request is pending (already
// answered, withdrawn, or the task is terminal). ctx bounds the request to
// the replica running another replica's task.
func (e *Engine) Answer(ctx context.Context, owner, id, requestID string, answer any) error {
	e.mu.Lock()
	t, err := e.lookupLocked(owner, id, time.Now())
	if err != nil {
		e.mu.Unlock()
		if e.isRemote(err) {
			return callerErr(ctx, e.answerRemote(ctx, owner, id, requestID, answer))
		}
		return err
	}
	defer e.mu.Unlock()
	i := slices.IndexFunc(t.inputs, func(w *inputWait) bool { return w.req.ID == requestID })
	if i < 0 {
		return ErrNoSuchInput
	}
	w := t.inputs[i]
	t.inputs = slices.Delete(t.inputs, i, i+1)
	w.answered = true
	w.reply <- answer // capacity 1, sent once
	e.resumeLocked(t, time.Now())
	return nil
}
