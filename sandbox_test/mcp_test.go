package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// session is a minimal MCP client over ServeStdio pipes: newline-delimited
// JSON-RPC, responses routed to their callers by id. Server requests
// (elicitation/create) are left unanswered, like a user who never replies.
// Its reader goroutine ends when the server closes its output; close waits
// for it.
type session struct {
	t         *testing.T
	in        *io.PipeWriter
	mu        sync.Mutex
	next      int
	pending   map[int]chan map[string]any
	readDone  chan struct{}
	serveDone chan error
}

func startSession(t *testing.T, s *host.Server) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &session{t: t, in: inW, pending: map[int]chan map[string]any{}, readDone: make(chan struct{}), serveDone: make(chan error, 1)}
	go func() {
		err := s.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		inR.Close()
		c.serveDone <- err
	}()
	go func() {
		defer close(c.readDone)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var msg map[string]any
			if json.Unmarshal(sc.Bytes(), &msg) != nil {
				continue
			}
			id, ok := msg["id"].(float64)
			if _, isReq := msg["method"]; !ok || isReq {
				continue // a notification or a server request
			}
			c.mu.Lock()
			ch := c.pending[int(id)]
			delete(c.pending, int(id))
			c.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		}
		io.Copy(io.Discard, outR)
	}()
	c.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{"elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": "sandbox", "version": "1"},
	})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized", "params": map[string]any{}})
	return c
}

func (c *session) send(v any) {
	b, _ := json.Marshal(v)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to the server: %v", err)
	}
}

