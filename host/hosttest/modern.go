package hosttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"testing"
)

// ModernVersion is the protocol version of ModernClient's requests.
const ModernVersion = "2026-07-28"

// TasksExtension names the MCP tasks extension in client capabilities.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Capabilities a 2026-07-28 request may declare in its _meta.
var (
	// WithTasks declares the tasks extension and elicitation.
	WithTasks = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{TasksExtension: map[string]any{}}}
	// NoCapabilities declares nothing.
	NoCapabilities = map[string]any{}
)

// ModernMeta is the _meta every 2026-07-28 request carries: its protocol
// version, client info and the capabilities caps.
func ModernMeta(caps map[string]any) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    ModernVersion,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "hosttest", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// ModernParams returns params (nil: none) with the 2026-07-28 _meta for caps
// merged into its _meta.
func ModernParams(params map[string]any, caps map[string]any) map[string]any {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]any{}
	}
	meta, _ := out["_meta"].(map[string]any)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]any{}
	}
	maps.Copy(meta, ModernMeta(caps))
	out["_meta"] = meta
	return out
}

// ModernClient sends 2026-07-28 requests over Streamable HTTP: no session,
// each request standing alone with its own _meta and the routing headers
// (Mcp-Method, and Mcp-Name from params.name or params.taskId). Every
// message it receives is checked with CheckClientText.
type ModernClient struct {
	t   testing.TB
	URL string
	HC  *http.Client
	// Capabilities are declared by every request (default WithTasks).
	Capabilities map[string]any
	// Header is added to every request (authorization, for example).
	Header http.Header

	mu     sync.Mutex
	nextID int64
}

// NewModernClient returns a client of the MCP endpoint url.
func NewModernClient(t testing.TB, url string) *ModernClient {
	return &ModernClient{t: t, URL: url, HC: http.DefaultClient, Capabilities: WithTasks, Header: http.Header{}}
}

// Call sends method with params and returns the response, failing the
// test when there is none.
func (c *ModernClient) Call(method string, params map[string]any) Message {
	c.t.Helper()
	_, m := c.Do(method, params, nil)
	return m
}

// Do sends method with params, with the standard headers changed by hdr
// (a value "" deletes one), and returns the HTTP status and the response
// message (the zero Message when the body held none).
func (c *ModernClient) Do(method string, params map[string]any, hdr http.Header) (int, Message) {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	p := ModernParams(params, c.Capabilities)
	body, _ := json.Marshal(rpcMessage(id, method, p))
	req, err := http.NewRequest(http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", ModernVersion)
	req.Header.Set("Mcp-Method", method)
	for _, key := range []string{"name", "uri", "taskId"} {
		if v, ok := params[key].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	for k, v := range hdr {
		if len(v) == 1 && v[0] == "" {
			req.Header.Del(k)
			continue
		}
		req.Header[k] = v
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		c.t.Fatalf("hosttest: %s: %v", method, err)
	}
	defer resp.Body.Close()
	m, err := c.read(resp, id)
	if err != nil {
		c.t.Fatalf("hosttest: %s (HTTP %d): %v", method, resp.StatusCode, err)
	}
	return resp.StatusCode, m
}

// read returns the response with ID id. A 2026-07-28 server sends no
// requests of its own: one on the stream is an error.
func (c *ModernClient) read(resp *http.Response, id int64) (Message, error) {
	return readAnswer(resp, id, c.check, func(m Message) error {
		return fmt.Errorf("a 2026-07-28 server sent a request on the stream: %s", m.Raw)
	})
}

func (c *ModernClient) check(raw []byte) (Message, error) {
	m, err := decodeMessage(raw)
	if err != nil {
		return Message{}, fmt.Errorf("unparsable message %q: %v", raw, err)
	}
	if err := CheckClientText(m.Raw); err != nil {
		c.t.Errorf("hosttest: %v\nmessage: %s", err, m.Raw)
	}
	return m, nil
}
