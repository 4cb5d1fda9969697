package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

const (
	methodCallTool   = "tools/call"
	methodCancelled  = "notifications/cancelled"
	methodTaskStatus = "notifications/tasks/status"
)

// Requests a [Conn] refuses as it reads them, before anyone answers them
// (Options.Word words the error the client reads).
var (
	// ErrIDInFlight refuses a request reusing the ID of one read and not
	// yet answered on the session.
	ErrIDInFlight = errors.New("a request with this ID is still in flight on the session")
	// ErrTooManyInFlight refuses a request when MaxInFlight are
	// unanswered on the session.
	ErrTooManyInFlight = fmt.Errorf("more than %d requests in flight on the session", MaxInFlight)
)

// MaxInFlight bounds the requests a session may have unanswered at once.
const MaxInFlight = 4096

// maxHeldTasks bounds the task IDs a connection remembers for ordering
// status notifications; past it the oldest knowledge is dropped (a status
// notification is optional, a poll with tasks/get always works).
const maxHeldTasks = 4096

// Options configure a [Conn]. The zero value is valid.
type Options struct {
	// Word is what the client reads for an error this connection writes:
	// each JSON-RPC error response, and each request refused as it is
	// read ([ErrIDInFlight], [ErrTooManyInFlight]). Nil: error responses
	// are written as they are, a refusal as -32600 with its error's text.
	Word func(error) *jsonrpc.Error
	// Answer answers a request itself (before go-sdk reads it) and
	// reports true, or leaves it to go-sdk. It is called on the session's
	// read loop, and must not wait. Nil: go-sdk reads everything.
	Answer func(*jsonrpc.Request) bool
}

// Conn is the connection decorator every session's transport passes
// through (package mcpstdio's, the HTTP edge's session connection) on its
// way to go-sdk. On the way in it refuses a request reusing the ID of one
// unanswered, lifts params.task out of tools/call before go-sdk decodes it
// (go-sdk drops the member), ends a request answered before go-sdk when a
// notifications/cancelled names it, and offers each request to
// Options.Answer; on the way out it passes JSON-RPC errors through
// Options.Word and writes the notifications go-sdk has no API for
// (notifications/tasks/status), each task's only after the response that
// announced the task.
//
// A Conn is safe for concurrent use. Close closes the connection under it.
type Conn struct {
	mcp.Connection
	opts Options

	// Status notifications of a task wait until the CreateTaskResult that
	// announced the task is written, so a client never hears of a task
	// before it knows its ID. The code that creates a task says which
	// response carries it (ExpectTask). The maps are bounded by
	// maxHeldTasks.
	nmu       sync.Mutex
	expected  map[any]string          // response ID → task ID it announces
	announced map[string]bool         // task IDs whose CreateTaskResult was written
	held      map[string]mcpwire.Task // latest status of a task not yet announced

	// The IDs of the requests read and not yet answered, whoever answers
	// them (go-sdk or Options.Answer): a request reusing one is refused
	// here, as neither of them can see the other's. Bounded by
	// MaxInFlight.
	imu      sync.Mutex
	inFlight map[jsonrpc.ID]bool

	// The requests Options.Answer took, in flight (Track), so that a
	// notifications/cancelled naming one ends it, as go-sdk ends its own.
	omu sync.Mutex
	own map[jsonrpc.ID]context.CancelFunc
}

// New returns c behind a Conn.
func New(c mcp.Connection, opts Options) *Conn { return &Conn{Connection: c, opts: opts} }

// Transport hands the Conn to go-sdk (mcp.Server.Connect).
func (c *Conn) Transport() mcp.Transport { return transport{c} }

type transport struct{ conn mcp.Connection }

func (t transport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// Read implements mcp.Connection.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if !ok || err != nil {
			return msg, err
		}
		if req.IsCall() {
			if err := c.begin(req.ID); err != nil {
				_ = c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: c.word(err)})
				continue
			}
		} else if req.Method == methodCancelled {
			c.cancelOwn(req.Params)
		}
		if req.Method == methodCallTool {
			req.Params = mcpwire.LiftTaskParams(req.Params, req.ID.Raw())
		}
		if c.opts.Answer == nil || !c.opts.Answer(req) {
			return msg, nil
		}
	}
}

// Write implements mcp.Connection.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	if isResp && resp.Error != nil && c.opts.Word != nil {
		clean := *resp
		clean.Error = c.opts.Word(resp.Error)
		msg = &clean
	}
	if isResp {
		// Answered from now: the client may reuse the ID as soon as it
		// reads the answer.
		c.imu.Lock()
		delete(c.inFlight, resp.ID)
		c.imu.Unlock()
	}
	err := c.Connection.Write(ctx, msg)
	if isResp {
		c.nmu.Lock()
		taskID, isTask := c.expected[resp.ID.Raw()]
		delete(c.expected, resp.ID.Raw())
		c.nmu.Unlock()
		if isTask && err == nil && resp.Error == nil {
			c.announce(taskID)
		}
	}
	return err
}

