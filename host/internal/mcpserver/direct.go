package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Requests the HTTP front answers itself. A POST of a 2025-11-25 session
// that holds one of
//
//   - tasks/get, tasks/cancel, or tasks/result of a task that has ended;
//   - tools/call, task-augmented or plain, without _meta (so without a
//     progress token), of a tool whose call can send nothing the session
//     would receive before the result (see streamNeeded)
//
// is answered here, as one JSON body, instead of by go-sdk's handler
// (which would decode the body several more times and open an SSE stream
// for an answer that needs none). The answer is the one go-sdk's path
// gives: the same handlers run, with the same requestor, ownership, audit
// and admission. Anything else, and anything that would make go-sdk refuse
// or treat the POST differently, goes to go-sdk, which stays the
// reference: a body that is not exactly
// {"jsonrpc":"2.0","id":…,"method":…,"params":{…}} with the members named
// above, a session this server has not seen served by go-sdk lately (see
// directSession), a header go-sdk would refuse, a tasks/result that would
// wait, a call whose tool may log or ask on this session.
//
// What go-sdk would do for such a request beyond answering it, the front
// does too: a plain call it answers ends on the client's
// notifications/cancelled (cancelDirect), and go-sdk's idle timer, which
// only runs while no request of the session is in go-sdk's hands, is
// kept from closing the session under a long call (holdSession).

// directRequest is a request the front may answer itself.
type directRequest struct {
	id     json.RawMessage // the request's ID, as the client wrote it
	method string
	taskID string                 // tasks/*
	call   *mcp.CallToolParamsRaw // tools/call, with params.task lifted into _meta as go-sdk's path has it
	isTask bool                   // tools/call: task-augmented
}

// parseDirect reads body as a request the front may answer. It accepts
// only the exact shapes above: members named exactly (go-sdk's decoder is
// case-sensitive), none repeated, an ID that is a string or an integer
// written as Go would write it back, no _meta (a request's _meta may name
// another protocol version, or ask for progress).
func parseDirect(body []byte) (directRequest, bool) {
	if jsonDepth(body, maxSDKDepth) > maxSDKDepth {
		return directRequest{}, false // go-sdk refuses it
	}
	msg, err := members(body, "jsonrpc", "id", "method", "params")
	if err != nil || len(msg) != 4 {
		return directRequest{}, false
	}
	var version, method string
	if json.Unmarshal(msg["jsonrpc"], &version) != nil || version != "2.0" ||
		json.Unmarshal(msg["method"], &method) != nil {
		return directRequest{}, false
	}
	id, ok := canonicalID(msg["id"])
	if !ok {
		return directRequest{}, false
	}
	switch method {
	case methodTasksGet, methodTasksCancel, methodTasksResult:
		params, err := members(msg["params"], "taskId")
		if err != nil || len(params) != 1 {
			return directRequest{}, false
		}
		var taskID string
		if json.Unmarshal(params["taskId"], &taskID) != nil || taskID == "" {
			return directRequest{}, false
		}
		return directRequest{id: id, method: method, taskID: taskID}, true
	case methodCallTool:
		call, isTask, ok := parseDirectCall(msg["params"])
		return directRequest{id: id, method: method, call: call, isTask: isTask}, ok
	}
	return directRequest{}, false
}

// parseDirectCall reads the params of a tools/call the front may answer:
// name, and optionally arguments and task, nothing else. They become what
// go-sdk's path hands the handler: params.task lifted into _meta (the same
// liftTaskParams), the arguments as the lifted params hold them.
func parseDirectCall(raw json.RawMessage) (p *mcp.CallToolParamsRaw, isTask, ok bool) {
	params, err := members(raw, "name", "arguments", "task", "_meta")
	if err != nil || params["name"] == nil || params["_meta"] != nil {
		return nil, false, false
	}
	for k := range params {
		if k != "name" && k != "arguments" && k != "task" {
			return nil, false, false
		}
	}
	p = new(mcp.CallToolParamsRaw)
	if json.Unmarshal(params["name"], &p.Name) != nil {
		return nil, false, false
	}
	if _, has := params["task"]; !has {
		// go-sdk's path re-encodes every tools/call (lift.go), which
		// compacts the arguments: the size limit sees the same bytes.
		p.Arguments = compacted(params["arguments"])
		return p, false, true
	}
	lifted, err := members(liftTaskParams(raw, nil), "name", "arguments", "_meta")
	if err != nil {
		return nil, false, false
	}
	p.Arguments = lifted["arguments"]
	if m := lifted["_meta"]; m != nil {
		if json.Unmarshal(m, &p.Meta) != nil {
			return nil, false, false
		}
	}
	_, isTask = p.Meta[liftedTaskKey]
	return p, isTask, true
}

