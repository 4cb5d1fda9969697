package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/mcpconn"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcpstdio"
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
	// conn is the session's connection (every transport's goes through
	// mcpconn): it writes the notifications go-sdk has no API for, learns
	// which response announces a task and tracks the requests answered
	// before go-sdk sees them. line is the stdio connection under it, nil
	// over HTTP.
	conn *mcpconn.Conn
	line *mcpstdio.Conn
	// ss is go-sdk's session (guarded by Server.mu; nil until connected).
	ss *mcp.ServerSession
	// relay writes the status changes of its tasks, from a goroutine
	// that ends (relayDone) once ctx does.
	relay     *mcpconn.StatusRelay
	relayDone chan struct{}
	// elicits bounds the session's elicitations, whichever call or task
	// asks.
	elicits mcpevents.Limiter
}

// newSessionLocked records a session. s.mu must be held.
func (s *Server) newSessionLocked(id, user string, conn *mcpconn.Conn) *session {
	ctx, cancel := context.WithCancel(context.Background())
	sess := &session{id: id, owner: "session:" + rand.Text(), user: user, ctx: ctx, cancel: cancel, conn: conn, relay: mcpconn.NewStatusRelay(), relayDone: make(chan struct{})}
	if s.closed {
		cancel()
	}
	s.sessions[id] = sess
	return sess
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
		s.subs.drop(id)
	}
}

// requestor identifies who sent a request: its session, and the auth user
// when the transport carried one.
type requestor struct {
	sess *session
	ss   *mcp.ServerSession
	user string
	era  // what the request's own _meta declares (2026-07-28)
	// headers reads a 2026-07-28 request's HTTP headers; nil otherwise.
	headers func(name string) []string
}

// canElicit reports whether the client declared the elicitation
// capability: in this request's _meta (2026-07-28), else at initialize.
func (r requestor) canElicit() bool {
	if r.modern {
		return r.era.canElicit
	}
	return clientCanElicit(r.ss)
}

// canSample and canRoots report the same of sampling and roots.
func (r requestor) canSample() bool {
	if r.modern {
		return r.era.canSample
	}
	return clientCanSample(r.ss)
}

func (r requestor) canRoots() bool {
	if r.modern {
		return r.era.canRoots
	}
	ip := r.ss.InitializeParams()
	//lint:ignore SA1019 roots are deprecated only for protocol 2026-07-28 (SEP-2577); 2025-11-25 clients still answer them.
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.RootsV2 != nil
}

// lacks is what of the client capabilities caps the client did not
// declare.
func (r requestor) lacks(caps []string) []string {
	var out []string
	for _, c := range caps {
		switch {
		case c == "elicitation" && !r.canElicit(), c == "sampling" && !r.canSample(), c == "roots" && !r.canRoots():
			out = append(out, c)
		}
	}
	return out
}

// can is what this requestor's client declared it can answer.
func (r requestor) can() mcpevents.Can {
	return mcpevents.Can{Elicit: r.canElicit(), Sample: r.canSample(), Roots: r.canRoots()}
}

// canAsk reports whether the client can be asked anything: a 2026-07-28
// call that may ask runs in input rounds.
func (r requestor) canAsk() bool { return r.canElicit() || r.canSample() || r.canRoots() }

// clientCanElicit reports whether the session's client declared the
// elicitation capability.
func clientCanElicit(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

// clientCanSample reports whether the session's client declared the
// sampling capability.
func clientCanSample(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	//lint:ignore SA1019 sampling is deprecated only for protocol 2026-07-28 (SEP-2577); 2025-11-25 clients still answer it.
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Sampling != nil
}

// client is where the events of a tool this requestor calls go.
func (s *Server) client(r requestor) mcpevents.Client {
	return mcpevents.Client{
		Session:        r.ss,
		SessionID:      r.sess.id,
		SessionContext: r.sess.ctx,
		Modern:         r.modern,
		CanElicit:      r.canElicit(),
		CanSample:      r.canSample(),
		CanRoots:       r.canRoots(),
		Limits:         &r.sess.elicits,
		Waiters:        &s.waiters,
		Log:            s.log,
	}
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
		return requestor{}, mcperr.RPC(jsonrpc.CodeInternalError, "internal error: request outside a session")
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
				res, err = nil, mcperr.RPC(jsonrpc.CodeInternalError, "internal error")
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
		if ex := req.GetExtra(); rq.modern && ex != nil && ex.Header != nil {
			rq.headers = ex.Header.Values
		}
		if rq.modern && ss.ID() == "" {
			rq.sess = requestSession(ctx) // stateless: nothing to remember
		} else {
			s.mu.Lock()
			rq.sess = s.sessions[ss.ID()]
			s.mu.Unlock()
			if rq.sess == nil {
				return nil, mcperr.RPC(jsonrpc.CodeInternalError, "internal error: the session has ended")
			}
			ctx = rq.sess.conn.WithRequest(ctx, req.GetExtra())
		}
		ctx = context.WithValue(ctx, requestorKey{}, rq)
		if res, handled, err := s.primitiveRequest(ctx, rq, method, req); handled {
			return res, err
		}
		if rq.modern {
			return s.modernRequest(ctx, rq, method, req, next)
		}
		if method == methodTasksUpdate {
			return nil, mcperr.MethodNotFound("method %q is not part of protocol version %s: it belongs to the tasks extension of %s", method, ss.InitializeParams().ProtocolVersion, modernVersion)
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
		return nil, mcperr.RPC(jsonrpc.CodeInternalError, "internal error: unexpected tools/call request type %T", req)
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
	case methodListen:
		return s.listen(ctx, method, req, next)
	case methodTasksResult, methodTasksList:
		return nil, mcperr.MethodNotFound("method %q is not part of protocol version %s (the tasks extension has tasks/get, tasks/update and tasks/cancel)", method, modernVersion)
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