// word is the error the client reads for a refused request.
func (c *Conn) word(err error) *jsonrpc.Error {
	if c.opts.Word != nil {
		return c.opts.Word(err)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
}

// begin counts in a request read with id, or says why it is refused.
func (c *Conn) begin(id jsonrpc.ID) error {
	c.imu.Lock()
	defer c.imu.Unlock()
	switch {
	case c.inFlight[id]:
		return ErrIDInFlight
	case len(c.inFlight) >= MaxInFlight:
		return ErrTooManyInFlight
	}
	if c.inFlight == nil {
		c.inFlight = make(map[jsonrpc.ID]bool)
	}
	c.inFlight[id] = true
	return nil
}

// Track records a request Options.Answer took, in flight: a
// notifications/cancelled naming its ID calls cancel, until Untrack. It
// reports false, and records nothing, when a request it took with that
// ID still is.
func (c *Conn) Track(id jsonrpc.ID, cancel context.CancelFunc) bool {
	c.omu.Lock()
	defer c.omu.Unlock()
	if _, dup := c.own[id]; dup {
		return false
	}
	if c.own == nil {
		c.own = make(map[jsonrpc.ID]context.CancelFunc)
	}
	c.own[id] = cancel
	return true
}

// Untrack ends what Track recorded for id: the request is answered.
func (c *Conn) Untrack(id jsonrpc.ID) {
	c.omu.Lock()
	defer c.omu.Unlock()
	delete(c.own, id)
}

// cancelOwn ends the request a notifications/cancelled names, if it is
// one Options.Answer took.
func (c *Conn) cancelOwn(raw json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.omu.Lock()
	cancel := c.own[id]
	c.omu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// listener is a connection that may have no stream for notifications
// that belong to no request (Streamable HTTP without its GET stream).
type listener interface{ Listening() bool }

// requestRouter is a connection with a stream per request (Streamable
// HTTP): what is written with the context it returns travels on the
// stream of the request extra came with.
type requestRouter interface {
	WithRequest(ctx context.Context, extra *mcp.RequestExtra) context.Context
}

// WithRequest names the request a handler serves in ctx, for transports
// that route by request (what is written with the context it returns
// travels on that request's stream); others get ctx back.
func (c *Conn) WithRequest(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	if r, ok := c.Connection.(requestRouter); ok && extra != nil {
		return r.WithRequest(ctx, extra)
	}
	return ctx
}

// ExpectTask records that the response to request reqID (a JSON-RPC ID as
// decoded into _meta, mcpwire.RequestIDKey) announces task taskID. Call it
// before that response is written.
func (c *Conn) ExpectTask(reqID any, taskID string) {
	id, err := jsonrpc.MakeID(reqID)
	if err != nil || !id.IsValid() {
		return
	}
	c.nmu.Lock()
	defer c.nmu.Unlock()
	if c.expected == nil || len(c.expected) >= maxHeldTasks {
		c.expected = make(map[any]string)
	}
	c.expected[id.Raw()] = taskID
}

// announce records that the client knows task id and sends its held status.
func (c *Conn) announce(id string) {
	c.nmu.Lock()
	if c.announced == nil || len(c.announced) >= maxHeldTasks {
		c.announced = make(map[string]bool)
	}
	c.announced[id] = true
	t, ok := c.held[id]
	delete(c.held, id)
	c.nmu.Unlock()
	if ok {
		_ = c.sendNotification(methodTaskStatus, t)
	}
}

// holdStatus reports whether a status notification of t must wait for its
// task to be announced, and keeps it if so.
func (c *Conn) holdStatus(t mcpwire.Task) bool {
	c.nmu.Lock()
	defer c.nmu.Unlock()
	if c.announced[t.TaskID] {
		if taskengine.Status(t.Status).Terminal() {
			delete(c.announced, t.TaskID)
		}
		return false
	}
	if c.held == nil || len(c.held) >= maxHeldTasks {
		c.held = make(map[string]mcpwire.Task)
	}
	c.held[t.TaskID] = t
	return true
}

// NotifyTaskStatus writes notifications/tasks/status for t, which go-sdk
// has no API for. It waits, held, until the task's CreateTaskResult is
// written (ExpectTask); it is dropped when nobody would receive it (an
// HTTP session without its GET stream).
func (c *Conn) NotifyTaskStatus(t mcpwire.Task) error {
	if c.holdStatus(t) {
		return nil
	}
	if l, ok := c.Connection.(listener); ok && !l.Listening() {
		return nil // nobody would receive it: not even encoded
	}
	return c.sendNotification(methodTaskStatus, t)
}

func (c *Conn) sendNotification(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", method, err)
	}
	return c.Connection.Write(context.Background(), &jsonrpc.Request{Method: method, Params: p})
}
