package examples_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// These tests build each example from its sources, serve it with the real
// host (host.New with the build directory as ToolsDir) and call its tools
// over MCP on an in-memory stdio session, as a client would.

// waitLong bounds every wait: loading a Go-built module compiles ~4 MB of
// Wasm, which takes seconds on a busy machine under -race.
const waitLong = 2 * time.Minute

// mcpClient is a minimal MCP client over newline-delimited JSON-RPC. One
// goroutine, started by serveExample and stopped by its cleanup, reads the
// server's messages: responses go to the waiting request, notifications are
// kept, elicitation/create requests are answered by onElicit (each in its
// own goroutine, tracked by wg).
type mcpClient struct {
	t   *testing.T
	srv *host.Server

	writeMu sync.Mutex
	in      *io.PipeWriter

	mu       sync.Mutex
	nextID   int
	pending  map[string]chan map[string]any
	notes    []map[string]any
	noted    chan struct{} // signalled (without blocking) on every notification
	onElicit func(params map[string]any) any

	wg         sync.WaitGroup
	readerDone chan struct{}
}

// serveExample builds ex, serves it and returns an initialized client that
// declares the elicitation capability.
func serveExample(t *testing.T, ex example) *mcpClient {
	t.Helper()
	return serveModule(t, buildDir(t, ex), ex.module)
}

// serveModule serves dir, which holds the module file alone, and returns an
// initialized client that declares the elicitation capability.
func serveModule(t *testing.T, dir, module string) *mcpClient {
	t.Helper()
	// The host skips files modified within its debounce (they may still be
	// being written) and loads them later; date the module back so that it
	// is served from the start.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, module), old, old); err != nil {
		t.Fatal(err)
	}
	srv, err := host.New(context.Background(), host.Config{ToolsDir: dir, CacheDir: compileCache})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	if ps := srv.Problems(); len(ps) > 0 {
		srv.Close()
		t.Fatalf("the host refused %s: %v", module, ps)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &mcpClient{
		t: t, srv: srv, in: inW,
		pending:    map[string]chan map[string]any{},
		noted:      make(chan struct{}, 1),
		readerDone: make(chan struct{}),
	}
	served := make(chan error, 1)
	go func() {
		served <- srv.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	go c.read(outR)
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-served:
		case <-time.After(waitLong):
			t.Error("ServeStdio did not return after stdin closed")
		}
		<-c.readerDone
		c.wg.Wait()
		if err := srv.Close(); err != nil {
			t.Errorf("Server.Close: %v", err)
		}
	})
	r := c.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{"elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": "examples-test", "version": "1"},
	})
	if r["error"] != nil {
		t.Fatalf("initialize: %v", r["error"])
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c
}

func (c *mcpClient) read(out io.Reader) {
	defer close(c.readerDone)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		method, isMsg := m["method"].(string)
		id, hasID := m["id"]
		switch {
		case isMsg && hasID: // a request from the server
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.answer(method, id, m["params"])
			}()
		case isMsg:
			c.mu.Lock()
			c.notes = append(c.notes, m)
			c.mu.Unlock()
			select {
			case c.noted <- struct{}{}:
			default:
			}
		case hasID:
			key := fmt.Sprint(id)
			c.mu.Lock()
			ch := c.pending[key]
			delete(c.pending, key)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
}

// answer replies to a request of the server.
func (c *mcpClient) answer(method string, id any, params any) {
	p, _ := params.(map[string]any)
	c.mu.Lock()
	onElicit := c.onElicit
	c.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if method == "elicitation/create" && onElicit != nil {
		msg["result"] = onElicit(p)
	} else {
		msg["error"] = map[string]any{"code": -32601, "message": "not supported by the test client"}
	}
	c.send(msg)
}

func (c *mcpClient) send(msg map[string]any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.in.Write(append(b, '\n'))
	return err
}

