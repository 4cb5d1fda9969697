package mcperr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/wasmtask/wasmtask/taskengine"
)

// FailureKind says why a call ended without a result, in the terms the
// client's message is worded from.
type FailureKind int

// Kinds of [Failure].
const (
	FailInternal       FailureKind = iota // a bug or an unexpected error; details only in the log
	FailBusy                              // admission refused: the tool (or server) runs and queues its maximum
	FailArguments                         // the arguments do not match the tool's input schema
	FailTimeout                           // the call's wall-clock limit passed
	FailCanceled                          // the caller or the task's cancel ended it
	FailOutOfMemory                       // the guest needed more memory than its limit
	FailCrashed                           // the guest trapped, exited non-zero or could not start
	FailBadOutput                         // the guest's answer is not a valid result
	FailOutputTooLarge                    // the guest's answer passed the output limit
	FailRemoved                           // the tool's module was removed or replaced while the call ran
	FailShutdown                          // the server is shutting down
	FailOverBudget                        // one call of the tool needs more memory than the server's whole budget
)

// kindNames are the kinds' names in metrics and logs.
var kindNames = [...]string{
	FailInternal:       "internal",
	FailBusy:           "busy",
	FailArguments:      "invalid_arguments",
	FailTimeout:        "timeout",
	FailCanceled:       "cancelled",
	FailOutOfMemory:    "out_of_memory",
	FailCrashed:        "crashed",
	FailBadOutput:      "bad_output",
	FailOutputTooLarge: "output_too_large",
	FailRemoved:        "removed",
	FailShutdown:       "shutdown",
	FailOverBudget:     "over_budget",
}

// String is the kind's name in metrics and logs.
func (k FailureKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "internal"
}

// Failure is a call that ended without a result, as the host's catalog
// reports it to mcpserver. Detail carries facts for the client (a limit, an
// exit code, the schema validator's finding) and Stderr the tail of the
// tool's own stderr; the wording around them is decided here. Err is the
// full error, for the server log and for errors.Is/As by Go callers.
type Failure struct {
	Kind   FailureKind
	Detail string
	Stderr string
	Err    error
}

func (f *Failure) Error() string {
	if f.Err != nil {
		return f.Err.Error()
	}
	return f.Detail
}

func (f *Failure) Unwrap() error { return f.Err }

// maxStderrInText bounds the stderr tail quoted to a client.
const maxStderrInText = 512

// FailureText is the text of the tool error a failed call of tool answers
// with.
func FailureText(tool string, err error) string {
	return FailureTextOf(fmt.Sprintf("tool %q", tool), err)
}

// FailureTextOf is the text of a failure of what: a tool, a resource, a
// prompt ("tool \"x\"").
func FailureTextOf(what string, err error) string {
	if errors.Is(err, taskengine.ErrReplicaLost) {
		return fmt.Sprintf("the server running %s stopped before the call finished; call it again", what)
	}
	var f *Failure
	if !errors.As(err, &f) {
		switch {
		case errors.Is(err, taskengine.ErrCancelled), errors.Is(err, context.Canceled):
			f = &Failure{Kind: FailCanceled}
		case errors.Is(err, taskengine.ErrDeadline), errors.Is(err, context.DeadlineExceeded):
			f = &Failure{Kind: FailTimeout}
		case errors.Is(err, taskengine.ErrClosed):
			f = &Failure{Kind: FailShutdown}
		case errors.Is(err, taskengine.ErrTooLarge):
			f = &Failure{Kind: FailOutputTooLarge, Detail: "more than the server can keep for this task's result (its own limit, or the result store is full)"}
		default:
			f = &Failure{Kind: FailInternal}
		}
	}
	var msg string
	switch f.Kind {
	case FailBusy:
		msg = what + " is busy"
	case FailArguments:
		msg = "invalid arguments for " + what
	case FailTimeout:
		msg = what + " ran out of time"
	case FailCanceled:
		msg = "the call of " + what + " was cancelled"
	case FailOutOfMemory:
		msg = what + " ran out of memory"
	case FailCrashed:
		msg = what + " failed"
	case FailBadOutput:
		msg = what + " returned an invalid result"
	case FailOutputTooLarge:
		msg = what + " returned a result that is too large"
	case FailRemoved:
		msg = what + " was removed or replaced while the call ran"
	case FailShutdown:
		msg = "the server is shutting down"
	case FailOverBudget:
		msg = what + " cannot run on this server"
	default:
		return what + " failed with an internal error (the server log has the details)"
	}
	if f.Detail != "" {
		msg += ": " + f.Detail
	}
	if s := strings.TrimSpace(f.Stderr); s != "" {
		if len(s) > maxStderrInText {
			s = "…" + s[len(s)-maxStderrInText:]
		}
		msg += "; its stderr ends: " + s
	}
	return msg
}

// TaskEndText is the status message of a task that ended with err, for a
// task of tool.
func TaskEndText(tool string, err error) string {
	switch {
	case errors.Is(err, taskengine.ErrCancelled):
		return "cancelled by the requestor"
	case errors.Is(err, taskengine.ErrDeadline):
		return "the task's time to live ran out before it finished"
	case errors.Is(err, taskengine.ErrClosed):
		return "the server shut down before the task finished"
	case errors.Is(err, taskengine.ErrReplicaLost):
		return "the server running this task stopped before it finished; start it again"
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc.Message
	}
	return FailureText(tool, err)
}
