package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// session is an MCP session over ServeStdio pipes with hosttest's client
// (which checks that no text it receives names Go internals). It also keeps
// the notifications/tasks/status it receives, so a test waits for a task's
// status on its notification instead of polling tasks/get. It declares the
// elicitation capability and declines what it is asked.
type session struct {
	*hosttest.Client
	t      *testing.T
	status map[string]string // last status notified per task ID
	msg    map[string]string // last status message notified per task ID
}

// openSession starts a session on s; it ends at the test's cleanup.
func openSession(t *testing.T, s *host.Server) *session {
	t.Helper()
	c := hosttest.Stdio(t, func(in io.Reader, out io.Writer) error {
		return s.ServeStdio(context.Background(), in, out)
	})
	c.Initialize(map[string]any{"elicitation": map[string]any{}})
	return &session{Client: c, t: t, status: map[string]string{}, msg: map[string]string{}}
}

// note keeps a task status notification; other messages are ignored.
func (c *session) note(m hosttest.Message) {
	if m.Method != "notifications/tasks/status" {
		return
	}
	var task hosttest.Task
	if err := json.Unmarshal(m.Params, &task); err != nil {
		c.t.Errorf("notifications/tasks/status %s: %v", m.Params, err)
		return
	}
	c.status[task.TaskID] = task.Status
	c.msg[task.TaskID] = task.StatusMessage
}

// call sends a request and decodes its result into result, keeping the
// notifications that arrive before it; a JSON-RPC error fails the test.
func (c *session) call(method string, params, result any) {
	c.t.Helper()
	m := c.Await(c.Request(method, params), c.note)
	if err := m.Decode(result); err != nil {
		c.t.Fatalf("%s %v: %v", method, params, err)
	}
}

// tool makes a plain tools/call and returns its text and isError.
func (c *session) tool(name string, args map[string]any) (string, bool) {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	var r hosttest.ToolResult
	c.call("tools/call", map[string]any{"name": name, "arguments": args}, &r)
	return r.Text(), r.IsError
}

