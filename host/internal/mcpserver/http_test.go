package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/taskengine"
)

// httpClient speaks raw Streamable HTTP to /mcp.
type httpClient struct {
	t   testing.TB
	url string
	sid string
	hc  *http.Client
}

func (ts *testServer) httpServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(ts.HTTPHandler())
	t.Cleanup(srv.Close)
	return srv
}

func newHTTPClient(t testing.TB, srv *httptest.Server) *httpClient {
	return &httpClient{t: t, url: srv.URL + HTTPPath, hc: srv.Client()}
}

func (c *httpClient) do(method, body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// call POSTs one request and returns its response, answering elicitation
// requests that arrive on the stream with accept/blue.
func (c *httpClient) call(id int, method string, params any) map[string]any {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	resp := c.do(http.MethodPost, string(b))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, body)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.sid = sid
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			c.t.Fatal(err)
		}
		return m
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.t.Fatalf("%s: stream ended without a response: %v", method, err)
		}
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			c.t.Fatalf("bad event %q: %v", data, err)
		}
		if m["method"] == "elicitation/create" {
			rid, _ := json.Marshal(m["id"])
			r := c.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"color":"green"}}}`, rid))
			r.Body.Close()
			continue
		}
		if _, isReq := m["method"]; !isReq && idOf(m) == fmt.Sprint(id) {
			return m
		}
	}
}

func (c *httpClient) notify(method string) {
	resp := c.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, method))
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("%s: HTTP %d, want 202", method, resp.StatusCode)
	}
}

func (c *httpClient) initialize() map[string]any {
	c.t.Helper()
	r := c.call(0, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	c.notify("notifications/initialized")
	return r
}

func TestHTTPTasks(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	init := c.initialize()
	caps, _ := result(init)["capabilities"].(map[string]any)
	if b, _ := json.Marshal(caps["tasks"]); string(b) != `{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}` {
		t.Errorf("tasks capability: got %s", b)
	}
	tools, _ := result(c.call(1, "tools/list", nil))["tools"].([]any)
	for _, tl := range tools {
		if ex, _ := tl.(map[string]any)["execution"].(map[string]any); ex["taskSupport"] == nil {
			t.Errorf("tool without execution.taskSupport: %v", tl)
		}
	}

	id := taskIDOf(t, c.call(2, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "Ada"}, "task": map[string]any{"ttl": 1000}}))
	if got := result(c.call(3, "tasks/get", map[string]any{"taskId": id}))["ttl"]; got != float64(1000) {
		t.Errorf("ttl: got %v, want 1000", got)
	}
	r := result(c.call(4, "tasks/result", map[string]any{"taskId": id}))
	if b, _ := json.Marshal(r); string(b) != fmt.Sprintf(`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":%q}},"content":[{"text":"hello Ada","type":"text"}]}`, id) {
		t.Errorf("tasks/result: got %s", b)
	}
	if got := errCode(c.call(5, "tools/call", map[string]any{"name": "plain", "task": map[string]any{}})); got != -32601 {
		t.Errorf("forbidden tool as a task: got code %d, want -32601", got)
	}
	if got := errCode(c.call(6, "tools/call", map[string]any{"name": "required"})); got != -32601 {
		t.Errorf("required tool plainly: got code %d, want -32601", got)
	}

	// Elicitation travels on the tasks/result stream.
	ask := taskIDOf(t, c.call(7, "tools/call", map[string]any{"name": "ask", "task": map[string]any{}}))
	r = result(c.call(8, "tasks/result", map[string]any{"taskId": ask}))
	if b, _ := json.Marshal(r["content"]); !strings.Contains(string(b), `green`) {
		t.Errorf("elicited task result: got %s, want the answer green", b)
	}

	// Another session sees nothing.
	other := newHTTPClient(t, srv)
	other.initialize()
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if got := errCode(other.call(1, m, map[string]any{"taskId": id})); got != -32602 {
			t.Errorf("other session's %s: got %d, want -32602", m, got)
		}
	}
	if got := result(other.call(2, "tasks/list", nil))["tasks"].([]any); len(got) != 0 {
		t.Errorf("other session's tasks/list: got %v, want none", got)
	}

	// Cancel a running task.
	slow := taskIDOf(t, c.call(9, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))
	<-ts.tools.started
	if got := result(c.call(10, "tasks/cancel", map[string]any{"taskId": slow}))["status"]; got != "cancelled" {
		t.Errorf("tasks/cancel: got status %v, want cancelled", got)
	}
	select {
	case <-ts.tools.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled task's tool never saw its context end")
	}
	// Malformed input over HTTP gets an error and the session goes on.
	if got := errCode(c.call(11, "tasks/get", nil)); got != -32602 {
		t.Errorf("tasks/get without params: got %d, want -32602", got)
	}
	if got := result(c.call(12, "tasks/list", nil))["tasks"].([]any); len(got) != 3 {
		t.Errorf("own tasks/list: got %d tasks, want 3", len(got))
	}
}

