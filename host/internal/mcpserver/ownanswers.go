package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/mcpconn"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
)

// The requests a 2025-11-25 session sends most — tools/call, tasks/get,
// tasks/cancel, and tasks/result of a task that has ended — are answered
// by this layer as they are read, through the same handlers go-sdk would
// call, instead of being handed to go-sdk: go-sdk decodes each request's
// params and _meta several times with a fresh 32 KiB decoder buffer each
// (RATIONALE: "Why are the commonest requests answered before go-sdk
// sees them?"). Only requests go-sdk would read the same way are taken:
// an initialized session, params read exactly (mcpconn.CallParams,
// mcpconn.TaskParams). Their messages (progress, logs, questions) travel
// on their own request's stream, and a notifications/cancelled naming one
// ends it (the connection tracks them: mcpconn.Conn.Track), as go-sdk
// does for the requests it serves.

// answerOwn answers req itself when it can, in a goroutine the Server
// owns, and reports whether it took it.
func (s *Server) answerOwn(sess *session, req *jsonrpc.Request) bool {
	if !req.IsCall() {
		return false // a notifications/cancelled naming one of ours: the connection ends it
	}
	s.mu.Lock()
	ss := sess.ss
	s.mu.Unlock()
	if ss != nil && ss.InitializeParams() == nil && req.Method != "initialize" && req.Method != "ping" && !speaksModern(req.Params) {
		// MCP's lifecycle: a 2025-11-25 session's first request is
		// initialize. Said here in the client's terms.
		_ = sess.conn.Write(sess.ctx, &jsonrpc.Response{ID: req.ID, Error: mcperr.RPC(jsonrpc.CodeInvalidRequest,
			"invalid request: %q before initialize: a session starts with an initialize request (then notifications/initialized)", req.Method)})
		return true
	}
	switch req.Method {
	case methodCallTool, methodTasksGet, methodTasksCancel, methodTasksResult, methodReadResource, methodGetPrompt:
	default:
		return false
	}
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().ProtocolVersion >= modernVersion {
		return false
	}
	user := sess.user
	if ex, _ := req.Extra.(*mcp.RequestExtra); ex != nil && ex.TokenInfo != nil {
		user = ex.TokenInfo.UserID
	}
	rq := requestor{sess: sess, ss: ss, user: user}
	var call *mcp.CallToolParamsRaw
	var task *mcpwire.TaskIDParams
	var read *mcp.ReadResourceParams
	var prompt *mcp.GetPromptParams
	switch req.Method {
	case methodCallTool:
		if call = mcpconn.CallParams(req.Params); call == nil {
			return false
		}
	case methodReadResource:
		if read = mcpconn.ReadParams(req.Params); read == nil {
			return false
		}
	case methodGetPrompt:
		if prompt = mcpconn.PromptParams(req.Params); prompt == nil {
			return false
		}
	default:
		if task = mcpconn.TaskParams(req.Params); task == nil {
			return false
		}
		if req.Method == methodTasksResult {
			// Only a task this replica holds that has ended: a waiting
			// tasks/result is go-sdk's to serve, like any long request,
			// and so is one the shared store must answer (this runs on
			// the session's read loop, which must not wait).
			t, ok := s.cfg.Engine.Local(rq.owner(), task.TaskID)
			if !ok || !t.Status.Terminal() {
				return false
			}
		}
	}
	ctx, cancel := context.WithCancel(sess.ctx)
	if !sess.conn.Track(req.ID, cancel) {
		cancel()
		return false // an ID in flight twice: go-sdk decides
	}
	ctx = sess.conn.WithRequest(ctx, extraOf(req))
	ctx = context.WithValue(ctx, requestorKey{}, rq)
	s.wg.Go(func() {
		defer sess.conn.Untrack(req.ID)
		defer cancel()
		res, err := s.runOwn(ctx, rq, req.Method, ownParams{call, task, read, prompt})
		resp := &jsonrpc.Response{ID: req.ID}
		if err != nil {
			resp.Error = wireError(err)
		} else if resp.Result, err = mcpwire.Marshal(res); err != nil {
			s.log.Error("encoding an answer", "method", req.Method, "err", err)
			resp.Result, resp.Error = nil, mcperr.RPC(jsonrpc.CodeInternalError, "internal error")
		}
		_ = sess.conn.Write(context.Background(), resp)
	})
	return true
}

// speaksModern reports whether a request's params name a protocol version
// of 2026-07-28 or later in their _meta: such a request stands alone,
// without initialize.
func speaksModern(params json.RawMessage) bool {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	return eraOf(p.Meta).modern
}

func extraOf(req *jsonrpc.Request) *mcp.RequestExtra {
	ex, _ := req.Extra.(*mcp.RequestExtra)
	return ex
}

// runOwn runs the handler of a request answered here, recovering a panic
// as the receiving middleware does on go-sdk's path.
func (s *Server) runOwn(ctx context.Context, rq requestor, method string, p ownParams) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic while handling request", "method", method, "panic", r, "stack", string(debug.Stack()))
			res, err = nil, mcperr.RPC(jsonrpc.CodeInternalError, "internal error")
		}
	}()
	switch method {
	case methodCallTool:
		return s.callTool(ctx, rq, p.call)
	case methodReadResource:
		return s.answerRead(ctx, rq, p.read)
	case methodGetPrompt:
		return s.answerPrompt(ctx, rq, p.prompt)
	case methodTasksGet:
		return nilIfErr(s.tasksGet(ctx, nil, p.task))
	case methodTasksCancel:
		return nilIfErr(s.tasksCancel(ctx, nil, p.task))
	default:
		return nilIfErr(s.tasksResult(ctx, nil, p.task))
	}
}

// ownParams are the params of a request answered here, as read for its
// method.
type ownParams struct {
	call   *mcp.CallToolParamsRaw
	task   *mcpwire.TaskIDParams
	read   *mcp.ReadResourceParams
	prompt *mcp.GetPromptParams
}

// nilIfErr drops a handler's result when it failed, so that no typed nil
// pointer reaches the encoder.
func nilIfErr[T any](res *T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}

// wireError is err as go-sdk writes a handler's error.
func wireError(err error) *jsonrpc.Error {
	var out jsonrpc.Error
	if we, ok := err.(*jsonrpc.Error); ok {
		out = *we
	} else {
		out.Message = err.Error()
		var wrapped *jsonrpc.Error
		if errors.As(err, &wrapped) {
			out.Code = wrapped.Code
		}
	}
	return &out
}
