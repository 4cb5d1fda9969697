package abi

import (
	"context"
	"encoding/json"
	"errors"
)

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

// Asker is implemented by the [Events] of calls whose client may be asked
// for a message from its model and for its roots (ABI 1.2: the sample and
// roots host functions). Events without it answer both with
// [ElicitUnsupported]. Errors are as [Events.Elicit]'s: errors.Is
// errors.ErrUnsupported when the client cannot be asked, [ErrElicitLimit]
// when a limit refused the request, [ErrBadClientRequest] when the
// request is not one the client would take.
type Asker interface {
	// Sample sends req (sampling/createMessage params) and returns the
	// client's result. key is the question's input key ("": the host
	// names it; see [ElicitRequest.Key]).
	Sample(ctx context.Context, key string, req json.RawMessage) (json.RawMessage, error)
	// Roots returns the client's roots/list result; key as Sample's.
	Roots(ctx context.Context, key string) (json.RawMessage, error)
}

// ErrBadClientRequest is wrapped by an [Asker] error for a request the
// client would refuse ([ElicitBadRequest]).
var ErrBadClientRequest = errors.New("abi: not a valid request for the client")

// TaskBeginner is implemented by the [Events] of calls that can become a
// task when their tool calls the begin_task host function (ABI 1.1). Events
// without it answer begin_task with 0: the call stays what it is.
type TaskBeginner interface {
	// BeginTask makes the call a task, if it can be one, and reports
	// whether it now is one (true also when it already was).
	BeginTask() bool
}
