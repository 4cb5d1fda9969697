package mcpserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcphttp"
	"github.com/wasmtask/wasmtask/taskengine"
)

// httpClient is a Streamable HTTP session over the shared test client
// (hosttest), which checks every message it receives; elicitation requests
// are answered with accept/green.
type httpClient struct {
	t  testing.TB
	hc *hosttest.HTTPClient
}

func (ts *testServer) httpServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(ts.HTTPHandler())
	t.Cleanup(srv.Close)
	return srv
}

func newHTTPClient(t testing.TB, srv *httptest.Server) *httpClient {
	hc := hosttest.NewHTTPClient(t, srv.URL+mcphttp.Path)
	hc.HC = srv.Client()
	hc.Elicit = func(json.RawMessage) any {
		return map[string]any{"action": "accept", "content": map[string]any{"color": "green"}}
	}
	return &httpClient{t: t, hc: hc}
}

// do sends one raw request of the session (POST with body, or DELETE).
func (c *httpClient) do(method, body string) *http.Response {
	c.t.Helper()
	var resp *http.Response
	var err error
	if method == http.MethodPost {
		resp, err = c.hc.Post([]byte(body))
	} else {
		req, _ := http.NewRequest(method, c.hc.URL, nil)
		req.Header.Set("Mcp-Session-Id", c.hc.SessionID)
		resp, err = c.hc.HC.Do(req)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// call sends a request and returns its response as a map. (The shared
// client numbers requests itself; id only documents the call site.)
func (c *httpClient) call(_ int, method string, params any) map[string]any {
	c.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.hc.Call(method, params).Raw, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

func (c *httpClient) initialize() map[string]any {
	c.t.Helper()
	var m map[string]any
	_ = json.Unmarshal(c.hc.Initialize(map[string]any{"elicitation": map[string]any{}}).Raw, &m)
	return m
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
	<-ts.tools.cancelled
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
			// ask waits for the user; its question reaches the client on
			// the stream of the tasks/result below, which is then parked.
			id := taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "ask", "task": map[string]any{}}))
			parked := make(chan struct{})
			done := make(chan int, 1)
			go func() {
				resp := c.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":%q}}`, id))
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				seen := false
				for sc.Scan() {
					if !seen && strings.Contains(sc.Text(), "elicitation/create") {
						seen = true
						close(parked)
					}
				}
				done <- resp.StatusCode
			}()
			<-parked
			if how == "delete" {
				resp := c.do(http.MethodDelete, "")
				resp.Body.Close()
			} else {
				ts.Close()
			}
			<-done // the pending tasks/result returned
		})
	}
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

// Params that go-sdk cannot decode are refused in the client's terms over
// HTTP too (the shared client checks every message it receives).
func TestHTTPParamsErrorsInClientTerms(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := hosttest.NewHTTPClient(t, srv.URL+mcphttp.Path)
	c.HC = srv.Client()
	c.Initialize(nil)
	defer c.Close()
	for _, tt := range []struct {
		method string
		params any
		want   string
	}{
		{"tools/call", map[string]any{"name": 7}, `invalid params for tools/call: "name" must be a string`},
		{"tasks/get", map[string]any{"taskId": 5}, `invalid params for tasks/get: "taskId" must be a string`},
		{"tasks/cancel", "x", "invalid params for tasks/cancel: params must be an object"},
	} {
		r := c.Call(tt.method, tt.params)
		if r.Code() != -32602 || r.Error.Message != tt.want {
			t.Errorf("%s %v: got %s, want -32602 %q", tt.method, tt.params, r.Raw, tt.want)
		}
	}
}

// A session's input requests are bounded, whichever tasks ask: with five
// tasks asking the user at once and no answer given, four wait for the
// user (input_required) and the fifth fails, saying why.
func TestSessionElicitationsBounded(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := newHTTPClient(t, ts.httpServer(t))
	c.initialize()
	var ids []string
	for i := range mcpevents.MaxOpenElicits + 1 {
		ids = append(ids, taskIDOf(t, c.call(i, "tools/call", map[string]any{"name": "ask", "task": map[string]any{}})))
	}
	status := map[string]string{}
	for {
		counts := map[string]int{}
		for _, id := range ids {
			task, _ := c.call(0, "tasks/get", map[string]any{"taskId": id})["result"].(map[string]any)
			st, _ := task["status"].(string)
			status[id] = st
			counts[st]++
		}
		if counts["input_required"]+counts["failed"] == len(ids) {
			if counts["failed"] != 1 {
				t.Fatalf("statuses %v, want %d input_required and 1 failed", status, mcpevents.MaxOpenElicits)
			}
			break
		}
		if counts["completed"] > 0 {
			t.Fatalf("a task completed without an answer: %v", status)
		}
	}
	for _, id := range ids {
		if status[id] != "failed" {
			continue
		}
		res := c.call(0, "tasks/result", map[string]any{"taskId": id})
		if b, _ := json.Marshal(res); !strings.Contains(string(b), "input requests waiting for the user") {
			t.Errorf("the refused task's result %s does not say why", b)
		}
	}
}

// TestHTTPTaskStatusOnTheGetStream: notifications/tasks/status reaches a
// Streamable HTTP session too, on its GET stream, ending with the task's
// terminal status.
func TestHTTPTaskStatusOnTheGetStream(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := newHTTPClient(t, ts.httpServer(t))
	c.initialize()
	req, _ := http.NewRequest(http.MethodGet, c.hc.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.hc.SessionID)
	get, err := c.hc.HC.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", get.StatusCode)
	}
	id := taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "Ada"}, "task": map[string]any{}}))
	sc := bufio.NewScanner(get.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var n struct {
			Method string `json:"method"`
			Params struct {
				TaskID string `json:"taskId"`
				Status string `json:"status"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(data), &n); err != nil {
			t.Fatalf("GET stream event %s: %v", data, err)
		}
		if n.Method != "notifications/tasks/status" || n.Params.TaskID != id {
			t.Fatalf("GET stream carried %s, want the task's status", data)
		}
		if n.Params.Status == "completed" {
			return
		}
	}
	t.Fatal("the GET stream ended before the task's completed status")
}
