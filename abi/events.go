package abi

import "context"

// Events is what a running tool reports or asks through the optional host
// imports (progress, status, log, elicit). The host implements it once per
// call, for the client that made the call, and hands it to the runtime
// unchanged: it is the one interface between a guest and its client.
//
// Progress, Status and Log never block for long and may drop what the
// client cannot receive. Elicit blocks until the user answers or ctx is
// done; it returns an error wrapping [errors.ErrUnsupported] when nobody can
// answer (the guest then gets [ElicitUnsupported]) and one wrapping
// [ErrElicitLimit] when a limit refused the question ([ElicitLimit]); the
// guest gets ElicitUnsupported for any other error. Implementations are safe
// for concurrent use.
type Events interface {
	// Progress reports progress (and total, 0 when unknown) with an
	// optional message.
	Progress(progress, total float64, message string)
	// Status sets the status message of the task running the call; plain
	// calls ignore it.
	Status(message string)
	// Log sends a log message at one of the Log* levels.
	Log(level int32, message string)
	// Elicit asks the user for input described by req and waits for the
	// answer.
	Elicit(ctx context.Context, req ElicitRequest) (ElicitReply, error)
}

// TaskBeginner is implemented by the [Events] of calls that can become a
// task when their tool calls the begin_task host function (ABI 1.1). Events
// without it answer begin_task with 0: the call stays what it is.
type TaskBeginner interface {
	// BeginTask makes the call a task, if it can be one, and reports
	// whether it now is one (true also when it already was).
	BeginTask() bool
}
