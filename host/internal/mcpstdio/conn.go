package mcpstdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/rpcmsg"
)

// Conn is an mcp.Connection over newline-delimited JSON: one session on a
// process's stdin and stdout (see the package doc).
type Conn struct {
	id     string
	in     io.Reader
	max    int
	blocks func(method string) bool
	frames chan frame
	closed chan struct{}
	once   sync.Once

	wmu sync.Mutex
	out io.Writer

	// Requests read but not yet answered. At end of input, Read waits
	// (bounded by eofGrace) until calls are answered before it reports EOF,
	// so that a client that writes its requests and closes its end still
	// gets every answer; a blocked tasks/result is not waited for there (it
	// may wait as long as its task runs). When the server closes the
	// session, both are waited for (Flush): a tasks/result released by the
	// close is answered, not cut off.
	calls, results answerSet
}

// eofGrace bounds how long the end of input waits for the answers of
// requests in flight: the server answers what it can, then the session
// ends, even when a request (a subscriptions/listen, a long tool call)
// would take longer.
const eofGrace = 750 * time.Millisecond

type frame struct {
	data     []byte
	tooLarge bool
	err      error
}

// New returns the connection of the session id on in and out, whose
// messages are at most max bytes; blocks names the methods whose answer
// may wait as long as a task runs (the end of input does not wait for
// them, see Conn.Flush). It starts the reader goroutine, which ends when
// in returns an error (EOF included) or when the connection is closed and
// in is an io.Closer (a reader that can be neither closed nor ended keeps
// the goroutine parked in Read until it returns, as with any blocking
// stdin read).
func New(id string, in io.Reader, out io.Writer, max int, blocks func(method string) bool) *Conn {
	c := &Conn{
		id:     id,
		in:     in,
		out:    out,
		max:    max,
		blocks: blocks,
		frames: make(chan frame),
		closed: make(chan struct{}),
	}
	go c.readLoop()
	return c
}

func (c *Conn) readLoop() {
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

func (c *Conn) send(f frame) bool {
	select {
	case c.frames <- f:
		return true
	case <-c.closed:
		return false
	}
}

// Read implements mcp.Connection.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
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
			c.waitAnswered(ctx, &c.calls)
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
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			if c.blocks(req.Method) {
				c.results.add(req.ID.Raw(), +1)
			} else {
				c.calls.add(req.ID.Raw(), +1)
			}
		}
		return msg, nil
	}
}

// decode turns one line into a message, answering lines that are not one.
func (c *Conn) decode(data []byte) (jsonrpc.Message, error) {
	data = bytes.TrimSpace(data)
	if !json.Valid(data) {
		c.writeError(nil, jsonrpc.CodeParseError, "parse error: not valid JSON")
		return nil, errBadFrame
	}
	if data[0] == '[' {
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported")
		return nil, errBadFrame
	}
	msg, err := rpcmsg.Decode(data)
	if err != nil {
		c.writeError(rawID(data), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, errBadFrame
	}
	return msg, nil
}

var errBadFrame = errors.New("bad frame")

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

func (c *Conn) writeError(id json.RawMessage, code int, msg string) {
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
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	err = c.writeLine(b)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if !c.calls.add(resp.ID.Raw(), -1) {
			c.results.add(resp.ID.Raw(), -1)
		}
	}
	return err
}

// answerSet counts the requests read and not yet answered, by ID.
type answerSet struct {
	mu      sync.Mutex
	pending map[any]int
	idle    chan struct{} // closed when pending becomes empty; nil while empty
}

// add counts a request read (+1) or answered (-1); an answer of a request
// the set does not hold reports false.
func (a *answerSet) add(id any, delta int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if delta < 0 && a.pending[id] == 0 {
		return false
	}
	if a.pending == nil {
		a.pending = make(map[any]int)
	}
	if delta > 0 && len(a.pending) == 0 {
		a.idle = make(chan struct{})
	}
	if n := a.pending[id] + delta; n > 0 {
		a.pending[id] = n
	} else {
		delete(a.pending, id)
	}
	if len(a.pending) == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
	return true
}

// idleChan is closed when nothing is pending (nil: nothing is now).
func (a *answerSet) idleChan() chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.idle
}

// waitAnswered blocks until every request of sets read so far has been
// answered, eofGrace has passed, ctx is done, or the connection is closed.
func (c *Conn) waitAnswered(ctx context.Context, sets ...*answerSet) {
	grace := time.NewTimer(eofGrace)
	defer grace.Stop()
	for _, set := range sets {
		idle := set.idleChan()
		if idle == nil {
			continue
		}
		select {
		case <-idle:
		case <-grace.C:
			return
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		}
	}
}

// Flush waits (bounded by eofGrace) until every request read has been
// answered, those of blocking methods included: call it when the session
// is ending and its blocked requests were released.
func (c *Conn) Flush() { c.waitAnswered(context.Background(), &c.calls, &c.results) }

func (c *Conn) writeLine(b []byte) error {
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing: %w", err)
	}
	return nil
}

// Close implements mcp.Connection. It closes the input when it is an
// io.Closer, so the reader goroutine ends.
func (c *Conn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		if cl, ok := c.in.(io.Closer); ok {
			_ = cl.Close()
		}
	})
	return nil
}

// SessionID implements mcp.Connection: it names the session for ownership.
func (c *Conn) SessionID() string { return c.id }
