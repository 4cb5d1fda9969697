package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/taskengine"
)

// lineConn is an mcp.Connection over newline-delimited JSON, used for stdio.
// It replaces go-sdk's own io connection for three reasons:
//   - it lifts params.task out of tools/call before go-sdk decodes it;
//   - a line that is not JSON, not a JSON-RPC message, or too long gets a
//     JSON-RPC error and the session goes on (go-sdk's connection ends the
//     session on the first such line);
//   - it can write notifications go-sdk has no API for
//     (notifications/tasks/status).
//
// Batches are answered with -32600: JSON-RPC batching is not part of MCP
// since 2025-06-18.
type lineConn struct {
	id     string
	in     io.Reader
	max    int
	frames chan frame
	closed chan struct{}
	once   sync.Once

	wmu sync.Mutex
	out io.Writer

	// Requests read but not yet answered, by ID. At end of input, Read
	// waits until they are answered before it reports EOF, so that a client
	// that writes its requests and closes its end still gets every answer.
	// tasks/result is not counted (see Read).
	pmu     sync.Mutex
	pending map[any]int
	idle    chan struct{} // closed when pending becomes empty; nil while empty

	// Status notifications of a task wait until the CreateTaskResult that
	// announced the task is written, so a client never hears of a task
	// before it knows its ID. Both maps are bounded by maxHeldTasks.
	nmu       sync.Mutex
	announced map[string]bool     // task IDs whose CreateTaskResult was written
	held      map[string]wireTask // latest status of a task not yet announced
}

// maxHeldTasks bounds the task IDs a connection remembers for ordering
// status notifications; past it the oldest knowledge is dropped (a status
// notification is optional, a poll with tasks/get always works).
const maxHeldTasks = 4096

type frame struct {
	data     []byte
	tooLarge bool
	err      error
}

// newLineConn starts the reader goroutine. It ends when in returns an error
// (EOF included) or when the connection is closed and in is an io.Closer (a
// reader that can be neither closed nor ended keeps the goroutine parked in
// Read until it returns, as with any blocking stdin read).
func newLineConn(id string, in io.Reader, out io.Writer, max int) *lineConn {
	c := &lineConn{
		id:     id,
		in:     in,
		out:    out,
		max:    max,
		frames: make(chan frame),
		closed: make(chan struct{}),
	}
	go c.readLoop()
	return c
}

func (c *lineConn) readLoop() {
	br := bufio.NewReaderSize(c.in, 64<<10)
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > c.max {
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		var f *frame
		switch {
		case tooLong:
			f = &frame{tooLarge: true}
		case len(bytes.TrimSpace(buf)) > 0:
			f = &frame{data: bytes.Clone(buf)}
		}
		buf, tooLong = buf[:0], false
		if f != nil && !c.send(*f) {
			return
		}
		if err != nil {
			c.send(frame{err: err})
			return
		}
	}
}

func (c *lineConn) send(f frame) bool {
	select {
	case c.frames <- f:
		return true
	case <-c.closed:
		return false
	}
}

// Read implements mcp.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var f frame
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case f = <-c.frames:
		}
		if f.err != nil {
			c.waitAnswered(ctx)
			return nil, f.err
		}
		if f.tooLarge {
			c.writeError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message larger than %d bytes", c.max))
			continue
		}
		msg, err := c.decode(f.data)
		if err != nil {
			continue // already answered
		}
		// A blocked tasks/result is not waited for at end of input: it may
		// wait as long as its task runs, and closing the session releases
		// it. Every other request is answered first.
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Method != methodTasksResult {
			c.track(req.ID.Raw(), +1)
		}
		return msg, nil
	}
}

// decode turns one line into a message, answering lines that are not one.
func (c *lineConn) decode(data []byte) (jsonrpc.Message, error) {
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: not valid JSON")
		return nil, errBadFrame
	}
	if data[0] == '[' {
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported")
		return nil, errBadFrame
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		c.writeError(rawID(data), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, errBadFrame
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == methodCallTool {
		req.Params = liftTaskParams(req.Params)
	}
	return msg, nil
}

var errBadFrame = errors.New("mcpserver: bad frame")

// rawID extracts a usable "id" from a message that failed to decode, or nil.
func rawID(data []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	switch m.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return m.ID
	}
	return nil
}

func (c *lineConn) writeError(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	if err == nil {
		_ = c.writeLine(b)
	}
}

// Write implements mcp.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcpserver: encoding message: %w", err)
	}
	err = c.writeLine(b)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.track(resp.ID.Raw(), -1)
		if id := createdTaskID(resp.Result); id != "" && err == nil {
			c.announce(id)
		}
	}
	return err
}

// createdTaskID returns the task ID of a CreateTaskResult, or "".
func createdTaskID(result json.RawMessage) string {
	if !bytes.HasPrefix(result, []byte(`{"task":{`)) {
		return ""
	}
	var r struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ""
	}
	return r.Task.TaskID
}

// announce records that the client knows task id and sends its held status.
func (c *lineConn) announce(id string) {
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
func (c *lineConn) holdStatus(t wireTask) bool {
	c.nmu.Lock()
	defer c.nmu.Unlock()
	if c.announced[t.TaskID] {
		if terminal(t.Status) {
			delete(c.announced, t.TaskID)
		}
		return false
	}
	if c.held == nil || len(c.held) >= maxHeldTasks {
		c.held = make(map[string]wireTask)
	}
	c.held[t.TaskID] = t
	return true
}

func terminal(status string) bool {
	return taskengine.Status(status).Terminal()
}

// track counts a request read (+1) or answered (-1).
func (c *lineConn) track(id any, delta int) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.pending == nil {
		c.pending = make(map[any]int)
	}
	if delta > 0 && len(c.pending) == 0 {
		c.idle = make(chan struct{})
	}
	if n := c.pending[id] + delta; n > 0 {
		c.pending[id] = n
	} else {
		delete(c.pending, id)
	}
	if len(c.pending) == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// waitAnswered blocks until every request read so far has been answered,
// ctx is done, or the connection is closed.
func (c *lineConn) waitAnswered(ctx context.Context) {
	c.pmu.Lock()
	idle := c.idle
	c.pmu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	case <-c.closed:
	}
}

func (c *lineConn) writeLine(b []byte) error {
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("mcpserver: writing: %w", err)
	}
	return nil
}

// notify writes a server notification that go-sdk has no API for. A task
// status notification waits until the task's CreateTaskResult is written.
func (c *lineConn) notify(method string, params any) error {
	if t, ok := params.(wireTask); ok && method == methodTaskStatus && c.holdStatus(t) {
		return nil
	}
	return c.sendNotification(method, params)
}

func (c *lineConn) sendNotification(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("mcpserver: encoding %s: %w", method, err)
	}
	return c.Write(context.Background(), &jsonrpc.Request{Method: method, Params: p})
}

// Close implements mcp.Connection. It closes the input when it is an
// io.Closer, so the reader goroutine ends.
func (c *lineConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		if cl, ok := c.in.(io.Closer); ok {
			_ = cl.Close()
		}
	})
	return nil
}

// SessionID implements mcp.Connection: it names the session for ownership.
func (c *lineConn) SessionID() string { return c.id }

// lineTransport hands a lineConn to go-sdk.
type lineTransport struct{ conn *lineConn }

func (t lineTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }
