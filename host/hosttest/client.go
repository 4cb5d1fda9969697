package hosttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
)

// Client is one MCP session over newline-delimited JSON-RPC (stdio). It is
// used by one test goroutine; a reader goroutine, stopped by Close or by
// the end of the server's output, queues what the server writes.
type Client struct {
	t    testing.TB
	w    io.WriteCloser
	msgs chan Message
	done chan struct{} // closed when the reader ends

	mu     sync.Mutex
	nextID int64
	// Elicit answers elicitation/create requests that arrive while Call
	// waits. nil declines them.
	Elicit func(params json.RawMessage) any
	// Answer answers the server's other requests (sampling/createMessage,
	// roots/list) by method: the result, or nil for -32601.
	Answer func(method string, params json.RawMessage) any
}

// NewClient starts a client that writes requests to w and reads messages
// from r. Close (called by t.Cleanup too) closes w; the server ends the
// session, and the reader stops at the end of r.
func NewClient(t testing.TB, w io.WriteCloser, r io.Reader) *Client {
	c := &Client{t: t, w: w, msgs: make(chan Message, 1024), done: make(chan struct{})}
	go c.read(r)
	t.Cleanup(func() { c.Close() })
	return c
}

func (c *Client) read(r io.Reader) {
	defer close(c.done)
	defer close(c.msgs)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		m, err := decodeMessage(sc.Bytes())
		if err != nil {
			m = Message{Raw: append(json.RawMessage(nil), sc.Bytes()...), Error: &RPCError{Code: 1, Message: "unparsable line from the server: " + err.Error()}}
		}
		c.msgs <- m
	}
}

// Close ends the client's side of the session (closes the server's stdin)
// and waits until the server has closed its output.
func (c *Client) Close() {
	_ = c.w.Close()
	for range c.msgs {
	}
	<-c.done
}

// CloseInput closes the server's stdin (end of input) and returns at once.
func (c *Client) CloseInput() { _ = c.w.Close() }

// Done is closed when the server has closed its output.
func (c *Client) Done() <-chan struct{} { return c.done }

// SendRaw writes one line as it is.
func (c *Client) SendRaw(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatalf("hosttest: writing to the server: %v", err)
	}
}

// Send writes one message (any JSON value).
func (c *Client) Send(msg any) {
	c.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatalf("hosttest: encoding %v: %v", msg, err)
	}
	c.SendRaw(string(b))
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) {
	c.t.Helper()
	msg := rpcMessage(nil, method, params)
	c.Send(msg)
}

// Request sends a request and returns its ID without waiting.
func (c *Client) Request(method string, params any) int64 {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	msg := rpcMessage(id, method, params)
	c.Send(msg)
	return id
}

// Next returns the next message from the server, after checking its
// client-facing text. It fails the test when the server closed its output.
func (c *Client) Next() Message {
	c.t.Helper()
	m, ok := c.NextOrEnd()
	if !ok {
		c.t.Fatal("hosttest: the server closed the session")
	}
	return m
}

// NextOrEnd is Next that reports the end of the server's output as false
// instead of failing.
func (c *Client) NextOrEnd() (Message, bool) {
	c.t.Helper()
	m, ok := <-c.msgs
	if !ok {
		return Message{}, false
	}
	if m.Error != nil && m.Error.Code == 1 && m.ID == nil {
		c.t.Fatalf("hosttest: %s: %s", m.Error.Message, m.Raw)
	}
	if err := CheckClientText(m.Raw); err != nil {
		c.t.Errorf("hosttest: %v\nmessage: %s", err, m.Raw)
	}
	return m, true
}

// Await returns the response to request id. Notifications before it are
// passed to skip (which may be nil); server requests are answered:
// elicitation/create with Elicit, others with Answer, else -32601.
func (c *Client) Await(id int64, skip func(Message)) Message {
	c.t.Helper()
	for {
		m := c.Next()
		switch {
		case m.IsResponse() && fmt.Sprint(m.ID) == fmt.Sprint(id):
			return m
		case m.IsRequest():
			c.answer(m)
		case skip != nil:
			skip(m)
		}
	}
}

// Call sends a request and waits for its response (see Await).
func (c *Client) Call(method string, params any) Message {
	c.t.Helper()
	return c.Await(c.Request(method, params), nil)
}

func (c *Client) answer(m Message) {
	c.t.Helper()
	if m.Method == "elicitation/create" {
		var res any = map[string]any{"action": "decline"}
		if c.Elicit != nil {
			res = c.Elicit(m.Params)
		}
		c.Send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
		return
	}
	if c.Answer != nil {
		if res := c.Answer(m.Method, m.Params); res != nil {
			c.Send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
			return
		}
	}
	c.Send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "not supported by the test client"}})
}

// Initialize performs the initialize handshake at protocol 2025-11-25 with
// capabilities caps (nil: none) and returns the initialize result.
func (c *Client) Initialize(caps map[string]any) Message {
	c.t.Helper()
	r := c.Call("initialize", initializeParams(caps))
	if r.Error != nil {
		c.t.Fatalf("hosttest: initialize: %v", r.Error)
	}
	c.Notify("notifications/initialized", nil)
	return r
}

// CallTool calls tool with args as a plain call and decodes the result; a
// JSON-RPC error fails the test.
func (c *Client) CallTool(tool string, args any) ToolResult {
	c.t.Helper()
	return c.mustTool(c.Call("tools/call", map[string]any{"name": tool, "arguments": args}))
}

// StartTask calls tool with args as a task (ttl 0: the server's default)
// and returns the created task.
func (c *Client) StartTask(tool string, args any, ttlMs int64) Task {
	c.t.Helper()
	task := map[string]any{}
	if ttlMs > 0 {
		task["ttl"] = ttlMs
	}
	r := c.mustTool(c.Call("tools/call", map[string]any{"name": tool, "arguments": args, "task": task}))
	if r.Task == nil {
		c.t.Fatalf("hosttest: task call of %s returned no task", tool)
	}
	return *r.Task
}

// TaskResult blocks in tasks/result until the task ends.
func (c *Client) TaskResult(id string) ToolResult {
	c.t.Helper()
	return c.mustTool(c.Call("tasks/result", map[string]any{"taskId": id}))
}

// GetTask returns tasks/get of id.
func (c *Client) GetTask(id string) Task {
	c.t.Helper()
	var t Task
	if err := c.Call("tasks/get", map[string]any{"taskId": id}).Decode(&t); err != nil {
		c.t.Fatalf("hosttest: tasks/get %s: %v", id, err)
	}
	return t
}

func (c *Client) mustTool(m Message) ToolResult {
	c.t.Helper()
	var r ToolResult
	if err := m.Decode(&r); err != nil {
		c.t.Fatalf("hosttest: %v", err)
	}
	return r
}

// Stdio starts serve (a server's stdio loop, such as Server.ServeStdio) on
// pipes in a goroutine owned by the test and returns a Client on their
// other ends. At cleanup the client closes the server's stdin and waits for
// serve to return; an error other than nil fails the test.
func Stdio(t testing.TB, serve func(in io.Reader, out io.Writer) error) *Client {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := serve(inR, outW)
		outW.Close()
		inR.Close()
		errc <- err
	}()
	c := NewClient(t, inW, outR)
	t.Cleanup(func() {
		c.Close()
		if err := <-errc; err != nil {
			t.Errorf("hosttest: serving stdio: %v", err)
		}
	})
	return c
}
