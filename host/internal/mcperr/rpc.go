package mcperr

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

// CodeLimit is the application-defined JSON-RPC error code for "limit
// reached" (task store full, too many running tasks for this requestor).
const CodeLimit = -32000

// RPC is a JSON-RPC error with code and the message format words.
func RPC(code int64, format string, args ...any) *jsonrpc.Error {
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

// MethodNotFound is a -32601 error whose message, worded by format,
// survives go-sdk's encoding.
func MethodNotFound(format string, args ...any) error {
	return &methodNotFound{msg: fmt.Sprintf(format, args...)}
}

// Engine maps a taskengine error to a JSON-RPC error.
func Engine(err error, id string) error {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return rpc
	case errors.Is(err, taskengine.ErrNotFound):
		return RPC(jsonrpc.CodeInvalidParams, "task not found: %q (unknown, expired, or not yours)", id)
	case errors.Is(err, taskengine.ErrBadCursor):
		return RPC(jsonrpc.CodeInvalidParams, "invalid cursor")
	case errors.Is(err, taskengine.ErrOwnerLimit):
		return RPC(CodeLimit, "too many tasks running or queued for this client; wait for one to finish or cancel one")
	case errors.Is(err, taskengine.ErrFull):
		return RPC(CodeLimit, "the server holds as many tasks as it may; try again later")
	case errors.Is(err, taskengine.ErrClosed):
		return RPC(jsonrpc.CodeInternalError, "the server is shutting down")
	case errors.Is(err, taskengine.ErrShared): // before the context errors: the store's own deadline is one
		return RPC(jsonrpc.CodeInternalError, "the task store is unavailable; try again later")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return RPC(jsonrpc.CodeInternalError, "internal error")
}

// Params that do not decode are refused by go-sdk before any of our code
// runs, with encoding/json's wording: Go type and field names ("unmarshaling
// … into a *mcp.CallToolParamsRaw: json: cannot unmarshal number into Go
// struct field …"). Both transports pass every outgoing JSON-RPC error
// through clientRPC, which words those in the client's terms.
var (
	goDecodeRe = regexp.MustCompile(`^handling '([^']+)': .*unmarshaling .* into a \*?[\w.]+: `)
	goFieldRe  = regexp.MustCompile(`cannot unmarshal .* into Go struct field [\w.]*?\.?(\w+) of type (\S+)`)
	goValueRe  = regexp.MustCompile(`cannot unmarshal .* into Go value of type`)
	goishRe    = regexp.MustCompile(`\*[a-z]\w*\.[A-Za-z]|\bGo (struct field|value of type)\b|\binterface \{\}|\bmap\[`)
)

// ClientMessage rewrites msg when it is worded with Go internals.
func ClientMessage(msg string) string {
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

// RefusedAnswer is the -32602 a 2026-07-28 request gets for an
// answer that does not fit its question, naming the answer's key.
func RefusedAnswer(a *mcpevents.RefusedAnswer) error {
	return RPC(jsonrpc.CodeInvalidParams, "inputResponses[%s]: %v", strconv.Quote(a.Key), a.Err)
}

// Conn is what the client reads for an error its session's
// connection writes (mcpconn.Options.Word): a request refused as it was
// read, or any error response.
func Conn(err error) *jsonrpc.Error {
	switch {
	case errors.Is(err, mcpconn.ErrIDInFlight):
		return RPC(jsonrpc.CodeInvalidRequest, "invalid request: a request with this ID is still in flight on the session")
	case errors.Is(err, mcpconn.ErrTooManyInFlight):
		return RPC(jsonrpc.CodeInvalidRequest, "invalid request: more than %d requests in flight on the session", mcpconn.MaxInFlight)
	}
	return clientRPC(err)
}

// clientRPC is err as the client receives it: the JSON-RPC code go-sdk
// would send, and a message in the client's terms. An error that carries
// no JSON-RPC error is not meant for the client: it becomes "internal
// error" (a cancelled request says so).
func clientRPC(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we) && err == error(we):
		return &jsonrpc.Error{Code: we.Code, Message: ClientMessage(we.Message), Data: we.Data}
	case errors.As(err, &we):
		// go-sdk wraps its own errors ("handling 'x': invalid params: …").
		return &jsonrpc.Error{Code: we.Code, Message: ClientMessage(err.Error()), Data: we.Data}
	case errors.Is(err, context.Canceled):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the request was cancelled"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}