// request sends a request and waits for its response; safe to use from any
// goroutine.
func (c *mcpClient) request(method string, params any) (map[string]any, error) {
	ch := make(chan map[string]any, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[fmt.Sprint(id)] = ch
	c.mu.Unlock()
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-time.After(waitLong):
		return nil, fmt.Errorf("no response to %s within %v", method, waitLong)
	}
}

// call is request for the test goroutine: it fails the test on no answer.
func (c *mcpClient) call(method string, params any) map[string]any {
	c.t.Helper()
	m, err := c.request(method, params)
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// toolResult calls a tool without a task and returns its CallToolResult.
func (c *mcpClient) toolResult(name string, args any, meta map[string]any) map[string]any {
	c.t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	m := c.call("tools/call", params)
	if m["error"] != nil {
		c.t.Fatalf("tools/call %s: JSON-RPC error %v", name, m["error"])
	}
	r, _ := m["result"].(map[string]any)
	return r
}

// startTask calls a tool as a task and returns the task ID.
func (c *mcpClient) startTask(name string, args any, meta map[string]any) string {
	c.t.Helper()
	params := map[string]any{"name": name, "arguments": args, "task": map[string]any{"ttl": 60000}}
	if meta != nil {
		params["_meta"] = meta
	}
	m := c.call("tools/call", params)
	task, _ := resultOf(m)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" || task["status"] != "working" {
		c.t.Fatalf("tools/call %s as a task: got %v, want a working task", name, m)
	}
	return id
}

// progress returns the progress notifications received so far for token.
func (c *mcpClient) progress(token string) []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, n := range c.notes {
		p, _ := n["params"].(map[string]any)
		if n["method"] == "notifications/progress" && p["progressToken"] == token {
			out = append(out, p)
		}
	}
	return out
}

// waitProgress waits for a first progress notification for token.
func (c *mcpClient) waitProgress(token string) {
	c.t.Helper()
	deadline := time.After(waitLong)
	for len(c.progress(token)) == 0 {
		select {
		case <-c.noted:
		case <-deadline:
			c.t.Fatalf("no progress notification for %q", token)
		}
	}
}

func resultOf(m map[string]any) map[string]any {
	r, _ := m["result"].(map[string]any)
	return r
}

func errorCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return int(code)
}

