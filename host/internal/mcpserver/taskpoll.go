package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Task polls over Streamable HTTP: a POST of a 2025-11-25 session that
// holds one tasks/get, one tasks/cancel, or one tasks/result of a task that
// has already ended is answered here, as one JSON body, instead of by
// go-sdk's handler (which would decode the body several more times and
// open an SSE stream for an answer that is ready). The answer is the one
// the task handlers give on go-sdk's path: the same handlers run, with the
// same requestor, ownership and audit. Anything else, and anything that
// would make go-sdk refuse or treat the POST differently, goes to go-sdk,
// which stays the reference: a body that is not exactly
// {"jsonrpc":"2.0","id":…,"method":…,"params":{"taskId":"…"}}, a session
// this server has not seen served by go-sdk lately (see sdkSeen), a
// header go-sdk would refuse, a tasks/result that would wait.

// taskPoll is a request the front may answer itself.
type taskPoll struct {
	id     json.RawMessage // the request's ID, as the client wrote it
	method string
	taskID string
}

// parseTaskPoll reads body as a task poll. It accepts only the exact
// shape above: members named exactly (go-sdk's decoder is case-sensitive),
// none repeated, an ID that is a string or an integer written as Go would
// write it back, no _meta (a request's _meta may name another protocol
// version).
func parseTaskPoll(body []byte) (taskPoll, bool) {
	msg, err := members(body, "jsonrpc", "id", "method", "params")
	if err != nil || len(msg) != 4 {
		return taskPoll{}, false
	}
	var version, method string
	if json.Unmarshal(msg["jsonrpc"], &version) != nil || version != "2.0" ||
		json.Unmarshal(msg["method"], &method) != nil {
		return taskPoll{}, false
	}
	switch method {
	case methodTasksGet, methodTasksCancel, methodTasksResult:
	default:
		return taskPoll{}, false
	}
	id, ok := canonicalID(msg["id"])
	if !ok {
		return taskPoll{}, false
	}
	params, err := members(msg["params"], "taskId")
	if err != nil || len(params) != 1 {
		return taskPoll{}, false
	}
	var taskID string
	if json.Unmarshal(params["taskId"], &taskID) != nil || taskID == "" {
		return taskPoll{}, false
	}
	return taskPoll{id: id, method: method, taskID: taskID}, true
}

// canonicalID returns raw if it is a JSON-RPC ID that reads and writes
// back byte for byte: a string without escapes, or a decimal int64.
func canonicalID(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) >= 2 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil || strconv.Quote(s) != string(raw) {
			return nil, false
		}
		return raw, true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != string(raw) {
		return nil, false
	}
	return raw, true
}

// sdkAcceptsPOST reports whether go-sdk's handler would let a session's
// POST through its checks before the session lookup, as it would write
// the answer (JSON or an event stream, both acceptable to the client).
func (s *Server) sdkAcceptsPOST(r *http.Request) bool {
	if !s.sdkAccepts(r) || len(r.Header.Values("Last-Event-ID")) > 0 {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	jsonOK, streamOK := false, false
	for _, v := range r.Header.Values("Accept") {
		for raw := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// pollSession returns the session sid when go-sdk certainly still serves
// it for this request's user: we have seen it (our record outlives a
// session go-sdk ended only by its idle timeout, which runs from its last
// request), a request of it went through go-sdk less than half the idle
// timeout ago (so go-sdk's timer, which a request answered here does not
// reset, cannot have fired), and it was not deleted (a DELETE removes the
// record before go-sdk sees it).
func (s *Server) pollSession(sid, user string, now time.Time) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sid]
	if sess == nil || sess.stdio != nil || sess.sdk == nil || sess.user != user || sess.ctx.Err() != nil || s.closed {
		return nil
	}
	if t := s.cfg.SessionTimeout; t > 0 && (sess.sdkSeen.IsZero() || now.Sub(sess.sdkSeen) >= t/2) {
		return nil
	}
	return sess
}

// sawSDKRequest records that a request of session sid has just been
// served by go-sdk (which restarts its idle timer when one ends).
func (s *Server) sawSDKRequest(sid string) {
	now := time.Now()
	s.mu.Lock()
	if sess := s.sessions[sid]; sess != nil {
		sess.sdkSeen = now
	}
	s.mu.Unlock()
}

// answerTaskPoll answers a task poll of session sid (see the top of this
// file) and reports true, or writes nothing and reports false: then
// go-sdk serves the POST.
func (s *Server) answerTaskPoll(w http.ResponseWriter, r *http.Request, sid string, body []byte) bool {
	p, ok := parseTaskPoll(body)
	if !ok || !s.sdkAcceptsPOST(r) {
		return false
	}
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	sess := s.pollSession(sid, user, time.Now())
	if sess == nil {
		return false
	}
	rq := requestor{sess: sess, ss: sess.sdk, user: user}
	if p.method == methodTasksResult {
		// Only a task that has ended: a waiting tasks/result delivers the
		// task's input requests and progress on go-sdk's stream.
		t, err := s.cfg.Engine.Get(rq.owner(), p.taskID)
		if err != nil || !t.Status.Terminal() {
			return false
		}
	}
	ctx := context.WithValue(r.Context(), requestorKey{}, rq)
	res, err := s.runTaskPoll(ctx, p)
	out := pollResponse{JSONRPC: "2.0", ID: p.id}
	if err != nil {
		out.Error = wireError(err)
	} else {
		out.Result = res
	}
	b, err := json.Marshal(out)
	if err != nil {
		s.log.Error("encoding a task poll's answer", "method", p.method, "err", err)
		b, _ = json.Marshal(pollResponse{JSONRPC: "2.0", ID: p.id, Error: rpcError(jsonrpc.CodeInternalError, "internal error")})
	}
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return true
}

// runTaskPoll runs the task handler of p, recovering a panic as the
// receiving middleware does on go-sdk's path.
func (s *Server) runTaskPoll(ctx context.Context, p taskPoll) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic while handling request", "method", p.method, "panic", r, "stack", string(debug.Stack()))
			res, err = nil, rpcError(jsonrpc.CodeInternalError, "internal error")
		}
	}()
	params := &taskIDParams{TaskID: p.taskID}
	switch p.method {
	case methodTasksGet:
		return nilIfErr(s.tasksGet(ctx, nil, params))
	case methodTasksCancel:
		return nilIfErr(s.tasksCancel(ctx, nil, params))
	default:
		return nilIfErr(s.tasksResult(ctx, nil, params))
	}
}

// nilIfErr drops a handler's result when it failed, so that no typed nil
// pointer reaches the encoder.
func nilIfErr[T any](res *T, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}

type pollResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// wireError is err as go-sdk writes a handler's error, with the message
// reworded as the front rewords go-sdk's answers (errorRewriter).
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
	out.Message = clientRPCMessage(out.Message)
	return &out
}
