package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/taskengine"
)

func taskIDOf(t testing.TB, m map[string]any) string {
	task, _ := result(m)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" {
		panic(fmt.Sprintf("no task in %v", m))
	}
	return id
}

// Another session cannot see, wait for, cancel or list a session's tasks.
func TestCrossSessionIsolation(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	a, b := ts.connectStdio(t), ts.connectStdio(t)
	a.initialize(true)
	b.initialize(true)
	id := taskIDOf(t, a.call(1, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))

	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		r := b.call(2, method, map[string]any{"taskId": id})
		if got := errCode(r); got != -32602 {
			t.Errorf("other session's %s: got error code %d, want -32602 (%v)", method, got, r)
		}
	}
	if got := result(b.call(3, "tasks/list", nil))["tasks"]; len(got.([]any)) != 0 {
		t.Errorf("other session's tasks/list: got %v, want no tasks", got)
	}
	if got := result(a.call(4, "tasks/list", nil))["tasks"]; len(got.([]any)) != 1 {
		t.Errorf("own tasks/list: got %v, want one task", got)
	}
	if r := a.call(5, "tasks/get", map[string]any{"taskId": id}); result(r)["status"] != "working" {
		t.Errorf("own tasks/get after the other session's cancel: got %v, want working", r)
	}
}

// Close returns while a tasks/result is blocked, and the stdio session ends.
func TestCloseReleasesBlockedResult(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(true)
	id := taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))
	<-ts.tools.started
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":%q}}`, id))
	// Wait until the request is parked: a tasks/get answered after it was
	// sent proves the server read it.
	c.call(3, "tasks/get", map[string]any{"taskId": id})

	closed := make(chan error, 1)
	go func() { closed <- ts.Close() }()
	<-closed
	err := <-c.done
	if err != ErrClosed {
		t.Errorf("ServeStdio returned %v, want ErrClosed", err)
	}
}

// A client that goes away (EOF) while blocked in tasks/result ends its
// session cleanly; the task itself lives on.
func TestClientEOFWithBlockedResult(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(true)
	id := taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))
	<-ts.tools.started
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":%q}}`, id))
	c.call(3, "ping", nil)
	c.closeInput()
	err := <-c.done
	if err != nil {
		t.Errorf("ServeStdio after EOF: got %v, want nil", err)
	}
	if n := ts.engine.Stats().Running; n != 1 {
		t.Errorf("running tasks after the session ended: got %d, want 1 (tasks outlive sessions)", n)
	}
}

// notifications/cancelled for a plain call stops the tool (go-sdk cancels
// the handler's context).
func TestPlainCallCancelledNotification(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(true)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`)
	<-ts.tools.started
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`)
	cause := <-ts.tools.cancelled
	if cause != "context canceled" {
		t.Errorf("tool saw cause %q, want context canceled", cause)
	}
	if r := c.call(8, "ping", nil); r["error"] != nil {
		t.Errorf("ping after cancellation: %v", r)
	}
}

// On stdio the server sends notifications/tasks/status on status changes.
func TestStatusNotifications(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(true)
	id := taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "x"}, "task": map[string]any{}}))
	for {
		m := c.next()
		if m["method"] != methodTaskStatus {
			continue
		}
		p, _ := m["params"].(map[string]any)
		if p["taskId"] != id {
			t.Fatalf("status notification for task %v, want %s", p["taskId"], id)
		}
		if p["status"] == "completed" {
			if _, ok := p["_meta"]; ok {
				t.Errorf("status notification carries _meta %v; the spec says it should not", p["_meta"])
			}
			return
		}
	}
}

// The per-requestor limit of running tasks gives a clear JSON-RPC error.
func TestOwnerLimit(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{MaxRunningPerOwner: 1})
	c := ts.connectStdio(t)
	c.initialize(true)
	taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))
	r := c.call(2, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	if got := errCode(r); got != mcperr.CodeLimit {
		t.Errorf("second task over the limit: got code %d, want %d (%v)", got, mcperr.CodeLimit, r)
	}
	other := ts.connectStdio(t)
	other.initialize(true)
	taskIDOf(t, other.call(1, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))
}

