package mcphttp

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wasmtask/wasmtask/host/internal/rpcmsg"
)

// session is one 2025-11-25 session: its connection, the MCP layer's end
// of it, and its idle timer.
type session struct {
	id   string
	user string // the tenant it belongs to, "" without authentication
	conn *conn
	stop func() // the MCP layer's end of the session

	mu     sync.Mutex
	active int         // POSTs in flight
	idle   *time.Timer // ends the session after SessionTimeout with none; nil: never
}

// end ends the session: the MCP layer releases its requests and closes it,
// which closes conn (and removes the session from the table).
func (s *session) end() {
	s.stop()
	s.conn.Close()
}

// begin and finish count a POST in and out; the idle timer runs while
// none is in flight.
func (s *session) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active++
	if s.idle != nil {
		s.idle.Stop()
	}
}

func (s *session) finish(timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active--; s.active == 0 && s.idle != nil {
		s.idle.Reset(timeout)
	}
}

// serveSession serves a request of the 2025-11-25 era: a POST without a
// session ID opens one with initialize; every other request names its
// session.
func (h *Handler) serveSession(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionIDHeader)
	if id == "" {
		if r.Method != http.MethodPost {
			http.Error(w, "the Mcp-Session-Id header is required", http.StatusBadRequest)
			return
		}
		h.open(w, r)
		return
	}
	sess := h.lookup(w, r, id)
	if sess == nil {
		return
	}
	if r.Method == http.MethodDelete {
		sess.end()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	done, ok := h.enterRequest(w, r, id)
	if !ok {
		return
	}
	defer done()
	w = newDeadlineWriter(w, h.cfg.WriteTimeout)
	if r.Method == http.MethodGet {
		if _, streamOK := accepts(r.Header.Values("Accept")); !streamOK {
			http.Error(w, "Accept must contain text/event-stream for GET requests", http.StatusBadRequest)
			return
		}
		sess.conn.serveGET(w, r)
		return
	}
	msg, ok := h.readMessage(w, r)
	if !ok {
		return
	}
	sess.begin()
	defer sess.finish(h.cfg.SessionTimeout)
	sess.conn.servePOST(w, r, msg, "")
}

// lookup finds session id for r's tenant, answering 404 or 403 when it
// cannot.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request, id string) *session {
	h.mu.Lock()
	sess := h.sessions[id]
	h.mu.Unlock()
	if sess == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	if tenant := tenantOf(r); sess.user != tenant {
		h.refuse(w, r, http.StatusForbidden, "forbidden: the session belongs to another tenant")
		return nil
	}
	return sess
}

// open serves a POST without a session ID: an initialize opens a session
// (within the caps on sessions), anything else is refused.
func (h *Handler) open(w http.ResponseWriter, r *http.Request) {
	release, ok := h.admitSession(w, r)
	if !ok {
		return
	}
	defer release()
	done, ok := h.enterRequest(w, r, "")
	if !ok {
		return
	}
	defer done()
	w = newDeadlineWriter(w, h.cfg.WriteTimeout)
	msg, ok := h.readMessage(w, r)
	if !ok {
		return
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || req.Method != "initialize" || !req.IsCall() {
		var id jsonrpc.ID
		if isReq {
			id = req.ID
		}
		writeError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest,
			"no session: a session starts with initialize, and every later request carries its Mcp-Session-Id header")
		return
	}
	sess, err := h.newSession(tenantOf(r))
	if err != nil {
		h.log.Error("opening a session", "err", err)
		writeError(w, http.StatusServiceUnavailable, req.ID, jsonrpc.CodeInternalError, "the server cannot open a session now")
		return
	}
	release() // the session is counted now
	sess.begin()
	defer sess.finish(h.cfg.SessionTimeout)
	if !sess.conn.servePOST(w, r, msg, sess.id) {
		sess.end() // initialize failed: nobody can use the session
	}
}

// newSession opens a session for user and records it.
func (h *Handler) newSession(user string) (*session, error) {
	sess := &session{id: rand.Text(), user: user}
	sess.conn = newConn(sess.id, func() { h.forget(sess) })
	stop, err := h.cfg.MCP.Connect(sess.conn, user)
	if err != nil {
		return nil, err
	}
	sess.stop = stop
	if t := h.cfg.SessionTimeout; t > 0 {
		sess.idle = time.AfterFunc(t, sess.end)
	}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.sessions[sess.id] = sess
		if user != "" {
			h.perUser[user]++
		}
	}
	h.mu.Unlock()
	if closed {
		sess.end()
		return nil, errClosed
	}
	return sess, nil
}

// forget removes a closed session from the table.
func (h *Handler) forget(sess *session) {
	if sess.idle != nil {
		sess.idle.Stop()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[sess.id] != sess {
		return
	}
	delete(h.sessions, sess.id)
	if sess.user != "" {
		if h.perUser[sess.user]--; h.perUser[sess.user] <= 0 {
			delete(h.perUser, sess.user)
		}
	}
}

// readMessage reads a POST's body as one JSON-RPC message, answering 413,
// or 400 with a JSON-RPC error, when it is not one. A request gets the
// tenant's token and the request headers, as go-sdk hands them to
// handlers.
func (h *Handler) readMessage(w http.ResponseWriter, r *http.Request) (jsonrpc.Message, bool) {
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		http.Error(w, "Accept must contain both application/json and text/event-stream", http.StatusBadRequest)
		return nil, false
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return nil, false
	}
	body = bytes.TrimSpace(body)
	switch {
	case !json.Valid(body):
		writeError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeParseError, "parse error: the body is not one JSON value")
		return nil, false
	case body[0] == '[':
		writeError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported (MCP has none since 2025-06-18)")
		return nil, false
	}
	msg, err := rpcmsg.Decode(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid request: the body is not a JSON-RPC 2.0 message")
		return nil, false
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		req.Extra = &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
	}
	return msg, true
}
