package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	methodInitialize = "initialize"
	methodSetLevel   = "logging/setLevel"
)

// session is the server's state for one MCP session.
type session struct {
	id     string
	owner  string // taskengine owner when no auth user is known
	user   string // auth user ID seen at creation, "" if none
	ctx    context.Context
	cancel context.CancelFunc
	// stdio is the session's connection when it is our own (stdio): it
	// writes notifications go-sdk has no API for and learns which response
	// announces a task. nil for Streamable HTTP.
	stdio *lineConn
	// relay writes the status changes of its tasks (stdio only).
	relay *statusRelay
	// elicits bounds the session's elicitations, whichever call or task
	// asks.
	elicits elicitLimiter
	// sdk is go-sdk's session of a Streamable HTTP session, and sdkSeen
	// (guarded by Server.mu) when a request of it last went through
	// go-sdk's handler: the HTTP front answers requests itself only
	// while go-sdk certainly still serves the session (direct.go).
	sdk     *mcp.ServerSession
	sdkSeen time.Time
	// logging is set once the client asked for log messages
	// (logging/setLevel): a call of a tool that logs then needs a stream.
	logging atomic.Bool
}

// newSessionLocked records a session. s.mu must be held.
func (s *Server) newSessionLocked(id string, stdio *lineConn) *session {
	ctx, cancel := context.WithCancel(context.Background())
	sess := &session{id: id, owner: "session:" + rand.Text(), ctx: ctx, cancel: cancel, stdio: stdio}
	if s.closed {
		cancel()
	}
	s.sessions[id] = sess
	return sess
}

// sessionFor returns the state of ss, creating it on first use (Streamable
// HTTP sessions are created by go-sdk; we learn of them here).
func (s *Server) sessionFor(ss *mcp.ServerSession, user string) *session {
	id := ss.ID()
	s.mu.Lock()
	if sess, ok := s.sessions[id]; ok {
		s.mu.Unlock()
		return sess
	}
	if len(s.sessions) >= 2*max(s.swept, 8) {
		s.sweepLocked()
	}
	sess := s.newSessionLocked(id, nil)
	sess.user = user
	sess.sdk = ss
	s.mu.Unlock()
	s.audit(auditSessionOpen, requestor{sess: sess, user: user}.owner(), slog.String("transport", "http"))
	return sess
}

// sweepLocked forgets sessions go-sdk no longer has. It runs when the map
// has doubled since the last sweep, so its cost is amortised O(1) per
// session and the map stays within twice the live sessions.
func (s *Server) sweepLocked() {
	live := make(map[string]bool)
	for ss := range s.mcp.Sessions() {
		live[ss.ID()] = true
	}
	for id, sess := range s.sessions {
		if !live[id] {
			sess.cancel()
			delete(s.sessions, id)
		}
	}
	s.swept = len(s.sessions)
}

// releaseSession ends our state for a session: blocked tasks/result calls
// and plain tool calls of that session return. Its tasks live on until
// their TTL.
func (s *Server) releaseSession(id string) {
	s.mu.Lock()
	sess, ok := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if ok {
		sess.cancel()
	}
}

// requestor identifies who sent a request: its session, and the auth user
// when the transport carried one.
type requestor struct {
	sess *session
	ss   *mcp.ServerSession
	user string
	era  // what the request's own _meta declares (2026-07-28)
	// direct is set when the HTTP front answers the request as one JSON
	// body (direct.go): nothing can reach the client before the answer.
	direct bool
}

// canElicit reports whether the client declared the elicitation
// capability: in this request's _meta (2026-07-28), else at initialize.
func (r requestor) canElicit() bool {
	if r.modern {
		return r.era.canElicit
	}
	return clientCanElicit(r.ss)
}

// TenantOf names the authenticated tenant an owner of tasks (as the task
// engine sees it) stands for, or reports that it stands for none (a
// session without authentication).
func TenantOf(owner string) (string, bool) {
	return strings.CutPrefix(owner, userPrefix)
}

// userPrefix marks the owner of an authenticated user's tasks.
const userPrefix = "user:"

// owner is the taskengine owner of tasks this requestor creates and sees:
// the auth user when known (tasks then survive a reconnect), else the session
// (a modern request over HTTP has none: anonymousOwner).
func (r requestor) owner() string {
	if r.user != "" {
		return userPrefix + r.user
	}
	return r.sess.owner
}

// requestSession is the session state of a 2026-07-28 request over
// Streamable HTTP: it has no session, so nothing is recorded — the state
// lives as long as the request.
func requestSession(ctx context.Context) *session {
	return &session{owner: anonymousOwner, ctx: ctx, cancel: func() {}}
}

type requestorKey struct{}

func requestorFrom(ctx context.Context) (requestor, error) {
	r, ok := ctx.Value(requestorKey{}).(requestor)
	if !ok {
		return requestor{}, rpcError(jsonrpc.CodeInternalError, "internal error: request outside a session")
	}
	return r, nil
}