// DELETE of a session and Server.Close both release a blocked tasks/result.
func TestHTTPReleaseBlockedResult(t *testing.T) {
	for _, how := range []string{"delete", "close"} {
		t.Run(how, func(t *testing.T) {
			ts := newTestServer(t, taskengine.Config{})
			srv := ts.httpServer(t)
			c := newHTTPClient(t, srv)
			c.initialize()
			id := taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))
			<-ts.tools.started
			done := make(chan int, 1)
			go func() {
				resp := c.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":%q}}`, id))
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				done <- resp.StatusCode
			}()
			waitAttached(t, ts, id)
			finished := make(chan struct{})
			go func() {
				defer close(finished)
				if how == "delete" {
					resp := c.do(http.MethodDelete, "")
					resp.Body.Close()
				} else {
					ts.Close()
				}
			}()
			select {
			case <-finished:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s blocked behind a pending tasks/result", how)
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the pending tasks/result never returned")
			}
		})
	}
}

// waitAttached waits until a tasks/result for id is parked in the server.
func waitAttached(t testing.TB, ts *testServer, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ts.mu.Lock()
		_, ok := ts.attached[id]
		ts.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond) // polling a condition, not synchronising on time
	}
	t.Fatal("tasks/result never parked")
}

// A body within MaxMessageBytes is accepted whether or not it carries
// params.task (lifting it makes the body go-sdk sees a little larger); one
// byte over the limit is refused with 413.
func TestHTTPBodyLimitCountsWhatTheClientSent(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := newHTTPClient(t, ts.httpServer(t))
	c.initialize()
	body := func(size int) string {
		head := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"quick","task":{},"arguments":{"name":"`
		tail := `"}}}`
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct {
		size int
		want int
	}{
		{DefaultMaxMessageBytes - 10, http.StatusOK},
		{DefaultMaxMessageBytes + 1, http.StatusRequestEntityTooLarge},
	} {
		resp := c.do(http.MethodPost, body(tc.size))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("task call of %d bytes: got HTTP %d, want %d", tc.size, resp.StatusCode, tc.want)
		}
	}
}

func TestLiftBody(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`},
		{"task lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":5}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.wasmtask/lifted-task":{"ttl":5}},"name":"a"}}`},
		{"injection stripped", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.wasmtask/lifted-task":{},"k":1}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"k":1},"name":"a"}}`},
		{"escaped injection stripped", `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"a","_meta":{"io.wasmtask\/lifted-task":{}}}}`,
			`{"id":1,"jsonrpc":"2.0","method":"tools\/call","params":{"_meta":{},"name":"a"}}`},
		{"other method untouched", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"task":{}}}`, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"task":{}}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","task":{}}}]`,
			`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":2,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.wasmtask/lifted-task":{}},"name":"a"}}]`},
		{"not json", `{"jsonrpc":`, `{"jsonrpc":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(liftBody([]byte(tc.in)))
			// Compare as canonical JSON where possible.
			if canonical(got) != canonical(tc.want) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func FuzzLiftTaskParams(f *testing.F) {
	f.Add([]byte(`{"name":"a","task":{"ttl":5},"_meta":{"x":1}}`))
	f.Add([]byte(`{"_meta":null,"task":null}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, params []byte) {
		out := liftTaskParams(params)
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) != nil || bytes.Equal(out, params) {
			return
		}
		if _, ok := m["task"]; ok {
			t.Errorf("task left in %s", out)
		}
	})
}