// call sends a request and returns its response (result or error member).
func (c *session) call(method string, params any) map[string]any {
	c.t.Helper()
	ch := make(chan map[string]any, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	select {
	case msg := <-ch:
		return msg
	case <-time.After(20 * time.Second):
		c.t.Fatalf("%s: no response in 20s", method)
		return nil
	}
}

func (c *session) result(method string, params any) map[string]any {
	c.t.Helper()
	msg := c.call(method, params)
	r, ok := msg["result"].(map[string]any)
	if !ok {
		c.t.Fatalf("%s %v: got %v, want a result", method, params, msg)
	}
	return r
}

// toolText makes a plain tools/call and returns its first text and isError.
func (c *session) tool(name string, args map[string]any) (string, bool) {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	r := c.result("tools/call", map[string]any{"name": name, "arguments": args})
	isErr, _ := r["isError"].(bool)
	return firstText(r), isErr
}

func (c *session) toolText(name string, args map[string]any) string {
	c.t.Helper()
	s, _ := c.tool(name, args)
	return s
}

func firstText(r map[string]any) string {
	content, _ := r["content"].([]any)
	for _, b := range content {
		if m, ok := b.(map[string]any); ok && m["type"] == "text" {
			s, _ := m["text"].(string)
			return s
		}
	}
	return ""
}

// task starts a task-augmented call and returns its id.
func (c *session) task(name string) string {
	c.t.Helper()
	r := c.result("tools/call", map[string]any{"name": name, "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}})
	task, _ := r["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" {
		c.t.Fatalf("tools/call %s as a task: got %v, want a CreateTaskResult", name, r)
	}
	return id
}

func (c *session) status(id string) string {
	c.t.Helper()
	s, _ := c.result("tasks/get", map[string]any{"taskId": id})["status"].(string)
	return s
}

// waitStatus polls tasks/get until the task has one of the statuses.
func (c *session) waitStatus(id string, want ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := c.status(id)
		for _, w := range want {
			if s == w {
				return s
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s: status %q, want one of %v within 10s", id, s, want)
		}
		time.Sleep(10 * time.Millisecond) // polling is what an MCP client does
	}
}

func (c *session) close() {
	c.in.Close()
	select {
	case <-c.serveDone:
	case <-time.After(10 * time.Second):
		c.t.Errorf("ServeStdio did not return after its input closed")
	}
	<-c.readDone
}

// serveTools starts a Server on a directory holding the named modules.
func serveTools(t *testing.T, pol *host.Policy, interpreter bool, modules ...string) *host.Server {
	t.Helper()
	dir := t.TempDir()
	for _, m := range modules {
		writeSettled(t, filepath.Join(dir, m+".wasm"), wasmFile(t, m))
	}
	s, err := host.New(context.Background(), host.Config{ToolsDir: dir, Policy: pol, Interpreter: interpreter})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	if p := s.Problems(); len(p) > 0 {
		s.Close()
		t.Fatalf("modules not served: %v", p)
	}
	return s
}

// writeSettled writes a module file dated a minute ago: the server takes a
// file modified within its reload debounce as still being written.
func writeSettled(t *testing.T, path string, b []byte) {
	t.Helper()
	old := time.Now().Add(-time.Minute)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

func expectEcho(t *testing.T, c *session, who string) {
	t.Helper()
	if got, isErr := c.tool("echo", nil); got != "ok" || isErr {
		t.Errorf("%s: echo answered %q (isError %v), want ok", who, got, isErr)
	}
}

// TestMCPHostileCalls drives hostile tools through the real server: a
// runaway as a plain call and as a task (failed, with the reason), a task
// blocked in elicit then cancelled, a task trying to keep state; another
// session keeps being served throughout and after the first one ends.
func TestMCPHostileCalls(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			b := takeBaseline()
			func() {
				pol := &host.Policy{Tools: map[string]host.ToolPolicy{
					"spin": {Timeout: host.Duration(200 * time.Millisecond)},
					"ask":  {Timeout: host.Duration(30 * time.Second)},
				}}
				s := serveTools(t, pol, e.interpreter, "normal", "spin", "elicitwait", "state", "recurse", "membomb")
				defer s.Close()
				a, other := startSession(t, s), startSession(t, s)
				defer other.close()

				// A runaway plain call is a tool error naming the cause.
				if got, isErr := a.tool("spin", nil); !isErr || !strings.Contains(got, "timeout: exceeded 200ms") {
					t.Errorf("plain spin: got %q (isError %v), want a tool error saying it exceeded 200ms", got, isErr)
				}
				expectEcho(t, other, "other session after a runaway")
				for _, tc := range []struct{ tool, want string }{
					{"recurse", "stack overflow"},
					{"growtrap", "out of memory"},
				} {
					if got, isErr := a.tool(tc.tool, nil); !isErr || !strings.Contains(got, tc.want) {
						t.Errorf("plain %s: got %q (isError %v), want a tool error with %q", tc.tool, got, isErr, tc.want)
					}
				}

				// As a task: failed, and tasks/result gives the reason.
				id := a.task("spin")
				a.waitStatus(id, "failed")
				r := a.result("tasks/result", map[string]any{"taskId": id})
				if isErr, _ := r["isError"].(bool); !isErr || !strings.Contains(firstText(r), "exceeded 200ms") {
					t.Errorf("spin task result: got %v, want isError with the timeout", r)
				}

				// Blocked in elicit (input_required) until cancelled.
				id = a.task("ask")
				a.waitStatus(id, "input_required")
				expectEcho(t, other, "other session while a task waits for input")
				if got, _ := a.result("tasks/cancel", map[string]any{"taskId": id})["status"].(string); got != "cancelled" {
					t.Errorf("tasks/cancel: status %q, want cancelled", got)
				}
				if got := a.status(id); got != "cancelled" {
					t.Errorf("after cancel: status %q, want cancelled", got)
				}

				// No state survives between calls, plain or task.
				for range 3 {
					if got := a.toolText("count", nil); got != "1 1" {
						t.Errorf("count: got %q, want \"1 1\"", got)
					}
				}
				id = a.task("count")
				a.waitStatus(id, "completed")
				if got := firstText(a.result("tasks/result", map[string]any{"taskId": id})); got != "1 1" {
					t.Errorf("count as a task: got %q, want \"1 1\"", got)
				}

				a.close()
				expectEcho(t, other, "other session after the hostile one ended")
			}()
			b.check(t)
		})
	}
}

// TestMCPConcurrencyBounded runs more blocked calls of one tool than its
// policy allows: MaxConcurrency run, MaxQueue wait, the rest are refused at
// once as busy (task failed with the reason); nothing grows without bound.
// The server-wide MaxInstances gate bounds calls across tools the same way.
func TestMCPConcurrencyBounded(t *testing.T) {
	b := takeBaseline()
	func() {
		pol := &host.Policy{
			Tools:        map[string]host.ToolPolicy{"ask": {Timeout: host.Duration(30 * time.Second), MaxConcurrency: 2, MaxQueue: 1}},
			MaxInstances: 3,
		}
		s := serveTools(t, pol, false, "normal", "elicitwait", "spin")
		defer s.Close()
		c := startSession(t, s)
		defer c.close()

		const n = 6
		ids := make([]string, n)
		for i := range ids {
			ids[i] = c.task("ask")
		}
		counts := map[string]int{}
		deadline := time.Now().Add(10 * time.Second)
		for {
			clear(counts)
			for _, id := range ids {
				counts[c.status(id)]++
			}
			if counts["input_required"] == 2 && counts["failed"] == n-3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("statuses %v, want 2 input_required (running), 1 working (queued), %d failed (busy)", counts, n-3)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if counts["working"] != 1 {
			t.Errorf("statuses %v, want exactly 1 queued (working)", counts)
		}
		busy := 0
		for _, id := range ids {
			if c.status(id) == "failed" {
				r := c.result("tasks/result", map[string]any{"taskId": id})
				if strings.Contains(firstText(r), "host: tool busy: 2 calls running and 1 queued") {
					busy++
				}
			}
		}
		if busy != n-3 {
			t.Errorf("%d failed tasks say the tool is busy, want %d", busy, n-3)
		}
		// The server-wide gate: 2 instances of ask are alive; with
		// MaxInstances 3 one more call of another tool still runs.
		expectEcho(t, c, "a call of another tool within MaxInstances")

		for _, id := range ids {
			if st := c.status(id); st == "input_required" || st == "working" {
				c.result("tasks/cancel", map[string]any{"taskId": id})
			}
		}
		// The queued one started when a slot was freed, then was
		// cancelled before or while waiting.
		for _, id := range ids {
			c.waitStatus(id, "failed", "cancelled")
		}
		expectEcho(t, c, "after the cancels")
	}()
	b.check(t)
}

// TestMCPManySessions opens sessions one after another and concurrently,
// each with a runaway call, to show per-session resources are released.
func TestMCPManySessions(t *testing.T) {
	b := takeBaseline()
	func() {
		pol := &host.Policy{Tools: map[string]host.ToolPolicy{"spin": {Timeout: host.Duration(100 * time.Millisecond)}}}
		s := serveTools(t, pol, false, "normal", "spin")
		defer s.Close()
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for i := range 8 {
			wg.Go(func() {
				c := startSession(t, s)
				defer c.close()
				if got, isErr := c.tool("spin", nil); !isErr || !strings.Contains(got, "exceeded") {
					errs <- fmt.Sprintf("session %d: spin got %q (isError %v)", i, got, isErr)
				}
				if got, _ := c.tool("echo", nil); got != "ok" {
					errs <- fmt.Sprintf("session %d: echo got %q", i, got)
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}()
	b.check(t)
}