// middleware is the outermost receiving middleware. It recovers panics (go-sdk
// does not), records who the requestor is in the context (custom method
// handlers get no auth info otherwise), and answers initialize, tools/list
// and tools/call itself.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("panic while handling request", "method", method, "panic", r, "stack", string(debug.Stack()))
				res, err = nil, rpcError(jsonrpc.CodeInternalError, "internal error")
			}
		}()
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || ss == nil {
			return next(ctx, method, req)
		}
		var user string
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			user = ex.TokenInfo.UserID
		}
		var meta map[string]any
		if p := req.GetParams(); !isNil(p) {
			meta = p.GetMeta()
		}
		rq := requestor{ss: ss, user: user, era: eraOf(meta)}
		if rq.modern && ss.ID() == "" {
			rq.sess = requestSession(ctx) // stateless: nothing to remember
		} else {
			rq.sess = s.sessionFor(ss, user)
		}
		ctx = context.WithValue(ctx, requestorKey{}, rq)
		if method == methodSetLevel {
			rq.sess.logging.Store(true)
		}
		if rq.sess.stdio == nil && meta != nil && (method == methodCallTool || method == methodTasksResult) {
			// A call or a wait ends when the POST that carried it does:
			// its client went away.
			post := s.postContext(meta)
			if post == nil {
				// serveHTTP binds every such request it lets through.
				return nil, rpcError(jsonrpc.CodeInvalidRequest, "%s: the request was not received whole", method)
			}
			var stop func()
			ctx, stop = withDone(ctx, post)
			defer stop()
		}
		if rq.modern {
			return s.modernRequest(ctx, rq, method, req, next)
		}
		if method == methodTasksUpdate {
			return nil, errMethodNotFound("method %q is not part of protocol version %s: it belongs to the tasks extension of %s", method, ss.InitializeParams().ProtocolVersion, modernVersion)
		}
		switch method {
		case methodInitialize:
			return s.initialize(ctx, method, req, next)
		case methodListTools:
			cat, release, err := s.cfg.Catalog(ctx, "")
			if err != nil {
				return nil, err
			}
			defer release()
			return listTools(cat, s.visible(user, cat)), nil
		case methodCallTool:
			return s.dispatchCall(ctx, rq, req)
		}
		return next(ctx, method, req)
	}
}

func (s *Server) dispatchCall(ctx context.Context, rq requestor, req mcp.Request) (mcp.Result, error) {
	creq, ok := req.(*mcp.CallToolRequest)
	if !ok {
		return nil, rpcError(jsonrpc.CodeInternalError, "internal error: unexpected tools/call request type %T", req)
	}
	return s.callTool(ctx, rq, creq.Params)
}

// modernRequest answers a 2026-07-28 request: the same catalog and engine,
// the extension's words.
func (s *Server) modernRequest(ctx context.Context, rq requestor, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	switch method {
	case methodDiscover:
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, err
		}
		return discover(res), nil
	case methodListTools:
		cat, release, err := s.cfg.Catalog(ctx, "")
		if err != nil {
			return nil, err
		}
		defer release()
		return listModernTools(cat, s.visible(rq.user, cat), s.cfg.Visible != nil && rq.user != ""), nil
	case methodCallTool:
		return s.dispatchCall(ctx, rq, req)
	case methodTasksResult, methodTasksList:
		return nil, errMethodNotFound("method %q is not part of protocol version %s (the tasks extension has tasks/get, tasks/update and tasks/cancel)", method, modernVersion)
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		if !rq.optedIn {
			return nil, errTasksNotDeclared(method)
		}
		return s.modernTaskMethod(ctx, rq, method, req)
	}
	return next(ctx, method, req)
}

// initializeResult is go-sdk's InitializeResult with the tasks capability.
type initializeResult struct {
	mcp.ResultBase
	Capabilities    map[string]any      `json:"capabilities"`
	Instructions    string              `json:"instructions,omitempty"`
	ProtocolVersion string              `json:"protocolVersion"`
	ServerInfo      *mcp.Implementation `json:"serverInfo"`
}

var tasksCapability = map[string]any{
	"list":     map[string]any{},
	"cancel":   map[string]any{},
	"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
}

func (s *Server) initialize(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	if err != nil {
		return nil, err
	}
	ir, ok := res.(*mcp.InitializeResult)
	if !ok {
		return res, nil
	}
	caps := map[string]any{}
	if b, err := json.Marshal(ir.Capabilities); err == nil {
		_ = json.Unmarshal(b, &caps)
	}
	caps["tasks"] = tasksCapability
	out := &initializeResult{
		Capabilities:    caps,
		Instructions:    ir.Instructions,
		ProtocolVersion: ir.ProtocolVersion,
		ServerInfo:      ir.ServerInfo,
	}
	out.Meta = ir.Meta
	return out, nil
}

// isNil reports whether p is nil or a nil pointer (absent params).
func isNil(p mcp.Params) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