// ToolsChanged after a change sends notifications/tools/list_changed and the
// new list, with taskSupport, is served.
func TestToolsChangedListChanged(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(true)
	c.call(1, "tools/list", nil)
	ts.tools.set([]abi.Tool{{Name: "fresh", TaskSupport: abi.TaskRequired}})
	ts.ToolsChanged()
	for {
		if m := c.next(); m["method"] == "notifications/tools/list_changed" {
			break
		}
	}
	r := c.call(2, "tools/list", nil)
	b, _ := json.Marshal(result(r)["tools"])
	if want := `[{"execution":{"taskSupport":"required"},"inputSchema":{"type":"object"},"name":"fresh"}]`; string(b) != want {
		t.Errorf("tools after reload: got %s, want %s", b, want)
	}
	if got := errCode(c.call(3, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "x"}})); got != -32602 {
		t.Errorf("call of a removed tool: got code %d, want -32602", got)
	}
}

// A panic in a tool during a plain call is an internal error, and the
// session goes on.
func TestPanicRecovered(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	ts.tools.set(append(ts.tools.Tools(), abi.Tool{Name: "boom"}))
	ts.catalog.Store(panicky{ts.tools})
	c := ts.connectStdio(t)
	c.initialize(true)
	if got := errCode(c.call(1, "tools/call", map[string]any{"name": "boom"})); got != -32603 {
		t.Errorf("panicking tool: got code %d, want -32603", got)
	}
	if r := c.call(2, "ping", nil); r["error"] != nil {
		t.Errorf("ping after a panic: %v", r)
	}
}

// Every request gives back the catalog it held, and a task holds it until
// its work ends: a reload can close old modules only after the last holder.
func TestCatalogHeldUntilWorkEnds(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(true)
	c.call(1, "tools/list", nil)
	c.call(2, "tools/call", map[string]any{"name": "plain"})
	c.call(3, "tools/call", map[string]any{"name": "nope"})
	c.call(4, "tools/call", map[string]any{"name": "required"}) // -32601 before any work
	id := taskIDOf(t, c.call(5, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))
	<-ts.tools.started
	if held := ts.holds.Load() - ts.releases.Load(); held != 1 {
		t.Errorf("while a task runs: %d catalog references held, want 1 (the task's)", held)
	}
	ts.tools.release <- struct{}{}
	c.call(6, "tasks/result", map[string]any{"taskId": id})
	if ts.holds.Load() != ts.releases.Load() || ts.holds.Load() != 5 {
		t.Errorf("after the task: %d references taken, %d given back; want 5 and 5", ts.holds.Load(), ts.releases.Load())
	}
}

// TestStdioDuplicateRequestID: a request reusing the ID of one still in
// flight is refused with -32600 and never runs, whichever path serves the
// first (tools/call is answered before go-sdk, ping by go-sdk); once the
// first is answered the ID may be used again.
func TestStdioDuplicateRequestID(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(true)
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	<-ts.tools.started
	dup := c.call(5, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "x"}})
	if got := errCode(dup); got != -32600 || !strings.Contains(errMessage(dup), "still in flight") {
		t.Fatalf("a second request with id 5: %v, want -32600 naming the request in flight", dup)
	}
	ts.tools.release <- struct{}{}
	first := c.next()
	if idOf(first) != "5" || first["result"] == nil {
		t.Fatalf("the first request's answer: %v", first)
	}
	if got := result(c.call(5, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "again"}})); got == nil {
		t.Errorf("id 5 once answered: no result")
	}
}

// TestOwnAnswerKeepsHTML: a result answered before go-sdk keeps <, > and &
// as they are, as go-sdk writes them.
func TestOwnAnswerKeepsHTML(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.initialize(true)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"quick","arguments":{"name":"<b>&</b>"}}}`)
	for {
		m, raw, ok := c.nextRaw()
		if !ok {
			t.Fatal("no answer")
		}
		if idOf(m) != "7" {
			continue
		}
		if !strings.Contains(raw, "hello <b>&</b>") {
			t.Errorf("answer %s: want the text unescaped", raw)
		}
		return
	}
}

// TestRequestBeforeInitialize: a 2025-11-25 session's request before
// initialize gets -32600 saying what to send first, not an internal error;
// ping is allowed, and the session goes on to initialize.
func TestRequestBeforeInitialize(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	for _, method := range []string{"tools/list", "tools/call", "tasks/get"} {
		r := c.call(1, method, map[string]any{})
		if got := errCode(r); got != -32600 || !strings.Contains(errMessage(r), "before initialize") {
			t.Errorf("%s before initialize: %v, want -32600 naming initialize", method, r)
		}
	}
	if r := c.call(2, "ping", nil); r["result"] == nil {
		t.Errorf("ping before initialize: %v, want a result", r)
	}
	c.initialize(true)
	if r := c.call(3, "tools/list", nil); r["result"] == nil {
		t.Errorf("tools/list after initialize: %v", r)
	}
}
