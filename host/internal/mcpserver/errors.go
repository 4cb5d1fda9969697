package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/wasmtask/wasmtask/host/internal/mcpconn"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/taskengine"
)

// This file decides the text a client receives when something fails: the
// JSON-RPC errors, the tool errors (isError results) and the status
// messages of tasks that ended with an error. No other room writes client
// text; they return errors, and their full text goes to the server log.

// Application-defined JSON-RPC error code for "limit reached" (task store
// full, too many running tasks for this requestor).
const codeLimit = -32000

func rpcError(code int64, format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// methodNotFound is a -32601 error that keeps its message. go-sdk replaces
// the message of any error that errors.Is jsonrpc2's ErrMethodNotFound (a
// code comparison) with `method not found: "tools/call"`; this type is not
// Is-equal to it, but errors.As still finds its code when go-sdk encodes it.
type methodNotFound struct{ msg string }

func (e *methodNotFound) Error() string { return e.msg }

func (e *methodNotFound) As(target any) bool {
	if p, ok := target.(**jsonrpc.Error); ok {
		*p = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: e.msg}
		return true
	}
	return false
}

func errMethodNotFound(format string, args ...any) error {
	return &methodNotFound{msg: fmt.Sprintf(format, args...)}
}

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

// Failure is a call that ended without a result, as a [Catalog] reports it.
// Detail carries facts for the client (a limit, an exit code, the schema
// validator's finding) and Stderr the tail of the tool's own stderr; the
// wording around them is decided here. Err is the full error, for the
// server log and for errors.Is/As by Go callers.
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

// failureText is the text of the tool error a failed call of tool answers
// with.
func failureText(tool string, err error) string {
	return failureTextOf(fmt.Sprintf("tool %q", tool), err)
}

// failureTextOf is the text of a failure of what: a tool, a resource, a
// prompt ("tool \"x\"").
func failureTextOf(what string, err error) string {
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

// taskEndText is the status message of a task that ended with err, for a
// task of tool.
func taskEndText(tool string, err error) string {
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
	return failureText(tool, err)
}

// engineError maps a taskengine error to a JSON-RPC error.
func engineError(err error, id string) error {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return rpc
	case errors.Is(err, taskengine.ErrNotFound):
		return rpcError(jsonrpc.CodeInvalidParams, "task not found: %q (unknown, expired, or not yours)", id)
	case errors.Is(err, taskengine.ErrBadCursor):
		return rpcError(jsonrpc.CodeInvalidParams, "invalid cursor")
	case errors.Is(err, taskengine.ErrOwnerLimit):
		return rpcError(codeLimit, "too many tasks running or queued for this client; wait for one to finish or cancel one")
	case errors.Is(err, taskengine.ErrFull):
		return rpcError(codeLimit, "the server holds as many tasks as it may; try again later")
	case errors.Is(err, taskengine.ErrClosed):
		return rpcError(jsonrpc.CodeInternalError, "the server is shutting down")
	case errors.Is(err, taskengine.ErrShared): // before the context errors: the store's own deadline is one
		return rpcError(jsonrpc.CodeInternalError, "the task store is unavailable; try again later")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return rpcError(jsonrpc.CodeInternalError, "internal error")
}

// Params that do not decode are refused by go-sdk before any of our code
// runs, with encoding/json's wording: Go type and field names ("unmarshaling
// … into a *mcp.CallToolParamsRaw: json: cannot unmarshal number into Go
// struct field …"). Both transports pass every outgoing JSON-RPC error
// through clientRPCError, which words those in the client's terms.
var (
	goDecodeRe = regexp.MustCompile(`^handling '([^']+)': .*unmarshaling .* into a \*?[\w.]+: `)
	goFieldRe  = regexp.MustCompile(`cannot unmarshal .* into Go struct field [\w.]*?\.?(\w+) of type (\S+)`)
	goValueRe  = regexp.MustCompile(`cannot unmarshal .* into Go value of type`)
	goishRe    = regexp.MustCompile(`\*[a-z]\w*\.[A-Za-z]|\bGo (struct field|value of type)\b|\binterface \{\}|\bmap\[`)
)

// clientRPCMessage rewrites msg when it is worded with Go internals.
func clientRPCMessage(msg string) string {
	if m := goDecodeRe.FindStringSubmatch(msg); m != nil {
		method := m[1]
		if f := goFieldRe.FindStringSubmatch(msg); f != nil {
			return fmt.Sprintf("invalid params for %s: %q must be %s", method, f[1], jsonKind(f[2]))
		}
		if goValueRe.MatchString(msg) {
			return fmt.Sprintf("invalid params for %s: params must be an object", method)
		}
		return fmt.Sprintf("invalid params for %s", method)
	}
	if strings.Contains(msg, "invalid ID type") {
		return "invalid request: the id must be a string or a number"
	}
	if goishRe.MatchString(msg) {
		return "invalid request"
	}
	return msg
}

// jsonKind names the JSON kind of values a Go type decodes from.
func jsonKind(goType string) string {
	goType = strings.TrimLeft(goType, "*")
	switch {
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

// refusedAnswerError is the -32602 a 2026-07-28 request gets for an
// answer that does not fit its question, naming the answer's key.
func refusedAnswerError(a *mcpevents.RefusedAnswer) error {
	return rpcError(jsonrpc.CodeInvalidParams, "inputResponses[%s]: %v", strconv.Quote(a.Key), a.Err)
}

// connError is what the client reads for an error its session's
// connection writes (mcpconn.Options.Word): a request refused as it was
// read, or any error response.
func connError(err error) *jsonrpc.Error {
	switch {
	case errors.Is(err, mcpconn.ErrIDInFlight):
		return rpcError(jsonrpc.CodeInvalidRequest, "invalid request: a request with this ID is still in flight on the session")
	case errors.Is(err, mcpconn.ErrTooManyInFlight):
		return rpcError(jsonrpc.CodeInvalidRequest, "invalid request: more than %d requests in flight on the session", mcpconn.MaxInFlight)
	}
	return clientRPCError(err)
}

// clientRPCError is err as the client receives it: the JSON-RPC code go-sdk
// would send, and a message in the client's terms. An error that carries
// no JSON-RPC error is not meant for the client: it becomes "internal
// error" (a cancelled request says so).
func clientRPCError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we) && err == error(we):
		return &jsonrpc.Error{Code: we.Code, Message: clientRPCMessage(we.Message), Data: we.Data}
	case errors.As(err, &we):
		// go-sdk wraps its own errors ("handling 'x': invalid params: …").
		return &jsonrpc.Error{Code: we.Code, Message: clientRPCMessage(err.Error()), Data: we.Data}
	case errors.Is(err, context.Canceled):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the request was cancelled"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}
