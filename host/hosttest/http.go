package hosttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// HTTPClient is one MCP session over Streamable HTTP: each request is a
// POST whose answer is JSON or an SSE stream; server requests on that
// stream (elicitation/create) are answered with Elicit. Safe for use by one
// goroutine at a time per request; Request IDs are unique per client.
type HTTPClient struct {
	t   testing.TB
	URL string
	HC  *http.Client
	// Header is added to every request (authorization, for example).
	Header http.Header
	// Elicit answers elicitation/create requests; nil declines them.
	Elicit func(params json.RawMessage) any

	mu        sync.Mutex
	SessionID string
	nextID    int64
}

// NewHTTPClient returns a client of the MCP endpoint url. It does not
// connect until the first request.
func NewHTTPClient(t testing.TB, url string) *HTTPClient {
	return &HTTPClient{t: t, URL: url, HC: http.DefaultClient, Header: http.Header{}}
}

// Post sends one raw body and returns the HTTP response, unread.
func (c *HTTPClient) Post(body []byte) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range c.Header {
		req.Header[k] = v
	}
	c.mu.Lock()
	if c.SessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.SessionID)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	c.mu.Unlock()
	return c.HC.Do(req)
}

// Call sends a request and returns its response, reading an SSE stream to
// its end when the server answers with one.
func (c *HTTPClient) Call(method string, params any) Message {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	msg := rpcMessage(id, method, params)
	m, err := c.roundTrip(msg, id)
	if err != nil {
		c.t.Fatalf("hosttest: %s: %v", method, err)
	}
	return m
}

// Notify sends a notification.
func (c *HTTPClient) Notify(method string, params any) {
	c.t.Helper()
	msg := rpcMessage(nil, method, params)
	b, _ := json.Marshal(msg)
	resp, err := c.Post(b)
	if err != nil {
		c.t.Fatalf("hosttest: %s: %v", method, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func (c *HTTPClient) roundTrip(msg map[string]any, id int64) (Message, error) {
	b, _ := json.Marshal(msg)
	resp, err := c.Post(b)
	if err != nil {
		return Message{}, err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.mu.Lock()
		c.SessionID = sid
		c.mu.Unlock()
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return Message{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return readAnswer(resp, id, c.check, func(m Message) error {
		c.answer(m) // on its own POST, while this stream stays open
		return nil
	})
}

// readAnswer returns the response with ID id from a JSON body, or from an
// SSE stream read up to it; check decodes (and checks) each message, and
// onRequest is given the server's requests met on the stream.
func readAnswer(resp *http.Response, id int64, check func([]byte) (Message, error), onRequest func(Message) error) (Message, error) {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return Message{}, err
		}
		return check(body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimSpace(line[5:])...)
			continue
		case len(line) != 0 || len(data) == 0:
			continue
		}
		m, err := check(data)
		data = nil
		if err != nil {
			return Message{}, err
		}
		switch {
		case m.IsResponse() && fmt.Sprint(m.ID) == fmt.Sprint(id):
			return m, nil
		case m.IsRequest():
			if err := onRequest(m); err != nil {
				return Message{}, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Message{}, err
	}
	return Message{}, fmt.Errorf("the stream ended without a response to request %d", id)
}

func (c *HTTPClient) check(raw []byte) (Message, error) {
	m, err := decodeMessage(raw)
	if err != nil {
		return Message{}, fmt.Errorf("unparsable message %q: %v", raw, err)
	}
	if err := CheckClientText(m.Raw); err != nil {
		c.t.Errorf("hosttest: %v\nmessage: %s", err, m.Raw)
	}
	return m, nil
}

func (c *HTTPClient) answer(m Message) {
	var res any = map[string]any{"action": "decline"}
	if m.Method == "elicitation/create" && c.Elicit != nil {
		res = c.Elicit(m.Params)
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
	if resp, err := c.Post(b); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// Initialize performs the initialize handshake at protocol 2025-11-25.
func (c *HTTPClient) Initialize(caps map[string]any) Message {
	c.t.Helper()
	r := c.Call("initialize", initializeParams(caps))
	if r.Error != nil {
		c.t.Fatalf("hosttest: initialize: %v", r.Error)
	}
	c.Notify("notifications/initialized", nil)
	return r
}

// Close deletes the session.
func (c *HTTPClient) Close() {
	c.mu.Lock()
	sid := c.SessionID
	c.mu.Unlock()
	if sid == "" {
		return
	}
	req, _ := http.NewRequest(http.MethodDelete, c.URL, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if resp, err := c.HC.Do(req); err == nil {
		resp.Body.Close()
	}
}