// text returns the text of the first content block of a CallToolResult.
func text(r map[string]any) string {
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

func structured(t *testing.T, r map[string]any) string {
	t.Helper()
	b, err := json.Marshal(r["structuredContent"])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolSupport returns the tools of tools/list by name with their task support.
func (c *mcpClient) toolSupport() map[string]string {
	c.t.Helper()
	tools, _ := resultOf(c.call("tools/list", map[string]any{}))["tools"].([]any)
	out := map[string]string{}
	for _, x := range tools {
		tool, _ := x.(map[string]any)
		exec, _ := tool["execution"].(map[string]any)
		support, _ := exec["taskSupport"].(string)
		out[fmt.Sprint(tool["name"])] = support
	}
	return out
}

func exampleFor(t *testing.T, lang string) example {
	for _, ex := range examples {
		if ex.lang == lang {
			return ex
		}
	}
	t.Fatalf("no example %q", lang)
	return example{}
}

func TestWATAddThroughHost(t *testing.T) {
	c := serveExample(t, exampleFor(t, "wat"))
	if got := c.toolSupport(); fmt.Sprint(got) != "map[add:forbidden]" {
		t.Errorf("tools/list: got %v, want add (forbidden)", got)
	}
	tests := []struct {
		args      map[string]any
		wantText  string
		wantError bool
	}{
		{map[string]any{"a": 2, "b": 40}, "42", false},
		{map[string]any{"b": -7, "a": 1000000000000}, "999999999993", false},
		{map[string]any{"a": -5, "b": -6}, "-11", false},
	}
	for _, tt := range tests {
		r := c.toolResult("add", tt.args, nil)
		if text(r) != tt.wantText || r["isError"] == true {
			t.Errorf("add(%v): got %v, want %s", tt.args, r, tt.wantText)
		}
		if got, want := structured(t, r), `{"sum":`+tt.wantText+`}`; got != want {
			t.Errorf("add(%v): structuredContent %s, want %s", tt.args, got, want)
		}
	}
	// Arguments outside the schema never reach a successful answer.
	m := c.call("tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1.5, "b": 1}})
	if m["error"] == nil && resultOf(m)["isError"] != true {
		t.Errorf("add(1.5, 1): got %v, want an error", m)
	}
}

func TestCSHA256ThroughHost(t *testing.T) {
	c := serveExample(t, exampleFor(t, "c"))
	if got := c.toolSupport(); fmt.Sprint(got) != "map[sha256:forbidden]" {
		t.Errorf("tools/list: got %v, want sha256 (forbidden)", got)
	}
	// Escapes, non-ASCII, HTML-escaped characters and a text of several
	// hundred KiB all hash like crypto/sha256 does.
	for i, in := range []string{"abc", "", "h\u00e9\U0001F600\n\"<&>\t\\", strings.Repeat("wasmtask ", 100000)} {
		token := fmt.Sprintf("sha-%d", i)
		r := c.toolResult("sha256", map[string]any{"text": in}, map[string]any{"progressToken": token})
		sum := sha256.Sum256([]byte(in))
		want := hex.EncodeToString(sum[:])
		if text(r) != want || r["isError"] == true {
			t.Errorf("sha256(%.20q): got %v, want %s", in, r, want)
		}
		if got, wantS := structured(t, r), fmt.Sprintf(`{"bytes":%d,"sha256":"%s"}`, len(in), want); got != wantS {
			t.Errorf("sha256(%.20q): structuredContent %s, want %s", in, got, wantS)
		}
		c.waitProgress(token)
	}
	// A missing argument is refused, by the host's schema check or the tool.
	m := c.call("tools/call", map[string]any{"name": "sha256", "arguments": map[string]any{}})
	if m["error"] == nil && resultOf(m)["isError"] != true {
		t.Errorf("sha256 without text: got %v, want an error", m)
	}
}

func TestGoDemoThroughHost(t *testing.T) {
	c := serveExample(t, exampleFor(t, "go"))
	want := "map[long_job:required slow_count:optional word_count:forbidden]"
	if got := c.toolSupport(); fmt.Sprint(got) != want {
		t.Fatalf("tools/list: got %v, want %s", got, want)
	}

	t.Run("word_count", func(t *testing.T) {
		r := c.toolResult("word_count", map[string]any{"text": "one two\nthree"}, nil)
		if got, want := structured(t, r), `{"chars":13,"lines":2,"words":3}`; got != want || r["isError"] == true {
			t.Errorf("got %s (%v), want %s", got, r, want)
		}
		m := c.call("tools/call", map[string]any{"name": "word_count", "arguments": map[string]any{"text": "x"}, "task": map[string]any{}})
		if errorCode(m) != -32601 {
			t.Errorf("word_count as a task: got %v, want error -32601 (taskSupport forbidden)", m)
		}
	})

	t.Run("slow_count plain with progress", func(t *testing.T) {
		r := c.toolResult("slow_count", map[string]any{"steps": 5, "delay_ms": 10}, map[string]any{"progressToken": "slow-plain"})
		if got := structured(t, r); got != `{"count":5}` {
			t.Errorf("got %s (%v), want {\"count\":5}", got, r)
		}
		ps := c.progress("slow-plain")
		if len(ps) == 0 {
			t.Fatal("no progress notification")
		}
		last := ps[len(ps)-1]
		if last["progress"] != 5.0 || last["total"] != 5.0 {
			t.Errorf("last progress: got %v, want 5 of 5", last)
		}
	})

	t.Run("slow_count task cancelled", func(t *testing.T) {
		id := c.startTask("slow_count", map[string]any{"steps": 10000, "delay_ms": 100}, map[string]any{"progressToken": "slow-task"})
		c.waitProgress("slow-task") // the guest is running
		start := time.Now()
		m := c.call("tasks/cancel", map[string]any{"taskId": id})
		if resultOf(m)["status"] != "cancelled" {
			t.Fatalf("tasks/cancel: got %v, want status cancelled", m)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("tasks/cancel took %v", d)
		}
		if got := resultOf(c.call("tasks/get", map[string]any{"taskId": id}))["status"]; got != "cancelled" {
			t.Errorf("tasks/get after cancel: status %v, want cancelled", got)
		}
	})

	t.Run("long_job plain call refused", func(t *testing.T) {
		m := c.call("tools/call", map[string]any{"name": "long_job", "arguments": map[string]any{"steps": 2}})
		if errorCode(m) != -32601 {
			t.Errorf("got %v, want error -32601 (taskSupport required)", m)
		}
	})

	for _, tt := range []struct {
		name      string
		reply     map[string]any
		want      string
		wantText  string
		wantSteps float64
	}{
		{"long_job confirmed", map[string]any{"action": "accept", "content": map[string]any{"confirm": true}},
			`{"confirmed":true,"done":4,"steps":4}`, "finished all 4 steps", 4},
		{"long_job declined", map[string]any{"action": "decline"},
			`{"confirmed":false,"done":2,"steps":4}`, "declined: stopped after 2 of 4 steps", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu           sync.Mutex
				elicitations []map[string]any
				statuses     []any
				taskID       string
				ready        = make(chan struct{})
				readyOnce    sync.Once
			)
			// Release a pending answer even when the test fails early, so
			// that the answering goroutine ends.
			release := func() { readyOnce.Do(func() { close(ready) }) }
			defer release()
			c.mu.Lock()
			c.onElicit = func(p map[string]any) any {
				<-ready // taskID is set
				mu.Lock()
				id := taskID
				mu.Unlock()
				// While the question is open, the task waits for input.
				g, err := c.request("tasks/get", map[string]any{"taskId": id})
				mu.Lock()
				elicitations = append(elicitations, p)
				if err == nil {
					statuses = append(statuses, resultOf(g)["status"])
				}
				mu.Unlock()
				return tt.reply
			}
			c.mu.Unlock()
			token := "long-" + strings.ReplaceAll(tt.name, " ", "-")
			id := c.startTask("long_job", map[string]any{"steps": 4, "delay_ms": 10}, map[string]any{"progressToken": token})
			mu.Lock()
			taskID = id
			mu.Unlock()
			release()

			m := c.call("tasks/result", map[string]any{"taskId": id})
			r := resultOf(m)
			if got := structured(t, r); got != tt.want || text(r) != tt.wantText || r["isError"] == true {
				t.Errorf("tasks/result: got %s %q (%v), want %s %q", got, text(r), m, tt.want, tt.wantText)
			}
			meta, _ := r["_meta"].(map[string]any)
			related, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
			if related["taskId"] != id {
				t.Errorf("tasks/result _meta: got %v, want related-task %s", r["_meta"], id)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(elicitations) != 1 {
				t.Fatalf("got %d elicitations, want 1", len(elicitations))
			}
			if msg, _ := elicitations[0]["message"].(string); !strings.Contains(msg, "Halfway there: 2 of 4 steps done") {
				t.Errorf("elicitation message %q, want the halfway question", msg)
			}
			if fmt.Sprint(statuses) != "[input_required]" {
				t.Errorf("task status while the question was open: got %v, want [input_required]", statuses)
			}
			if got := resultOf(c.call("tasks/get", map[string]any{"taskId": id}))["status"]; got != "completed" {
				t.Errorf("final status %v, want completed", got)
			}
			ps := c.progress(token)
			if len(ps) == 0 || ps[len(ps)-1]["progress"] != tt.wantSteps {
				t.Errorf("progress: got %v, want the last at %v", ps, tt.wantSteps)
			}
		})
	}
}
