package taskengine

import (
	"context"
	"errors"
	"fmt"
)

// Status is the state of a task. The values are the MCP task status strings.
type Status string

// The task states. A task starts [StatusWorking]; it moves between working and
// [StatusInputRequired] while it runs, and ends in exactly one of the three
// terminal states, which never change afterwards.
const (
	StatusWorking       Status = "working"
	StatusInputRequired Status = "input_required"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCancelled     Status = "cancelled"
)

// Terminal reports whether s is completed, failed or cancelled.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// CanBecome reports whether a task in state s may move to state next:
// working ↔ input_required, and either of them to a terminal state. Nothing
// leaves a terminal state, and no state moves to itself.
func (s Status) CanBecome(next Status) bool {
	switch s {
	case StatusWorking:
		return next == StatusInputRequired || next.Terminal()
	case StatusInputRequired:
		return next == StatusWorking || next.Terminal()
	default:
		return false
	}
}

// Errors returned by the engine. Callers branch on them with [errors.Is].
var (
	// ErrNotFound: no such task for this owner. A task of another owner and
	// an expired task give the same error.
	ErrNotFound = errors.New("taskengine: task not found")
	// ErrTerminal: the task has already completed, failed or been cancelled.
	ErrTerminal = errors.New("taskengine: task already terminal")
	// ErrBadCursor: a List cursor that this engine did not issue to this owner.
	ErrBadCursor = errors.New("taskengine: invalid cursor")
	// ErrFull: the engine holds Config.MaxTasks tasks and the submitting
	// owner has no finished task of its own to give up; other owners'
	// tasks are never evicted to make room.
	ErrFull = errors.New("taskengine: task store full")
	// ErrOwnerLimit: the owner already has its MaxRunning running tasks, or
	// holds its MaxTasks tasks and all of them are running (see
	// [OwnerLimits]).
	ErrOwnerLimit = errors.New("taskengine: too many running tasks for owner")
	// ErrClosed: the engine has been closed.
	ErrClosed = errors.New("taskengine: engine closed")
	// ErrNoSuchInput: Answer named an input request that is not pending.
	ErrNoSuchInput = errors.New("taskengine: no such pending input request")
	// ErrIllegalTransition: a state change the lifecycle forbids; it is
	// refused and the task keeps its state.
	ErrIllegalTransition = errors.New("taskengine: illegal status transition")

	// ErrCancelled is the Outcome.Err of a cancelled task and the
	// [context.Cause] of its work's context; RequestInput returns it when the
	// task is cancelled.
	ErrCancelled = errors.New("taskengine: task cancelled")
	// ErrPanic wraps the value of a panic in work; such a task fails.
	ErrPanic = errors.New("taskengine: work panicked")
	// ErrTooLarge is the Outcome.Err of a task whose outcome the engine
	// cannot keep: its Size alone exceeds the owner's MaxResultBytes or the
	// engine's, or other owners' results leave too little of the engine's
	// MaxResultBytes (the server's result store is full). The value is
	// dropped and the task fails.
	ErrTooLarge = errors.New("taskengine: result too large to keep")
	// ErrTooManyInputs: RequestInput while MaxPendingInputs are pending.
	ErrTooManyInputs = errors.New("taskengine: too many pending input requests")
	// ErrTooManyWatchers: Watch while MaxWatchersPerTask subscriptions exist.
	ErrTooManyWatchers = errors.New("taskengine: too many watchers for task")
)

// ErrDeadline is the Outcome.Err and [Task.Err] of a task whose run time
// limit, min(Config.MaxRunTime, granted TTL), passed before its work
// returned, and what [Run.RequestInput] returns then. It wraps
// [context.DeadlineExceeded], so errors.Is(err, context.DeadlineExceeded)
// holds for it too.
var ErrDeadline = fmt.Errorf("taskengine: run time limit reached: %w", context.DeadlineExceeded)
