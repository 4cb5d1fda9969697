package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// serveStdio is a hosttest.Stdio server loop for s that treats the end of
// the server as a normal end of the session.
func serveStdio(s *host.Server) func(io.Reader, io.Writer) error {
	return func(in io.Reader, out io.Writer) error {
		err := s.ServeStdio(context.Background(), in, out)
		if errors.Is(err, host.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// Shutdown stops accepting (listeners and new tool calls), lets the task in
// flight finish — answering its blocked tasks/result with the result, not
// an end of stream — and then closes.
func TestShutdownDrains(t *testing.T) {
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir()})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()

	c := hosttest.Stdio(t, serveStdio(s))
	c.Initialize(map[string]any{"elicitation": map[string]any{}})
	task := c.StartTask("long_job", map[string]any{"steps": 2, "delay_ms": 1}, 0)
	resultID := c.Request("tasks/result", map[string]any{"taskId": task.TaskID})
	var ask hosttest.Message
	for ask = c.Next(); ask.Method != "elicitation/create"; ask = c.Next() {
	} // the task now waits for its user

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if err := <-served; !errors.Is(err, host.ErrServerClosed) {
		t.Errorf("Serve during Shutdown = %v, want ErrServerClosed", err)
	}
	// Draining: new tool calls are refused in plain words.
	r := c.Await(c.Request("tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}), func(m hosttest.Message) { t.Logf("skipped %s", m.Raw) })
	if r.Error == nil || !strings.Contains(r.Error.Message, "shutting down") {
		t.Errorf("tools/call while draining = %s, want an error saying the server is shutting down", r.Raw)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a task was running", err)
	default:
	}
	// The user answers; the task finishes and its waiter gets the result.
	c.Send(map[string]any{"jsonrpc": "2.0", "id": ask.ID, "result": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}})
	res := c.Await(resultID, nil)
	var tr hosttest.ToolResult
	if err := res.Decode(&tr); err != nil || tr.IsError || !json.Valid(tr.StructuredContent) {
		t.Errorf("tasks/result during the drain = %s (%v), want the task's result", res.Raw, err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v, want nil (everything finished)", err)
	}
	<-c.Done() // the session ended with the server
}

// gatedEvents answers a call's elicitation once the test opens answer,
// after telling it the call asked.
type gatedEvents struct {
	asked, answer chan struct{}
}

func (gatedEvents) Progress(float64, float64, string) {}
func (gatedEvents) Status(string)                     {}
func (gatedEvents) Log(int32, string)                 {}
func (g gatedEvents) Elicit(ctx context.Context, _ abi.ElicitRequest) (abi.ElicitReply, error) {
	close(g.asked)
	select {
	case <-g.answer:
		return abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"confirm":true}`)}, nil
	case <-ctx.Done():
		return abi.ElicitReply{}, ctx.Err()
	}
}

// Shutdown waits for the library's own calls as for MCP's: a Server.Call in
// flight finishes with its result, and only then does Shutdown close.
func TestShutdownWaitsForDirectCalls(t *testing.T) {
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir()})
	ctx := context.Background()
	ev := gatedEvents{asked: make(chan struct{}), answer: make(chan struct{})}
	type answer struct {
		res *abi.Result
		err error
	}
	called := make(chan answer, 1)
	go func() {
		res, err := s.Call(ctx, "long_job", json.RawMessage(`{"steps":2,"delay_ms":1}`), ev)
		called <- answer{res, err}
	}()
	<-ev.asked // the call runs, waiting for its user

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	// Once Shutdown has begun, new direct calls are refused.
	for {
		_, err := s.Call(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), nil)
		if errors.Is(err, host.ErrServerClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Call before the shutdown took hold = %v", err)
		}
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a direct call ran", err)
	default:
	}
	close(ev.answer)
	if a := <-called; a.err != nil || a.res == nil || a.res.IsError {
		t.Errorf("the direct call in flight = %+v, %v; want its result", a.res, a.err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v, want nil (everything finished)", err)
	}
}

// Shutdown whose context ends first cancels the work left, tells its
// waiters the server shut down, and still closes everything.
func TestShutdownDeadline(t *testing.T) {
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir()})
	c := hosttest.Stdio(t, serveStdio(s))
	c.Initialize(nil)
	task := c.StartTask("slow_count", map[string]any{"steps": 10000, "delay_ms": 60000}, 0)
	resultID := c.Request("tasks/result", map[string]any{"taskId": task.TaskID})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time to drain
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with an ended context = %v, want context.Canceled", err)
	}
	// The blocked tasks/result got an answer or the session ended; either
	// way the client is not left waiting.
	for {
		m, ok := c.NextOrEnd()
		if !ok {
			return
		}
		if m.IsResponse() && m.ID == resultID {
			if m.Error == nil {
				t.Errorf("tasks/result of a task cancelled by shutdown = %s, want an error", m.Raw)
			}
			return
		}
	}
}

// When stdin ends, the session ends soon after even with a call that would
// run for a very long time and a blocked tasks/result: the server answers
// what it can and returns (without the bound it would wait for the call).
func TestStdioEndOfInput(t *testing.T) {
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir()})
	c := hosttest.Stdio(t, serveStdio(s))
	c.Initialize(nil)
	task := c.StartTask("slow_count", map[string]any{"steps": 10000, "delay_ms": 60000}, 0)
	c.Request("tasks/result", map[string]any{"taskId": task.TaskID})
	c.Request("tools/call", map[string]any{"name": "slow_count", "arguments": map[string]any{"steps": 10000, "delay_ms": 60000}})
	ping := c.Request("ping", nil)
	c.CloseInput()
	answered := false
	for {
		m, ok := c.NextOrEnd()
		if !ok {
			break
		}
		answered = answered || m.ID == ping
	}
	if !answered {
		t.Error("the ping sent before the end of input was not answered")
	}
}

// A closed server answers nothing: every way in says it is closed.
func TestClosedServerAnswersNothing(t *testing.T) {
	s, err := host.New(context.Background(), host.Config{CacheDir: host.CompileCacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(context.Background(), "add", nil, nil); !errors.Is(err, host.ErrServerClosed) {
		t.Errorf("Call after Close = %v, want ErrServerClosed", err)
	}
	if err := s.ServeStdio(context.Background(), strings.NewReader(""), io.Discard); !errors.Is(err, host.ErrServerClosed) {
		t.Errorf("ServeStdio after Close = %v, want ErrServerClosed", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(l); !errors.Is(err, host.ErrServerClosed) {
		t.Errorf("Serve after Close = %v, want ErrServerClosed", err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", host.HTTPPath, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	if rec.Code != 503 {
		t.Errorf("HTTP after Close: status %d, want 503", rec.Code)
	}
}
