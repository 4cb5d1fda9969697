package mcphttp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is one session's mcp.Connection over Streamable HTTP. Each POST
// hands it one message (Read returns them in order); what go-sdk writes
// goes back on the stream of the request it belongs to: a response to its
// request's POST, a notification or a server request to the POST of the
// request it was sent for (the MCP layer names that request through
// WithRequest), anything else to the session's GET stream.
//
// A POST is answered as one JSON body when its answer is the first thing
// written for it within streamAfter; it becomes an event stream as soon as
// anything precedes the answer, or when streamAfter passes without one (so
// a client waiting for a long call sees its POST accepted).
type conn struct {
	id       string
	incoming chan jsonrpc.Message
	done     chan struct{}
	once     sync.Once
	onClose  func()

	mu         sync.Mutex
	calls      map[jsonrpc.ID]*stream           // the POST of each request read and not yet answered
	extras     map[*mcp.RequestExtra]jsonrpc.ID // the request each RequestExtra came with, while in calls
	standalone *stream                          // the GET stream, nil when none is open
}

// streamAfter is how long a POST waits for its answer before it becomes an
// event stream.
const streamAfter = 2 * time.Second

func newConn(id string, onClose func()) *conn {
	return &conn{
		id:       id,
		incoming: make(chan jsonrpc.Message),
		done:     make(chan struct{}),
		onClose:  onClose,
		calls:    make(map[jsonrpc.ID]*stream),
		extras:   make(map[*mcp.RequestExtra]jsonrpc.ID),
	}
}

// Read implements mcp.Connection.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// relatedKey carries the ID of the request a handler serves (WithRequest).
type relatedKey struct{}

// WithRequest returns ctx naming the request extra came with, so that what
// is written with it travels on that request's stream. The MCP layer calls
// it for each request it handles.
func (c *conn) WithRequest(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	c.mu.Lock()
	id, ok := c.extras[extra]
	c.mu.Unlock()
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, relatedKey{}, id)
}

// errNoStream answers a server request that has no stream to go on.
var errNoStream = errors.New("no stream open to the client")

// Write implements mcp.Connection.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		s := c.calls[resp.ID]
		c.forgetLocked(resp.ID)
		c.mu.Unlock()
		if s != nil {
			s.answer(data, resp.Error != nil)
		}
		return nil // a request whose POST has gone: nobody to tell
	}
	if id, ok := ctx.Value(relatedKey{}).(jsonrpc.ID); ok {
		c.mu.Lock()
		s := c.calls[id]
		c.mu.Unlock()
		if s != nil && s.event(data) == nil {
			return nil
		}
	}
	c.mu.Lock()
	s := c.standalone
	c.mu.Unlock()
	if s != nil && s.event(data) == nil {
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		return errNoStream
	}
	return nil // a notification nobody can receive now
}

// Listening reports whether the session's GET stream is open: whether a
// notification that belongs to no request would reach the client now.
func (c *conn) Listening() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.standalone != nil
}

// forgetLocked drops the record of request id. c.mu is held.
func (c *conn) forgetLocked(id jsonrpc.ID) {
	if s := c.calls[id]; s != nil {
		delete(c.extras, s.extra)
		delete(c.calls, id)
	}
}

// Close implements mcp.Connection: the session's POSTs and GET stream end.
func (c *conn) Close() error {
	c.once.Do(func() {
		close(c.done)
		if c.onClose != nil {
			c.onClose()
		}
	})
	return nil
}

// SessionID implements mcp.Connection.
func (c *conn) SessionID() string { return c.id }

// deliver hands msg to go-sdk, unless the session or the POST ends first.
func (c *conn) deliver(r *http.Request, msg jsonrpc.Message) bool {
	select {
	case c.incoming <- msg:
		return true
	case <-c.done:
		return false
	case <-r.Context().Done():
		return false
	}
}

