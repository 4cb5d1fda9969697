package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// taskConn is the connection decorator every session's transport passes
// through (package mcpstdio's, the HTTP edge's session connection). On the
// way in it refuses a request reusing the ID of one unanswered, lifts
// params.task out of tools/call before go-sdk decodes it (go-sdk drops the
// member), and hands the requests this layer answers itself to
// ownanswers.go; on the way out it words JSON-RPC errors for
// the client (clientRPCError) and writes the notifications go-sdk has no
// API for (notifications/tasks/status), each task's only after the
// response that announced the task.
type taskConn struct {
	mcp.Connection

	// answer answers a request itself and reports true, or leaves it to
	// go-sdk (ownanswers.go). nil: go-sdk reads everything.
	answer func(*jsonrpc.Request) bool

	// Status notifications of a task wait until the CreateTaskResult that
	// announced the task is written, so a client never hears of a task
	// before it knows its ID. The code that creates a task says which
	// response carries it (expectTask). The maps are bounded by
	// maxHeldTasks.
	nmu       sync.Mutex
	expected  map[any]string          // response ID → task ID it announces
	announced map[string]bool         // task IDs whose CreateTaskResult was written
	held      map[string]mcpwire.Task // latest status of a task not yet announced

	// The IDs of the requests read and not yet answered, whoever answers
	// them (go-sdk or ownanswers.go): a request reusing one is refused
	// here, as neither of them can see the other's. Bounded by
	// maxInFlight.
	imu      sync.Mutex
	inFlight map[jsonrpc.ID]bool
}

// maxInFlight bounds the requests a session may have unanswered at once.
const maxInFlight = 4096

// maxHeldTasks bounds the task IDs a connection remembers for ordering
// status notifications; past it the oldest knowledge is dropped (a status
// notification is optional, a poll with tasks/get always works).
const maxHeldTasks = 4096

func newTaskConn(c mcp.Connection) *taskConn { return &taskConn{Connection: c} }

// Read implements mcp.Connection.
func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if !ok || err != nil {
			return msg, err
		}
		if req.IsCall() {
			if why := c.begin(req.ID); why != "" {
				_ = c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: rpcError(jsonrpc.CodeInvalidRequest, "invalid request: %s", why)})
				continue
			}
		}
		if req.Method == methodCallTool {
			req.Params = mcpwire.LiftTaskParams(req.Params, req.ID.Raw())
		}
		if c.answer == nil || !c.answer(req) {
			return msg, nil
		}
	}
}

// Write implements mcp.Connection.
func (c *taskConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	if isResp && resp.Error != nil {
		clean := *resp
		clean.Error = clientRPCError(resp.Error)
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

// begin counts in a request read with id, or says why it is refused.
func (c *taskConn) begin(id jsonrpc.ID) string {
	c.imu.Lock()
	defer c.imu.Unlock()
	switch {
	case c.inFlight[id]:
		return "a request with this ID is still in flight on the session"
	case len(c.inFlight) >= maxInFlight:
		return fmt.Sprintf("more than %d requests in flight on the session", maxInFlight)
	}
	if c.inFlight == nil {
		c.inFlight = make(map[jsonrpc.ID]bool)
	}
	c.inFlight[id] = true
	return ""
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

// withRequest names the request a handler serves in ctx, for transports
// that route by request.
func (c *taskConn) withRequest(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	if r, ok := c.Connection.(requestRouter); ok && extra != nil {
		return r.WithRequest(ctx, extra)
	}
	return ctx
}

// expectTask records that the response to request reqID (a JSON-RPC ID as
// decoded into _meta) announces task taskID.
func (c *taskConn) expectTask(reqID any, taskID string) {
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
func (c *taskConn) announce(id string) {
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
func (c *taskConn) holdStatus(t mcpwire.Task) bool {
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

// notify writes a server notification that go-sdk has no API for. A task
// status notification waits until the task's CreateTaskResult is written.
func (c *taskConn) notify(method string, params any) error {
	if t, ok := params.(mcpwire.Task); ok && method == methodTaskStatus && c.holdStatus(t) {
		return nil
	}
	if l, ok := c.Connection.(listener); ok && !l.Listening() {
		return nil // nobody would receive it: not even encoded
	}
	return c.sendNotification(method, params)
}

func (c *taskConn) sendNotification(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", method, err)
	}
	return c.Connection.Write(context.Background(), &jsonrpc.Request{Method: method, Params: p})
}

// connTransport hands a connection to go-sdk.
type connTransport struct{ conn mcp.Connection }

func (t connTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }
