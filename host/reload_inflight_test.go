package host

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// TestReloadRunningCallsFinishOnOldVersion starts a task that waits for the
// user, a sleeping task and a plain call that waits for the user, then
// replaces or removes their module. New calls go to the new version; the
// running ones finish on the old one, and their results stay retrievable;
// the old compiled module is released only after the last of them ends.
// With CancelRemoved they are ended instead.
//
// The calls that wait for the user are running for as long as the test
// does not answer, so nothing depends on how long a reload takes.
func TestReloadRunningCallsFinishOnOldVersion(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cancelRemoved bool
		change        func(t *testing.T, dir string)
		tools         []string
	}{
		{"replace", false, func(t *testing.T, dir string) { put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-2")) }, []string{"alpha"}},
		{"remove", false, func(t *testing.T, dir string) { remove(t, dir, "a.wasm") }, []string{}},
		{"remove with CancelRemoved", true, func(t *testing.T, dir string) { remove(t, dir, "a.wasm") }, []string{}},
		{"replace with CancelRemoved", true, func(t *testing.T, dir string) { put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-2")) }, []string{"alpha"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
			s, _ := newReloadServer(t, Config{ToolsDir: dir, CancelRemoved: tc.cancelRemoved})
			c := newClient(t, s)
			elicited := 0
			c.Elicit = func(json.RawMessage) any {
				elicited++
				return map[string]any{"action": "accept", "content": map[string]any{"ok": true}}
			}
			old := s.catalog.Load().tools["alpha"].code

			// A task that asks the user: it waits in input_required until
			// a tasks/result delivers the question.
			held := c.StartTask("alpha", map[string]any{"hold": true}, 0).TaskID
			readUntil(t, c, "the held task to ask for input", func(m hosttest.Message) bool {
				var st hosttest.Task
				return m.Method == "notifications/tasks/status" && json.Unmarshal(m.Params, &st) == nil &&
					st.TaskID == held && st.Status == "input_required"
			})
			// A task that sleeps: without CancelRemoved it ends on its own
			// (before or after the reload: it was dispatched to the first
			// version either way); with it, it runs until it is ended.
			ms := 100
			if tc.cancelRemoved {
				ms = 60000
			}
			sleeping := c.StartTask("alpha", map[string]any{"ms": ms}, 0).TaskID
			// A plain call that asks the user, on this session: it runs
			// until the test answers.
			plain := c.Request("tools/call", map[string]any{"name": "alpha", "arguments": map[string]any{"hold": true}})
			ask := readUntil(t, c, "the plain call to ask for input", func(m hosttest.Message) bool {
				return m.IsRequest() && m.Method == "elicitation/create"
			})

			before := seq(s)
			tc.change(t, dir)
			await(s, after(before, serves(tc.tools...)))
			if tc.cancelRemoved {
				// The reload ends the calls on the old version after the
				// swap; the module is done when the last has ended (a leak
				// hangs here). Only then does the test answer anything: a
				// question answered before the abort would let a call
				// finish.
				<-old.Done()
				// The plain call's response is awaited first: Await drops
				// the responses it does not wait for.
				if text, failed := outcome(t, c.Await(plain, nil)); !failed || !strings.Contains(text, "removed") {
					t.Errorf("plain call: got %q (failed: %v), want a failure saying the module was removed", text, failed)
				}
			}
			if len(tc.tools) > 0 {
				if got := c.CallTool("alpha", map[string]any{}).Text(); got != "alpha-2" {
					t.Errorf("new call after the reload: got %q, want alpha-2", got)
				}
			}

			if tc.cancelRemoved {
				// Every call on the old version ends, with a reason.
				for _, id := range []string{held, sleeping} {
					if text, failed := outcome(t, c.Call("tasks/result", map[string]any{"taskId": id})); !failed || !strings.Contains(text, "removed") {
						t.Errorf("task %s: got %q (failed: %v), want a failure saying the module was removed", id, text, failed)
					}
					if st := c.GetTask(id).Status; st != "failed" && st != "cancelled" {
						t.Errorf("tasks/get %s: got %q, want failed or cancelled", id, st)
					}
				}
				return
			}

			// The held calls cannot have ended: the old module must still be
			// alive.
			select {
			case <-old.Done():
				t.Fatal("the old compiled module was released while calls still ran on it")
			default:
			}
			if st := c.GetTask(held).Status; st != "input_required" {
				t.Fatalf("held task after the reload: got %q, want input_required", st)
			}
			c.Send(map[string]any{"jsonrpc": "2.0", "id": ask.ID, "result": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}})
			if got := answer(t, c.Await(plain, nil)); got != "alpha-1" {
				t.Errorf("plain call: got %q, want the first version's alpha-1", got)
			}
			for _, id := range []string{held, sleeping} {
				if got := answer(t, c.Call("tasks/result", map[string]any{"taskId": id})); got != "alpha-1" {
					t.Errorf("task %s: got %q, want the first version's alpha-1", id, got)
				}
			}
			<-old.Done() // released after its last call; a leak hangs here
			// Results stay retrievable after the module is gone.
			for _, id := range []string{held, sleeping} {
				if st := c.GetTask(id).Status; st != "completed" {
					t.Errorf("tasks/get %s: got %q, want completed", id, st)
				}
				if got := answer(t, c.Call("tasks/result", map[string]any{"taskId": id})); got != "alpha-1" {
					t.Errorf("tasks/result %s again: got %q, want alpha-1", id, got)
				}
			}
			if elicited != 1 {
				t.Errorf("the client answered %d questions through tasks/result, want 1 (the held task's)", elicited)
			}
		})
	}
}

// readUntil reads messages from the session until one satisfies match, and
// returns it. The messages before it must be notifications: a response or
// a server request there is a mistake of the test.
func readUntil(tb testing.TB, c *hosttest.Client, what string, match func(hosttest.Message) bool) hosttest.Message {
	tb.Helper()
	for {
		m := c.Next()
		if match(m) {
			return m
		}
		if m.IsResponse() || m.IsRequest() {
			tb.Fatalf("waiting for %s: got %s", what, m.Raw)
		}
	}
}
