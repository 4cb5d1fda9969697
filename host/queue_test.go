package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// TestTasksQueueInsteadOfFailingBusy, over MCP: while a tool's only slot
// is taken, its task calls are accepted and wait in the queue — their
// status says so, with their place — where a plain call beyond the queue
// bound is refused as busy; once the slot frees, every task completes.
func TestTasksQueueInsteadOfFailingBusy(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"defaults":{"maxConcurrency":1,"maxQueue":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"m.wasm": {Data: verModule(t, "ver", "v1")}}, CacheDir: testCacheDir, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // after the client's cleanup
	c := newClient(t, s)

	// A plain call takes the slot and holds it until the user answers.
	plain := c.Request("tools/call", map[string]any{"name": "ver", "arguments": map[string]any{"hold": true}})
	ask := readUntil(t, c, "the plain call to ask for input", func(m hosttest.Message) bool {
		return m.IsRequest() && m.Method == "elicitation/create"
	})
	queued := func(id, want string) {
		t.Helper()
		readUntil(t, c, "task "+id+" to report "+want, func(m hosttest.Message) bool {
			var st hosttest.Task
			return m.Method == "notifications/tasks/status" && json.Unmarshal(m.Params, &st) == nil &&
				st.TaskID == id && st.Status == "working" && strings.HasPrefix(st.StatusMessage, want)
		})
	}
	first := c.StartTask("ver", map[string]any{}, 0).TaskID
	queued(first, "queued: 0 calls waiting ahead")
	second := c.StartTask("ver", map[string]any{}, 0).TaskID
	queued(second, "queued: 1 calls waiting ahead")
	// The queued tasks leave the plain queue (bound 1) to plain calls: of
	// two more, one waits and the other is refused as busy at once.
	p1 := c.Request("tools/call", map[string]any{"name": "ver", "arguments": map[string]any{}})
	p2 := c.Request("tools/call", map[string]any{"name": "ver", "arguments": map[string]any{}})
	var refused hosttest.Message
	var waiting int64
	for refused.ID == nil {
		m := c.Next()
		switch id := m.ID; {
		case m.IsResponse() && fmt.Sprint(id) == fmt.Sprint(p1):
			refused, waiting = m, p2
		case m.IsResponse() && fmt.Sprint(id) == fmt.Sprint(p2):
			refused, waiting = m, p1
		}
	}
	if text, failed := outcome(t, refused); !failed || !strings.Contains(text, "busy") {
		t.Errorf("a plain call beyond the queue bound: %q (failed %v), want a busy error", text, failed)
	}
	if st := c.GetTask(second); st.Status != "working" {
		t.Fatalf("the second task is %s while queued, want working", st.Status)
	}

	c.Send(map[string]any{"jsonrpc": "2.0", "id": ask.ID, "result": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}})
	// Both answers come, in either order (the waiting call may start, and
	// answer, before the held one's answer is written).
	for pending := map[string]bool{fmt.Sprint(plain): true, fmt.Sprint(waiting): true}; len(pending) > 0; {
		m := c.Next()
		if !m.IsResponse() || !pending[fmt.Sprint(m.ID)] {
			continue
		}
		delete(pending, fmt.Sprint(m.ID))
		if text, failed := outcome(t, m); failed || text != "v1" {
			t.Fatalf("plain call %v: %q (failed %v), want v1", m.ID, text, failed)
		}
	}
	for _, id := range []string{first, second} {
		if res := c.TaskResult(id); res.IsError || res.Text() != "v1" {
			t.Errorf("task %s: %+v, want v1", id, res)
		}
	}
}