// servePOST serves one message of a POST; sessionID, when not "", is sent
// with the answer (an initialize). It reports whether the request was
// answered with success.
func (c *conn) servePOST(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message, sessionID string) (ok bool) {
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || !req.IsCall() {
		if !c.deliver(r, msg) {
			http.Error(w, "session ended", http.StatusNotFound)
			return false
		}
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	extra, _ := req.Extra.(*mcp.RequestExtra)
	s := &stream{w: w, rc: http.NewResponseController(w), answered: make(chan struct{}), sessionID: sessionID, extra: extra}
	c.mu.Lock()
	if _, dup := c.calls[req.ID]; dup {
		c.mu.Unlock()
		writeError(w, http.StatusBadRequest, req.ID, jsonrpc.CodeInvalidRequest, "invalid request: a request with this ID is still in flight on the session")
		return false
	}
	c.calls[req.ID] = s
	if extra != nil {
		c.extras[extra] = req.ID
	}
	c.mu.Unlock()
	if !c.deliver(r, msg) {
		c.mu.Lock()
		c.forgetLocked(req.ID)
		c.mu.Unlock()
		s.end()
		http.Error(w, "session ended", http.StatusNotFound)
		return false
	}
	t := time.AfterFunc(streamAfter, s.open)
	defer t.Stop()
	select {
	case <-s.answered:
	case <-r.Context().Done():
		// The client went away: its request is cancelled as the client
		// itself would cancel it.
		c.mu.Lock()
		pending := c.calls[req.ID] == s
		c.forgetLocked(req.ID)
		c.mu.Unlock()
		if pending {
			c.cancel(req.ID)
		}
	case <-c.done:
		c.mu.Lock()
		c.forgetLocked(req.ID)
		c.mu.Unlock()
	}
	return s.end()
}

// cancel tells go-sdk that request id is cancelled (its POST ended).
func (c *conn) cancel(id jsonrpc.ID) {
	params, err := json.Marshal(mcp.CancelledParams{RequestID: id.Raw(), Reason: "the client closed the request"})
	if err != nil {
		return
	}
	select {
	case c.incoming <- &jsonrpc.Request{Method: "notifications/cancelled", Params: params}:
	case <-c.done:
	}
}

// serveGET serves the session's standalone event stream until the client
// or the session ends it; a session has at most one (409 otherwise).
func (c *conn) serveGET(w http.ResponseWriter, r *http.Request) {
	s := &stream{w: w, rc: http.NewResponseController(w), answered: make(chan struct{})}
	c.mu.Lock()
	if c.standalone != nil {
		c.mu.Unlock()
		http.Error(w, "this session already has its stream open", http.StatusConflict)
		return
	}
	c.standalone = s
	c.mu.Unlock()
	s.open()
	select {
	case <-r.Context().Done():
	case <-c.done:
	case <-s.broken():
	}
	c.mu.Lock()
	if c.standalone == s {
		c.standalone = nil
	}
	c.mu.Unlock()
	s.end()
}

// stream is the answer of one request (a POST) or the GET stream: what
// may be written to its ResponseWriter until its handler returns (end).
type stream struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	sessionID string            // sent with the answer (initialize)
	extra     *mcp.RequestExtra // the request's, for conn.extras

	mu       sync.Mutex
	state    streamState
	failed   bool          // the answer was a JSON-RPC error
	answered chan struct{} // closed when the answer is written
	lost     chan struct{} // closed when a write failed; nil until asked for
}

type streamState int

const (
	waiting   streamState = iota // nothing written yet
	streaming                    // an event stream is open
	finished                     // answered, or the handler returned
)

func (s *stream) header(contentType string) {
	h := s.w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", contentType)
	if s.sessionID != "" {
		h.Set(sessionIDHeader, s.sessionID)
	}
}

// open starts the event stream if nothing was written yet.
func (s *stream) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
}

func (s *stream) openLocked() {
	if s.state != waiting {
		return
	}
	s.header("text/event-stream")
	s.w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
	s.state = streaming
}

// event writes one message as an event, opening the stream if needed.
func (s *stream) event(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == finished {
		return errNoStream
	}
	s.openLocked()
	return s.writeEventLocked(data)
}

func (s *stream) writeEventLocked(data []byte) error {
	buf := make([]byte, 0, len(data)+len("event: message\ndata: \n\n"))
	buf = append(buf, "event: message\ndata: "...)
	buf = append(append(buf, data...), "\n\n"...)
	_, err := s.w.Write(buf)
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		s.breakLocked()
	}
	return err
}

// answer writes the request's answer: one JSON body when nothing was
// written before, else the last event of the stream.
func (s *stream) answer(data []byte, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case waiting:
		s.header("application/json")
		s.w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		s.w.WriteHeader(http.StatusOK)
		_, _ = s.w.Write(data)
	case streaming:
		_ = s.writeEventLocked(data)
	case finished:
		return
	}
	s.state, s.failed = finished, failed
	close(s.answered)
}

// end is called as the stream's handler returns: nothing is written
// afterwards. It reports whether the request was answered with success.
func (s *stream) end() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.answered:
		return !s.failed
	default:
	}
	s.state = finished
	return false
}

// broken is closed when a write to the stream failed.
func (s *stream) broken() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost == nil {
		s.lost = make(chan struct{})
	}
	return s.lost
}

func (s *stream) breakLocked() {
	if s.lost == nil {
		s.lost = make(chan struct{})
	}
	select {
	case <-s.lost:
	default:
		close(s.lost)
	}
}

// writeError answers a POST with a JSON-RPC error and status.
func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