// task starts a task-augmented call and returns its ID.
func (c *session) task(name string) string {
	c.t.Helper()
	var r hosttest.ToolResult
	c.call("tools/call", map[string]any{"name": name, "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}}, &r)
	if r.Task == nil || r.Task.TaskID == "" {
		c.t.Fatalf("tools/call %s as a task: got %+v, want a CreateTaskResult", name, r)
	}
	return r.Task.TaskID
}

// result blocks in tasks/result until the task ends.
func (c *session) result(id string) hosttest.ToolResult {
	c.t.Helper()
	var r hosttest.ToolResult
	c.call("tasks/result", map[string]any{"taskId": id}, &r)
	return r
}

// get returns the status tasks/get reports.
func (c *session) get(id string) string {
	c.t.Helper()
	var task hosttest.Task
	c.call("tasks/get", map[string]any{"taskId": id}, &task)
	return task.Status
}

// cancel cancels a task and returns the status tasks/cancel reports.
func (c *session) cancel(id string) string {
	c.t.Helper()
	var task hosttest.Task
	c.call("tasks/cancel", map[string]any{"taskId": id}, &task)
	return task.Status
}

// awaitStatuses reads notifications until done holds for the statuses
// notified so far. It never times out: go test's -timeout ends a test that
// waits forever, with every goroutine's stack.
func (c *session) awaitStatuses(done func(status map[string]string) bool) {
	c.t.Helper()
	for !done(c.status) {
		c.note(c.Next())
	}
}

// awaitStatus waits until task id is notified in one of the statuses want.
func (c *session) awaitStatus(id string, want ...string) {
	c.t.Helper()
	c.awaitStatuses(func(st map[string]string) bool { return slices.Contains(want, st[id]) })
}

// toolCaller is a session of either transport.
type toolCaller interface {
	tool(name string, args map[string]any) (text string, isError bool)
}

// expectEcho asserts that the normal tool answers on c.
func expectEcho(t *testing.T, c toolCaller, who string) {
	t.Helper()
	if got, isErr := c.tool("echo", nil); got != "ok" || isErr {
		t.Errorf("%s: echo answered %q (isError %v), want ok", who, got, isErr)
	}
}

// TestMCPHostileCalls drives hostile tools through the real server: a
// runaway, a stack overflow and an out-of-memory guest as plain calls (tool
// errors naming the cause), a runaway task (failed, with the reason), a
// task blocked in elicit (input_required) then cancelled, a tool trying to
// keep state, and a plain call left waiting for the user when its session
// ends; another session keeps being served throughout and after the first
// one ends.
func TestMCPHostileCalls(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		modules := []string{"normal", "spin", "elicitwait", "state", "recurse", "membomb"}
		for _, m := range modules {
			wasm(t, m)
		}
		watchBaseline(t)
		s := serve(t, e.interpreter, &host.Policy{Modules: map[string]host.ModulePolicy{"spin": {Tools: map[string]host.ToolPolicy{"spin": {Timeout: runaway}}}}}, modules...)
		a, other := openSession(t, s), openSession(t, s)

		// A runaway plain call is a tool error naming the cause.
		if got, isErr := a.tool("spin", nil); !isErr || !strings.Contains(got, `tool "spin" ran out of time: exceeded 200ms`) {
			t.Errorf("plain spin: got %q (isError %v), want a tool error saying it exceeded 200ms", got, isErr)
		}
		expectEcho(t, other, "other session after a runaway")
		for _, tc := range []struct{ tool, prefix, want string }{
			{"recurse", `tool "recurse" ran out of memory: `, "its call stack"},
			{"growtrap", `tool "growtrap" ran out of memory: `, "the module needs more than its memory limit of 64 MiB"},
		} {
			if got, isErr := a.tool(tc.tool, nil); !isErr || !strings.HasPrefix(got, tc.prefix) || !strings.Contains(got, tc.want) {
				t.Errorf("plain %s: got %q (isError %v), want a tool error starting %q and saying %q", tc.tool, got, isErr, tc.prefix, tc.want)
			}
		}

		// As a task: failed, and tasks/result gives the reason.
		id := a.task("spin")
		if r := a.result(id); !r.IsError || !strings.Contains(r.Text(), "exceeded 200ms") {
			t.Errorf("spin task result: got %+v, want isError with the timeout", r)
		}
		if got := a.get(id); got != "failed" {
			t.Errorf("spin task: status %q, want failed", got)
		}

		// Blocked in elicit (input_required) until cancelled.
		id = a.task("ask")
		a.awaitStatus(id, "input_required")
		expectEcho(t, other, "other session while a task waits for input")
		if got := a.cancel(id); got != "cancelled" {
			t.Errorf("tasks/cancel: status %q, want cancelled", got)
		}
		if got := a.get(id); got != "cancelled" {
			t.Errorf("after cancel: status %q, want cancelled", got)
		}

		// No state survives between calls, plain or task.
		for range 3 {
			if got, _ := a.tool("count", nil); got != "1 1" {
				t.Errorf("count: got %q, want \"1 1\"", got)
			}
		}
		if got := a.result(a.task("count")).Text(); got != "1 1" {
			t.Errorf("count as a task: got %q, want \"1 1\"", got)
		}

		// A plain call blocked in elicit, never answered, ends with its
		// session: closing the session's input must not wait for it.
		a.Request("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
		for m := a.Next(); m.Method != "elicitation/create"; m = a.Next() {
			a.note(m)
		}
		a.Close()
		expectEcho(t, other, "other session after the hostile one ended")
	})
}

// TestMCPConcurrencyBounded runs more blocked calls of one tool than its
// policy allows: MaxConcurrency run, and the other tasks — accepted, so
// never failed for being busy — wait in the queue, saying so in their
// status; a plain call beyond the tool's queue bound is refused at once as
// busy. The server-wide MaxInstances bound leaves room for another module,
// and cancelling frees everything.
func TestMCPConcurrencyBounded(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		const n, running, queued = 6, 2, 1
		wasm(t, "normal")
		wasm(t, "elicitwait")
		watchBaseline(t)
		pol := &host.Policy{
			Modules: map[string]host.ModulePolicy{"elicitwait": {
				MaxInstances: running, // the default would be a quarter of the server's slots, at least 1: 1
				Tools:        map[string]host.ToolPolicy{"ask": {MaxConcurrency: running, MaxQueue: queued}},
			}},
			MaxInstances: running + 1,
		}
		c := openSession(t, serve(t, e.interpreter, pol, "normal", "elicitwait"))

		ids := make([]string, n)
		for i := range ids {
			ids[i] = c.task("ask")
		}
		// Running calls block in elicit (input_required); the others are
		// queued, and their status says so.
		c.awaitStatuses(func(st map[string]string) bool {
			run, wait := 0, 0
			for _, id := range ids {
				switch {
				case st[id] == "input_required":
					run++
				case strings.HasPrefix(c.msg[id], "queued: "):
					wait++
				}
			}
			return run == running && wait == n-running
		})
		for _, id := range ids {
			if st := c.get(id); st != "input_required" && st != "working" {
				t.Errorf("task %s: status %q, want input_required or working (queued)", id, st)
			}
		}
		// The queued tasks leave the plain queue (bound 1) to plain calls:
		// one waits there, and the next is refused as busy at once.
		// Of two sent together, the first answered is the refused one
		// (the other waits for a slot).
		p1 := c.Request("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
		p2 := c.Request("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
		for {
			m := c.Next()
			if !m.IsResponse() || (fmt.Sprint(m.ID) != fmt.Sprint(p1) && fmt.Sprint(m.ID) != fmt.Sprint(p2)) {
				c.note(m)
				continue
			}
			var r hosttest.ToolResult
			if err := m.Decode(&r); err != nil || !r.IsError || !strings.Contains(r.Text(), `tool "ask" is busy`) {
				t.Errorf("a plain call beyond the queue bound: %s (%v), want the busy reason", m.Raw, err)
			}
			break
		}
		// The server-wide bound: 2 instances of ask are alive; with
		// MaxInstances 3 one more call of another module still runs.
		expectEcho(t, c, "a call of another tool within MaxInstances")

		// Cancelling frees the slots: the queued calls may start, and are
		// cancelled in their turn.
		for _, id := range ids {
			if got := c.cancel(id); got != "cancelled" {
				t.Errorf("tasks/cancel %s: status %q, want cancelled", id, got)
			}
		}
		for _, id := range ids {
			if st := c.get(id); st != "cancelled" {
				t.Errorf("task %s after the cancels: status %q, want cancelled", id, st)
			}
		}
		expectEcho(t, c, "after the cancels")
	})
}

// httpSession is an MCP session over Streamable HTTP with hosttest's
// client.
type httpSession struct {
	*hosttest.HTTPClient
	t *testing.T
}

func (c httpSession) tool(name string, args map[string]any) (string, bool) {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	var r hosttest.ToolResult
	if err := c.Call("tools/call", map[string]any{"name": name, "arguments": args}).Decode(&r); err != nil {
		c.t.Fatalf("tools/call %s: %v", name, err)
	}
	return r.Text(), r.IsError
}

// TestMCPManySessions opens sessions concurrently, over stdio and over
// Streamable HTTP, each with a runaway call, to show per-session resources
// are released.
func TestMCPManySessions(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		wasm(t, "normal")
		wasm(t, "spin")
		watchBaseline(t)
		pol := &host.Policy{Modules: map[string]host.ModulePolicy{"spin": {Tools: map[string]host.ToolPolicy{"spin": {Timeout: runaway}}}}}
		s := serve(t, e.interpreter, pol, "normal", "spin")
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		t.Run("sessions", func(t *testing.T) {
			for i := range 8 {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					t.Parallel()
					var c toolCaller
					if i%2 == 0 {
						c = openSession(t, s)
					} else {
						hc := hosttest.NewHTTPClient(t, hs.URL+host.HTTPPath)
						hc.Initialize(nil)
						t.Cleanup(hc.Close)
						c = httpSession{hc, t}
					}
					if got, isErr := c.tool("spin", nil); !isErr || !strings.Contains(got, "ran out of time: exceeded 200ms") {
						t.Errorf("spin: got %q (isError %v), want a tool error saying it ran out of time", got, isErr)
					}
					expectEcho(t, c, "after a runaway")
				})
			}
		})
	})
}