// compacted is raw without insignificant whitespace, as encoding/json
// writes a RawMessage back.
func compacted(raw json.RawMessage) json.RawMessage {
	if !bytes.ContainsAny(raw, " \t\r\n") {
		return raw
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// maxSDKDepth is the deepest nesting go-sdk's decoder accepts.
const maxSDKDepth = 1000

// canonicalID returns raw if it is a JSON-RPC ID that reads and writes
// back byte for byte: a string without escapes, or a decimal integer
// within ±2^53 (go-sdk reads a number ID as a float64).
func canonicalID(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) >= 2 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil || strconv.Quote(s) != string(raw) {
			return nil, false
		}
		return raw, true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != string(raw) || n > 1<<53 || n < -(1<<53) {
		return nil, false
	}
	return raw, true
}

// rpcID is a JSON-RPC ID as go-sdk reads it from the wire (JSON numbers
// are float64 on the way).
func rpcID(raw json.RawMessage) (jsonrpc.ID, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
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

// directSession returns the session sid when go-sdk certainly still serves
// it for this request's user: we have seen it (our record outlives a
// session go-sdk ended only by its idle timeout, which runs from its last
// request), a request of it went through go-sdk less than half the idle
// timeout ago (so go-sdk's timer, which a request answered here does not
// reset, cannot fire before holdSession's first ping), it was initialized
// (go-sdk refuses other requests before), and it was not deleted (a
// DELETE removes the record before go-sdk sees it).
func (s *Server) directSession(sid, user string, now time.Time) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sid]
	if sess == nil || sess.stdio != nil || sess.sdk == nil || sess.user != user || sess.ctx.Err() != nil || s.closed {
		return nil
	}
	if t := s.cfg.SessionTimeout; t > 0 && (sess.sdkSeen.IsZero() || now.Sub(sess.sdkSeen) >= t/2) {
		return nil
	}
	if sess.sdk.InitializeParams() == nil {
		return nil
	}
	return sess
}

// sdkAnswered records what go-sdk's answer to a request of session sid
// says about the session. A POST it answered with success restarted its
// idle timer when it ended (a GET or a DELETE does not, nor does a
// refusal before the session lookup, so those prove nothing). A 404 says
// go-sdk no longer has the session (closed at its idle timeout, with no
// hook to tell us): our record goes too, so the front never answers for a
// session go-sdk has ended.
func (s *Server) sdkAnswered(sid, method string, status int) {
	switch {
	case status == http.StatusNotFound:
		s.releaseSession(sid)
	case method == http.MethodPost && status/100 == 2:
		now := time.Now()
		s.mu.Lock()
		if sess := s.sessions[sid]; sess != nil {
			sess.sdkSeen = now
		}
		s.mu.Unlock()
	}
}

// errStreamNeeded is callTool's answer to a direct request that it cannot
// answer without a stream: the front hands the POST to go-sdk.
var errStreamNeeded = errors.New("the call may send messages before its result")

// streamNeeded reports whether a plain call of tool by rq could send the
// session anything before its result: a log message once the session set
// a level (any call may log: a line on stderr is one), progress it asked
// for, or a question the client can answer — the last two only when the
// tool can (ToolInfo).
func (s *Server) streamNeeded(rq requestor, tool ToolInfo, token any) bool {
	if rq.sess.logging.Load() {
		return true
	}
	return tool.Progress && token != nil || tool.Asks && rq.canElicit()
}

// answerDirect answers a POST of session sid (see the top of this file)
// and reports true, or writes nothing and reports false: then go-sdk
// serves the POST.
func (s *Server) answerDirect(w http.ResponseWriter, r *http.Request, sid string, body []byte) bool {
	d, ok := parseDirect(body)
	if !ok || !s.sdkAcceptsPOST(r) {
		return false
	}
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	sess := s.directSession(sid, user, time.Now())
	if sess == nil {
		return false
	}
	rq := requestor{sess: sess, ss: sess.sdk, user: user, direct: true}
	if d.method == methodTasksResult {
		// Only a task that has ended: a waiting tasks/result delivers the
		// task's input requests and progress on go-sdk's stream.
		t, err := s.cfg.Engine.Get(r.Context(), rq.owner(), d.taskID)
		if err != nil || !t.Status.Terminal() {
			return false
		}
	}
	ctx := context.WithValue(r.Context(), requestorKey{}, rq)
	if d.method == methodCallTool && !d.isTask {
		var done func()
		ctx, done = s.trackDirect(ctx, sid, d.id)
		defer done()
		defer s.holdSession(r, sid)()
	}
	res, err := s.runDirect(ctx, rq, d)
	if errors.Is(err, errStreamNeeded) {
		return false
	}
	out := directResponse{JSONRPC: "2.0", ID: d.id}
	if err != nil {
		out.Error = wireError(err)
	} else {
		out.Result = res
	}
	b, err := json.Marshal(out)
	if err != nil {
		s.log.Error("encoding an answer", "method", d.method, "err", err)
		b, _ = json.Marshal(directResponse{JSONRPC: "2.0", ID: d.id, Error: rpcError(jsonrpc.CodeInternalError, "internal error")})
	}
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return true
}

// runDirect runs the handler of d, recovering a panic as the receiving
// middleware does on go-sdk's path.
func (s *Server) runDirect(ctx context.Context, rq requestor, d directRequest) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic while handling request", "method", d.method, "panic", r, "stack", string(debug.Stack()))
			res, err = nil, rpcError(jsonrpc.CodeInternalError, "internal error")
		}
	}()
	params := &taskIDParams{TaskID: d.taskID}
	switch d.method {
	case methodCallTool:
		res, err := s.callTool(ctx, rq, d.call)
		if err != nil {
			return nil, err
		}
		return res, nil
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

type directResponse struct {
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

// directCall names a plain tools/call the front is answering: its session
// and its JSON-RPC ID, as a notifications/cancelled names it.
type directCall struct {
	sid string
	id  jsonrpc.ID
}

// trackDirect records a plain call the front answers, so that the
// client's notifications/cancelled for it ends it (as go-sdk ends the
// calls it serves). The record is bounded by the requests in flight
// (enterRequest); done removes it.
func (s *Server) trackDirect(ctx context.Context, sid string, raw json.RawMessage) (_ context.Context, done func()) {
	id, ok := rpcID(raw)
	if !ok {
		return ctx, func() {}
	}
	key := directCall{sid: sid, id: id}
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	_, dup := s.direct[key]
	if !dup { // a client reusing an ID in flight cancels only the first
		s.direct[key] = cancel
	}
	s.mu.Unlock()
	return ctx, func() {
		if !dup {
			s.mu.Lock()
			delete(s.direct, key)
			s.mu.Unlock()
		}
		cancel()
	}
}

var cancelledMethod = []byte(`"notifications/cancelled"`)

// cancelDirect ends the plain call the front answers that a
// notifications/cancelled POST of session sid names, if any, when go-sdk
// would accept the notification (headers, no ID). The POST still goes to
// go-sdk, which ends a call it serves under that ID.
func (s *Server) cancelDirect(sid string, r *http.Request, body []byte) {
	if !bytes.Contains(body, cancelledMethod) || !s.sdkAcceptsPOST(r) || !s.sessionUserMatches(sid, r) {
		return
	}
	msg, err := members(body, "jsonrpc", "id", "method", "params")
	if err != nil || msg["id"] != nil {
		return
	}
	var version, method string
	if json.Unmarshal(msg["jsonrpc"], &version) != nil || version != "2.0" ||
		json.Unmarshal(msg["method"], &method) != nil || method != "notifications/cancelled" {
		return
	}
	params, err := members(msg["params"], "requestId")
	if err != nil {
		return
	}
	id, ok := rpcID(params["requestId"])
	if !ok {
		return
	}
	s.mu.Lock()
	cancel := s.direct[directCall{sid: sid, id: id}]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// holdSession keeps go-sdk from closing session sid as idle while the
// front answers a request of it that may run long (a plain tools/call):
// go-sdk pauses its idle timer only for requests in its own hands, so
// every quarter of the idle timeout the front sends it a ping on the
// session, as the client's own request would, and discards the answer.
// stop ends the pings, waiting for one in progress (which reads r).
func (s *Server) holdSession(r *http.Request, sid string) (stop func()) {
	every := s.cfg.SessionTimeout / 4
	if every <= 0 {
		return func() {}
	}
	var (
		mu      sync.Mutex // held by a ping in progress
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		s.pingSDK(r, sid)
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// pingSDK sends go-sdk a ping on session sid with r's credentials and
// headers, and discards the answer.
func (s *Server) pingSDK(r *http.Request, sid string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":"io.wasmtask/keepalive-` + rand.Text() + `","method":"ping"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL.String(), strings.NewReader(body))
	if err != nil {
		return
	}
	req.Host = r.Host
	req.RemoteAddr = r.RemoteAddr
	for _, h := range []string{"Content-Type", "Accept", sessionIDHeader, protocolVersionHeader} {
		req.Header[h] = r.Header.Values(h)
	}
	s.keepalives.Add(1)
	sw := &statusWriter{ResponseWriter: discardResponse{h: make(http.Header)}}
	s.http.ServeHTTP(sw, req)
	s.sdkAnswered(sid, http.MethodPost, sw.status)
}

// discardResponse is a ResponseWriter that keeps nothing.
type discardResponse struct{ h http.Header }

func (d discardResponse) Header() http.Header         { return d.h }
func (d discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d discardResponse) WriteHeader(int)             {}
func (d discardResponse) Flush()                      {}

// jsonDepth returns the nesting depth of the JSON document b (objects and
// arrays), or a depth past limit as soon as it passes limit. It scans
// bytes only (strings skipped), so a document too deep is refused before
// anything is decoded; b need not be valid JSON.
func jsonDepth(b []byte, limit int) int {
	d, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			if d > deepest {
				deepest = d
				if deepest > limit {
					return deepest
				}
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}