// TestMCPToolErrors: each hostile guest's failure reaches the client as a
// tool error that says what happened, in the client's terms (hosttest's
// client checks that no text names a Go package, type or field), and the
// session goes on.
func TestMCPToolErrors(t *testing.T) {
	modules := []string{"normal", "badout", "stdout", "stderr", "partial", "wild", "explode"}
	cases := []struct {
		tool, prefix, want string
	}{
		{"notjson", "returned an invalid result: ", "not valid JSON"},
		{"shape", "returned an invalid result: ", `"content" is a string, want an array`},
		{"nocontent", "returned an invalid result: ", `missing "content" array`},
		{"two", "returned an invalid result: ", "trailing data after the JSON value"},
		{"empty", "returned an invalid result: ", "the module wrote nothing to stdout"},
		{"kind", "returned an invalid result: ", `unknown type "exec"`},
		{"structured", "returned an invalid result: ", "structuredContent is not a JSON object"},
		{"flood", "returned a result that is too large: ", "output exceeds 65536 bytes"},
		{"huge", "returned a result that is too large: ", "output exceeds 65536 bytes"},
		{"spewtrap", "failed: ", "unreachable"},
		{"partial", "failed: ", "about to trap"},
		{"log", "failed: ", "wasmtask_v1.log: buffer [4294967040, 4294971136) is outside"},
		{"elicit", "failed: ", "wasmtask_v1.elicit: buffer [4294967295, 4294967297) is outside"},
		{"fdwrite", "failed: ", "exit code 21"},
		{"explode", "ran out of time: ", "exceeded 200ms"},
	}
	onEngines(t, func(t *testing.T, e engine) {
		for _, m := range modules {
			wasm(t, m)
		}
		watchBaseline(t)
		c := openSession(t, serve(t, e.interpreter, toolPolicy("explode", "explode", host.ToolPolicy{Timeout: runaway}), modules...))
		for _, tc := range cases {
			t.Run(tc.tool, func(t *testing.T) {
				got, isErr := c.tool(tc.tool, nil)
				if want := fmt.Sprintf("tool %q %s", tc.tool, tc.prefix); !isErr || !strings.HasPrefix(got, want) || !strings.Contains(got, tc.want) {
					t.Errorf("got %q (isError %v), want a tool error starting %q and saying %q", got, isErr, want, tc.want)
				}
			})
		}
		expectEcho(t, c, "after the hostile calls")
	})
}
