package host

// Hot reload, end to end: a real Server watching a real directory, driven
// through MCP sessions over ServeStdio pipes (and Streamable HTTP where the
// transport matters). The modules are testdata/reload/ver.wasm with its
// tool name and answer patched in, so one build gives any number of
// distinct modules. Waiting is always on a condition with a deadline.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
)

// waitDeadline bounds every wait on a condition. Generous: -race on two
// shared cores.
const waitDeadline = 30 * time.Second

// testDebounce is the ReloadDebounce of these tests.
const testDebounce = 20 * time.Millisecond

// --- modules -----------------------------------------------------------

var verWasm = sync.OnceValues(func() ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", "reload", "ver.wasm"))
})

// patch replaces the JSON string placeholder (quotes included) in b with the
// JSON string s, padded with spaces after its closing quote to the same
// length, so the module's layout does not change.
func patch(tb testing.TB, b []byte, placeholder, s string) []byte {
	tb.Helper()
	old := []byte(strconv.Quote(placeholder))
	repl := []byte(strconv.Quote(s))
	if len(repl) > len(old) {
		tb.Fatalf("%q is longer than the %d bytes of its placeholder", s, len(old)-2)
	}
	repl = append(repl, bytes.Repeat([]byte(" "), len(old)-len(repl))...)
	if n := bytes.Count(b, old); n != 1 {
		tb.Fatalf("placeholder %s found %d times, want 1", old, n)
	}
	return bytes.Replace(b, old, repl, 1)
}

// verModule is a module declaring one tool, which answers version.
func verModule(tb testing.TB, tool, version string) []byte {
	tb.Helper()
	b, err := verWasm()
	if err != nil {
		tb.Fatal(err)
	}
	b = patch(tb, b, "TOOL_PLACEHOLDER", tool)
	return patch(tb, b, "VERSION_PLACEHOL", version)
}

// replaceOnce replaces the only occurrence of old in b.
func replaceOnce(tb testing.TB, b []byte, old, new string) []byte {
	tb.Helper()
	if len(old) != len(new) || bytes.Count(b, []byte(old)) != 1 {
		tb.Fatalf("cannot patch %q into %q", old, new)
	}
	return bytes.Replace(bytes.Clone(b), []byte(old), []byte(new), 1)
}

// put writes a module the safe way: a temporary file (which the watcher
// ignores), then a rename into place.
func put(tb testing.TB, dir, file string, b []byte) {
	tb.Helper()
	tmp := filepath.Join(dir, "."+file+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
		tb.Fatal(err)
	}
}

// --- server and log ----------------------------------------------------

// logSink keeps the operator log of a test server, and the durations of
// its reloads.
type logSink struct {
	mu    sync.Mutex
	lines []string
	took  []time.Duration // "took" of each "tools reloaded"
}

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logSink) WithGroup(string) slog.Handler            { return l }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	var took time.Duration
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		if a.Key == "took" && r.Message == "tools reloaded" {
			took = a.Value.Duration()
		}
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	if took > 0 {
		l.took = append(l.took, took)
	}
	l.mu.Unlock()
	return nil
}

// reloadTime returns the summed duration of the reloads logged so far.
func (l *logSink) reloadTime() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum time.Duration
	for _, d := range l.took {
		sum += d
	}
	return sum
}

// grep returns the log lines that contain every one of subs.
func (l *logSink) grep(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

func newReloadServer(tb testing.TB, cfg Config) (*Server, *logSink) {
	tb.Helper()
	sink := &logSink{}
	cfg.Logger = slog.New(sink)
	if cfg.ReloadDebounce == 0 {
		cfg.ReloadDebounce = testDebounce
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, sink
}

func toolNames(s *Server) []string {
	names := []string{}
	for _, t := range s.Tools() {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

func seq(s *Server) uint64 { return s.reg.gen.Load().Seq() }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, s *Server, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s; tools %v, problems %q", what, toolNames(s), s.Problems())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func waitTools(tb testing.TB, s *Server, want ...string) {
	tb.Helper()
	if want == nil {
		want = []string{}
	}
	slices.Sort(want)
	waitFor(tb, s, fmt.Sprintf("tools %v", want), func() bool { return slices.Equal(toolNames(s), want) })
}

// waitListed waits until the server serves exactly the tools want and the
// client's tools/list shows them. (Server.Tools follows the registry, which
// is swapped a moment before the MCP layer re-reads it.)
func waitListed(tb testing.TB, s *Server, c *mcpClient, want ...string) {
	tb.Helper()
	waitTools(tb, s, want...)
	want = slices.Sorted(slices.Values(append([]string{}, want...)))
	waitFor(tb, s, fmt.Sprintf("tools/list to show %v", want), func() bool {
		got, err := c.listTools()
		return err == nil && slices.Equal(got, want)
	})
}

func (c *mcpClient) listTools() ([]string, error) {
	raw, err := c.call("tools/list", map[string]any{})
	if err != nil {
		return nil, err
	}
	var r struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	names := []string{}
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names, nil
}

// compiled returns the compiled module serving tool now.
func compiled(tb testing.TB, s *Server, tool string) *wasmrt.Module {
	tb.Helper()
	l, _, ok := s.reg.gen.Load().Tool(tool)
	if !ok {
		tb.Fatalf("tool %q is not served", tool)
	}
	return l.Compiled
}

func inflight(s *Server, m *wasmrt.Module) int {
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	return len(s.reg.calls[m])
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// --- an MCP client over stdio pipes --------------------------------------

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

type rpcMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// mcpClient is a client session over ServeStdio. Its methods are safe for
// concurrent use and return errors instead of failing the test, so worker
// goroutines can use them. It answers elicitation/create by accepting, and
// counts notifications/tools/list_changed.
type mcpClient struct {
	in          *io.PipeWriter
	wmu         sync.Mutex
	mu          sync.Mutex
	next        int
	pending     map[int]chan rpcMsg
	listChanged atomic.Int64
	elicited    atomic.Int64
	served      chan struct{} // closed when ServeStdio has returned
	readerDone  chan struct{} // reader goroutine ended
}

func newClient(tb testing.TB, s *Server) *mcpClient {
	tb.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &mcpClient{in: inW, pending: map[int]chan rpcMsg{}, served: make(chan struct{}), readerDone: make(chan struct{})}
	go func() {
		s.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		inR.Close()
		close(c.served)
	}()
	go c.read(outR)
	tb.Cleanup(func() { c.close(tb) })
	if _, err := c.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{"elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": "reload-test", "version": "1"},
	}); err != nil {
		tb.Fatalf("initialize: %v", err)
	}
	if err := c.send(rpcMsg{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		tb.Fatal(err)
	}
	return c
}

// close ends the session and waits for ServeStdio and the reader to return.
func (c *mcpClient) close(tb testing.TB) {
	c.in.Close()
	for _, ch := range []<-chan struct{}{c.readerDone, c.served} {
		select {
		case <-ch:
		case <-time.After(waitDeadline):
			tb.Error("the stdio session did not end after its input was closed")
			return
		}
	}
}

func (c *mcpClient) send(m rpcMsg) error {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		rpcMsg
	}{"2.0", m})
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.in.Write(append(b, '\n'))
	return err
}

func (c *mcpClient) read(out io.Reader) {
	defer close(c.readerDone)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m rpcMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue
		}
		switch {
		case m.Method == "elicitation/create" && m.ID != nil:
			c.elicited.Add(1)
			c.send(rpcMsg{ID: m.ID, Result: json.RawMessage(`{"action":"accept","content":{"ok":true}}`)})
		case m.Method != "" && m.ID != nil:
			c.send(rpcMsg{ID: m.ID, Error: &rpcError{Code: -32601, Message: "not supported by the test client"}})
		case m.Method == "notifications/tools/list_changed":
			c.listChanged.Add(1)
		case m.Method == "":
			id, err := strconv.Atoi(string(m.ID))
			if err != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	// The session ended: fail the calls still waiting.
	c.mu.Lock()
	for id, ch := range c.pending {
		delete(c.pending, id)
		ch <- rpcMsg{Error: &rpcError{Code: -1, Message: "session ended"}}
	}
	c.mu.Unlock()
}

// call sends a request and waits for its response.
func (c *mcpClient) call(method string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan rpcMsg, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(rpcMsg{ID: json.RawMessage(strconv.Itoa(id)), Method: method, Params: p}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-time.After(waitDeadline):
		return nil, fmt.Errorf("%s: no response in %v", method, waitDeadline)
	}
}

// toolResult is the part of a CallToolResult the tests read.
type toolResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
	Task    *struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"task"`
	Status string `json:"status"` // tasks/get
}

func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, " ")
}

func (c *mcpClient) request(method string, params any) (toolResult, error) {
	raw, err := c.call(method, params)
	if err != nil {
		return toolResult{}, err
	}
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("%s: %v: %s", method, err, raw)
	}
	return r, nil
}

// callTool makes a plain call and returns the result's text; a tool error
// is an error.
func (c *mcpClient) callTool(tool string, args map[string]any) (string, error) {
	r, err := c.request("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return "", err
	}
	if r.IsError {
		return "", fmt.Errorf("tool error: %s", r.text())
	}
	return r.text(), nil
}

// startTask makes a task-augmented call and returns the task ID.
func (c *mcpClient) startTask(tool string, args map[string]any) (string, error) {
	r, err := c.request("tools/call", map[string]any{"name": tool, "arguments": args, "task": map[string]any{}})
	if err != nil {
		return "", err
	}
	if r.Task == nil || r.Task.TaskID == "" {
		return "", fmt.Errorf("tools/call with a task: no task in the result: %+v", r)
	}
	return r.Task.TaskID, nil
}

func (c *mcpClient) taskStatus(id string) (string, error) {
	r, err := c.request("tasks/get", map[string]any{"taskId": id})
	return r.Status, err
}

// taskResult waits for the task's result and returns its text; a tool
// error is an error.
func (c *mcpClient) taskResult(id string) (string, error) {
	r, err := c.request("tasks/result", map[string]any{"taskId": id})
	if err != nil {
		return "", err
	}
	if r.IsError {
		return "", fmt.Errorf("tool error: %s", r.text())
	}
	return r.text(), nil
}

// must(t)(text, err) fails the test on err and returns text.
func must(tb testing.TB) func(string, error) string {
	return func(text string, err error) string {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return text
	}
}

// --- 1. the script ------------------------------------------------------

// TestReloadScript walks one directory through adding, replacing, renaming,
// copying in, truncating, corrupting and removing modules, checking after
// each step the served tools, what each tool answers, the problems (in
// Server.Problems and the log), the number of reloads, and that a connected
// client was told the list changed.
func TestReloadScript(t *testing.T) {
	dir := t.TempDir()
	s, logs := newReloadServer(t, Config{ToolsDir: dir, ReloadDebounce: 50 * time.Millisecond})
	c := newClient(t, s)
	waitTools(t, s)
	if got := s.Problems(); len(got) != 0 {
		t.Fatalf("empty directory: got problems %q, want none", got)
	}

	var reusedFrom *wasmrt.Module
	steps := []struct {
		name     string
		do       func(t *testing.T)
		tools    []string
		answers  map[string]string // tool → text of a plain call
		problems map[string]string // file → part of the cause
		reloads  uint64            // exact number of reloads; 0: at least one
		changed  bool              // the tool list changed: clients are told
		check    func(t *testing.T)
	}{{
		name:    "add by rename",
		do:      func(t *testing.T) { put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1")) },
		tools:   []string{"alpha"},
		answers: map[string]string{"alpha": "alpha-1"},
		reloads: 1, changed: true,
	}, {
		name:    "replace by rename",
		do:      func(t *testing.T) { put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-2")) },
		tools:   []string{"alpha"},
		answers: map[string]string{"alpha": "alpha-2"},
		reloads: 1,
	}, {
		name: "rename the file",
		do: func(t *testing.T) {
			reusedFrom = compiled(t, s, "alpha")
			if err := os.Rename(filepath.Join(dir, "a.wasm"), filepath.Join(dir, "b.wasm")); err != nil {
				t.Fatal(err)
			}
		},
		tools:   []string{"alpha"},
		answers: map[string]string{"alpha": "alpha-2"},
		reloads: 1,
		check: func(t *testing.T) {
			if got := s.reg.gen.Load().Modules()[0].Module.Name; got != "b" {
				t.Errorf("module name after the rename: got %q, want b", got)
			}
			if compiled(t, s, "alpha") != reusedFrom {
				t.Error("a renamed file with the same content was compiled again")
			}
		},
	}, {
		name: "copy in progress",
		do: func(t *testing.T) {
			b := verModule(t, "beta", "beta-1")
			f, err := os.Create(filepath.Join(dir, "c.wasm"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for chunk := range slices.Chunk(b, len(b)/4+1) {
				if _, err := f.Write(chunk); err != nil {
					t.Fatal(err)
				}
				f.Sync()
			}
		},
		tools:   []string{"alpha", "beta"},
		answers: map[string]string{"alpha": "alpha-2", "beta": "beta-1"},
		reloads: 1, changed: true,
		check: func(t *testing.T) {
			if got := logs.grep("c.wasm"); len(got) > 0 {
				t.Errorf("a file being written was loaded half-way: %q", got)
			}
		},
	}, {
		name: "truncate in place",
		do: func(t *testing.T) {
			if err := os.Truncate(filepath.Join(dir, "b.wasm"), 0); err != nil {
				t.Fatal(err)
			}
		},
		tools:    []string{"alpha", "beta"},
		answers:  map[string]string{"alpha": "alpha-2"},
		problems: map[string]string{"b.wasm": "still serving the previous version"},
		reloads:  1,
	}, {
		name: "corrupt module",
		do: func(t *testing.T) {
			b := verModule(t, "delta", "delta-1")
			put(t, dir, "d.wasm", b[:len(b)*2/3])
		},
		tools:    []string{"alpha", "beta"},
		problems: map[string]string{"b.wasm": "still serving", "d.wasm": "compil"},
		reloads:  1,
	}, {
		name: "wrong ABI version",
		do: func(t *testing.T) {
			put(t, dir, "e.wasm", replaceOnce(t, verModule(t, "eps", "e-1"), `{"abi":1,"name":"ver"`, `{"abi":2,"name":"ver"`))
		},
		tools:    []string{"alpha", "beta"},
		problems: map[string]string{"b.wasm": "still serving", "d.wasm": "compil", "e.wasm": "abi"},
		reloads:  1,
	}, {
		name: "bad manifest",
		do: func(t *testing.T) {
			put(t, dir, "f.wasm", replaceOnce(t, verModule(t, "phi", "f-1"), `"taskSupport":"optional"`, `"taskSupport":"sometime"`))
		},
		tools:    []string{"alpha", "beta"},
		problems: map[string]string{"b.wasm": "still serving", "d.wasm": "compil", "e.wasm": "abi", "f.wasm": "sometime"},
		reloads:  1,
	}, {
		name:     "two modules declare one tool",
		do:       func(t *testing.T) { put(t, dir, "g.wasm", verModule(t, "alpha", "alpha-g")) },
		tools:    []string{"alpha", "beta"},
		answers:  map[string]string{"alpha": "alpha-2"},
		problems: map[string]string{"b.wasm": "still serving", "d.wasm": "compil", "e.wasm": "abi", "f.wasm": "sometime", "g.wasm": `tool "alpha" is already declared by module "b"`},
		reloads:  1,
	}, {
		name:     "fix the truncated module",
		do:       func(t *testing.T) { put(t, dir, "b.wasm", verModule(t, "alpha", "alpha-3")) },
		tools:    []string{"alpha", "beta"},
		answers:  map[string]string{"alpha": "alpha-3"},
		problems: map[string]string{"d.wasm": "compil", "e.wasm": "abi", "f.wasm": "sometime", "g.wasm": "already declared"},
		reloads:  1,
	}, {
		name: "remove the bad ones and the owner of a contested name",
		do: func(t *testing.T) {
			for _, f := range []string{"b.wasm", "d.wasm", "e.wasm", "f.wasm"} {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
		},
		tools:   []string{"alpha", "beta"},
		answers: map[string]string{"alpha": "alpha-g", "beta": "beta-1"},
	}, {
		name: "empty the directory",
		do: func(t *testing.T) {
			for _, f := range []string{"c.wasm", "g.wasm"} {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
		},
		tools: []string{}, changed: true,
	}}

	for _, st := range steps {
		ok := t.Run(st.name, func(t *testing.T) {
			before, notified := seq(s), c.listChanged.Load()
			st.do(t)
			slices.Sort(st.tools)
			var wantProblems []string
			for f := range st.problems {
				wantProblems = append(wantProblems, f)
			}
			slices.Sort(wantProblems)
			waitFor(t, s, fmt.Sprintf("a reload to tools %v with problems in %v", st.tools, wantProblems), func() bool {
				return seq(s) > before && slices.Equal(toolNames(s), st.tools) && slices.Equal(problemFiles(s), wantProblems)
			})
			waitListed(t, s, c, st.tools...)
			if got := seq(s) - before; st.reloads > 0 && got != st.reloads {
				t.Errorf("got %d reloads, want %d", got, st.reloads)
			}
			for _, line := range s.Problems() {
				file := filepath.Base(strings.Fields(line)[0])
				for f, cause := range st.problems {
					if strings.Contains(line, f) && !strings.Contains(line, cause) {
						t.Errorf("problem of %s: got %q, want its cause to mention %q", f, line, cause)
					}
				}
				// The log follows the swap.
				waitFor(t, s, fmt.Sprintf("problem %q in the log", line), func() bool {
					return len(logs.grep("tool module not served", file)) > 0
				})
			}
			for tool, want := range st.answers {
				if got := must(t)(c.callTool(tool, nil)); got != want {
					t.Errorf("call %s: got %q, want %q", tool, got, want)
				}
			}
			if st.changed {
				waitFor(t, s, "notifications/tools/list_changed", func() bool { return c.listChanged.Load() > notified })
			}
			if st.check != nil {
				st.check(t)
			}
		})
		if !ok {
			t.FailNow()
		}
	}
}

// problemFiles returns the base names of the files Server.Problems names.
func problemFiles(s *Server) []string {
	files := []string{}
	for _, p := range s.reg.gen.Load().Problems() {
		files = append(files, filepath.Base(p.Path))
	}
	slices.Sort(files)
	for _, line := range s.Problems() {
		if !strings.Contains(line, string(filepath.Separator)) {
			files = append(files, "(no path in "+line+")")
		}
	}
	return files
}

// --- 2/3/4. calls and tasks on the old version ----------------------------

// TestReloadRunningCallsFinishOnOldVersion starts a task that waits for the
// user, a sleeping task and a sleeping plain call, then replaces or removes
// their module. New calls go to the new version; the running ones finish
// on the old one, and their results stay retrievable; the old compiled
// module is released only after the last of them ends. With CancelRemoved
// they are ended instead.
func TestReloadRunningCallsFinishOnOldVersion(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cancelRemoved bool
		change        func(t *testing.T, dir string)
		tools         []string
	}{
		{"replace", false, func(t *testing.T, dir string) { put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-2")) }, []string{"alpha"}},
		{"remove", false, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "a.wasm")) }, []string{}},
		{"remove with CancelRemoved", true, func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "a.wasm")) }, []string{}},
		{"replace with CancelRemoved", true, func(t *testing.T, dir string) { put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-2")) }, []string{"alpha"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
			s, _ := newReloadServer(t, Config{ToolsDir: dir, CancelRemoved: tc.cancelRemoved})
			c := newClient(t, s)
			waitListed(t, s, c, "alpha")
			old := compiled(t, s, "alpha")

			held, err := c.startTask("alpha", map[string]any{"hold": true})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, s, "the held task to ask for input", func() bool {
				st, _ := c.taskStatus(held)
				return st == "input_required"
			})
			sleeping, err := c.startTask("alpha", map[string]any{"ms": 300})
			if err != nil {
				t.Fatal(err)
			}
			type answer struct {
				text string
				err  error
			}
			plain := make(chan answer, 1)
			go func() {
				text, err := c.callTool("alpha", map[string]any{"ms": 300})
				plain <- answer{text, err}
			}()
			waitFor(t, s, "three calls running on the first version", func() bool { return inflight(s, old) == 3 })

			before := seq(s)
			tc.change(t, dir)
			waitFor(t, s, "the change to be served", func() bool {
				return seq(s) > before && slices.Equal(toolNames(s), tc.tools)
			})
			if len(tc.tools) > 0 {
				if got := must(t)(c.callTool("alpha", nil)); got != "alpha-2" {
					t.Errorf("new call after the reload: got %q, want alpha-2", got)
				}
			}

			if tc.cancelRemoved {
				// Every call on the old version ends, with a reason.
				for _, id := range []string{held, sleeping} {
					if text, err := c.taskResult(id); err == nil || !strings.Contains(err.Error(), "removed") {
						t.Errorf("task %s: got result %q, err %v; want a tool error saying the module was removed", id, text, err)
					}
					if st, err := c.taskStatus(id); err != nil || st != "failed" && st != "cancelled" {
						t.Errorf("tasks/get %s: got %q, %v; want failed or cancelled", id, st, err)
					}
				}
				if a := <-plain; a.err == nil {
					t.Errorf("plain call: got %q, want a tool error", a.text)
				}
				waitFor(t, s, "the old module to be released", func() bool { return isClosed(old.Done()) })
				return
			}

			// The held task cannot have ended: the old module must still be alive.
			if isClosed(old.Done()) {
				t.Fatal("the old compiled module was released while a task still ran on it")
			}
			if st, err := c.taskStatus(held); err != nil || st != "input_required" {
				t.Fatalf("held task after the reload: got %q, %v; want input_required", st, err)
			}
			for _, id := range []string{held, sleeping} {
				if got := must(t)(c.taskResult(id)); got != "alpha-1" {
					t.Errorf("task %s: got %q, want the first version's alpha-1", id, got)
				}
			}
			if a := <-plain; a.err != nil || a.text != "alpha-1" {
				t.Errorf("plain call: got %q, %v; want alpha-1", a.text, a.err)
			}
			waitFor(t, s, "the old module to be released after its last call", func() bool { return isClosed(old.Done()) })
			// Results stay retrievable after the module is gone.
			for _, id := range []string{held, sleeping} {
				if st, err := c.taskStatus(id); err != nil || st != "completed" {
					t.Errorf("tasks/get %s: got %q, %v; want completed", id, st, err)
				}
				if got, err := c.taskResult(id); err != nil || got != "alpha-1" {
					t.Errorf("tasks/result %s again: got %q, %v; want alpha-1", id, got, err)
				}
			}
			if n := c.elicited.Load(); n != 1 {
				t.Errorf("got %d elicitations, want 1 (the held task's)", n)
			}
		})
	}
}

// --- 5. the directory itself --------------------------------------------

// TestReloadDirectoryLifecycle: the directory may be missing at start,
// created, emptied, deleted and created again, and switched through a
// symbolic link.
func TestReloadDirectoryLifecycle(t *testing.T) {
	t.Run("created after start, emptied, deleted, recreated", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "tools")
		s, _ := newReloadServer(t, Config{ToolsDir: dir})
		c := newClient(t, s)
		waitListed(t, s, c)
		if p := s.Problems(); len(p) != 1 || !strings.Contains(p[0], "does not exist") {
			t.Errorf("missing directory: got problems %q, want one saying it does not exist", p)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
		waitListed(t, s, c, "alpha")
		waitFor(t, s, "no problems", func() bool { return len(s.Problems()) == 0 })
		if got := must(t)(c.callTool("alpha", nil)); got != "alpha-1" {
			t.Errorf("got %q, want alpha-1", got)
		}

		os.Remove(filepath.Join(dir, "a.wasm"))
		waitListed(t, s, c)

		put(t, dir, "b.wasm", verModule(t, "beta", "beta-1"))
		waitListed(t, s, c, "beta")
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		waitListed(t, s, c)
		waitFor(t, s, "a problem for the missing directory", func() bool { return len(s.Problems()) == 1 })

		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		put(t, dir, "c.wasm", verModule(t, "gamma", "gamma-1"))
		waitListed(t, s, c, "gamma")
		if got := must(t)(c.callTool("gamma", nil)); got != "gamma-1" {
			t.Errorf("got %q, want gamma-1", got)
		}
	})

	t.Run("symlink switch", func(t *testing.T) {
		root := t.TempDir()
		for rel, tool := range map[string]string{"rel1": "alpha", "rel2": "beta"} {
			if err := os.Mkdir(filepath.Join(root, rel), 0o755); err != nil {
				t.Fatal(err)
			}
			put(t, filepath.Join(root, rel), tool+".wasm", verModule(t, tool, rel))
		}
		current := filepath.Join(root, "current")
		if err := os.Symlink("rel1", current); err != nil {
			t.Fatal(err)
		}
		switchTo := func(rel string) {
			tmp := filepath.Join(root, ".current.tmp")
			if err := os.Symlink(rel, tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, current); err != nil {
				t.Fatal(err)
			}
		}
		s, _ := newReloadServer(t, Config{ToolsDir: current})
		c := newClient(t, s)
		waitListed(t, s, c, "alpha")
		for _, step := range []struct{ rel, tool string }{{"rel2", "beta"}, {"rel1", "alpha"}, {"rel2", "beta"}} {
			switchTo(step.rel)
			waitListed(t, s, c, step.tool)
			if got := must(t)(c.callTool(step.tool, nil)); got != step.rel {
				t.Errorf("after switching to %s: got %q, want %q", step.rel, got, step.rel)
			}
		}
		// The new target is watched: a change inside it is picked up.
		put(t, filepath.Join(root, "rel2"), "gamma.wasm", verModule(t, "gamma", "rel2"))
		waitListed(t, s, c, "beta", "gamma")
	})
}

// --- the storm ------------------------------------------------------------

// TestReloadStorm changes the directory many times while workers run tasks
// and plain calls on tools that are always present (their versions
// change). No in-flight call may fail; at the end the served set is the
// directory's.
func TestReloadStorm(t *testing.T) {
	const (
		stable  = 3 // modules always present, called by the workers
		workers = 6 // client goroutines
		changes = 120
	)
	dir := t.TempDir()
	for i := range stable {
		put(t, dir, fmt.Sprintf("s%d.wasm", i), verModule(t, fmt.Sprintf("st%d", i), "g0"))
	}
	s, _ := newReloadServer(t, Config{ToolsDir: dir})
	c := newClient(t, s)
	waitListed(t, s, c, "st0", "st1", "st2")

	var (
		stop     atomic.Bool
		done     sync.WaitGroup
		calls    atomic.Int64
		failures = make(chan string, 64)
	)
	fail := func(format string, args ...any) {
		select {
		case failures <- fmt.Sprintf(format, args...):
		default:
		}
	}
	for w := range workers {
		done.Add(1)
		go func() {
			defer done.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; !stop.Load() || i < 5; i++ {
				tool := fmt.Sprintf("st%d", r.IntN(stable))
				args := map[string]any{"ms": r.IntN(15)}
				var text string
				var err error
				if i%2 == 0 {
					var id string
					if id, err = c.startTask(tool, args); err == nil {
						text, err = c.taskResult(id)
						if st, gerr := c.taskStatus(id); err == nil && (gerr != nil || st != "completed") {
							err = fmt.Errorf("tasks/get: %q, %v", st, gerr)
						}
					}
				} else {
					text, err = c.callTool(tool, args)
				}
				calls.Add(1)
				if err != nil || !strings.HasPrefix(text, "g") {
					fail("worker %d call %d of %s: got %q, %v", w, i, tool, text, err)
				}
			}
		}()
	}

	r := rand.New(rand.NewPCG(42, 42))
	files := map[string]string{} // module name → digest, as the directory holds them
	write := func(name string, b []byte) {
		put(t, dir, name+".wasm", b)
		files[name] = digest(b)
	}
	remove := func(name string) {
		os.Remove(filepath.Join(dir, name+".wasm"))
		delete(files, name)
	}
	for i := range stable {
		files[fmt.Sprintf("s%d", i)] = digest(verModule(t, fmt.Sprintf("st%d", i), "g0"))
	}
	extras := map[string]bool{} // extra module names present
	for i := 1; i <= changes; i++ {
		switch k := r.IntN(6); {
		case k < 3: // new version of a stable module
			n := r.IntN(stable)
			write(fmt.Sprintf("s%d", n), verModule(t, fmt.Sprintf("st%d", n), fmt.Sprintf("g%d", i)))
		case k == 3 || len(extras) == 0: // add an extra module, or a new version of it
			name := fmt.Sprintf("x%d", r.IntN(8))
			write(name, verModule(t, name, fmt.Sprintf("x%d", i)))
			extras[name] = true
		case k == 4: // remove an extra module
			for name := range extras {
				remove(name)
				delete(extras, name)
				break
			}
		default: // a broken file comes and goes
			if _, ok := files["junk"]; ok {
				remove("junk")
			} else {
				write("junk", []byte("\x00asm\x01\x00\x00\x00garbage"))
			}
		}
		// Let half of the changes be served one by one, and the rest pile up.
		if i%2 == 0 {
			waitFor(t, s, "the directory to be served", func() bool { return servedDigests(s, files) })
		}
	}
	stop.Store(true)
	done.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	want := []string{"st0", "st1", "st2"}
	for name := range extras {
		want = append(want, name)
	}
	waitTools(t, s, want...)
	t.Logf("%d changes, %d reloads, %d calls and tasks, %d list_changed", changes, seq(s)-1, calls.Load(), c.listChanged.Load())
	if seq(s) < changes/4 {
		t.Errorf("got %d reloads, want at least %d", seq(s)-1, changes/4)
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// servedDigests reports whether the served generation was built from a
// snapshot of exactly these modules (name → digest).
func servedDigests(s *Server, want map[string]string) bool {
	mods := s.reg.gen.Load().Snapshot().Modules()
	if len(mods) != len(want) {
		return false
	}
	for _, m := range mods {
		if want[m.Name] != m.Digest {
			return false
		}
	}
	return true
}

// --- 6. leaks -------------------------------------------------------------

// TestReloadNoLeak reloads one module 2000 times with calls in between, then
// closes the server: goroutines, file descriptors and compiled code
// (anonymous executable memory) must come back to where they were.
func TestReloadNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("2000 reloads")
	}
	const reloads = 2000
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "v0"))

	baseG, baseFD, baseExec := settle(t, 0, 0, 0, false)
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	waitListed(t, s, c, "alpha")
	if got := must(t)(c.callTool("alpha", nil)); got != "v0" {
		t.Fatalf("got %q, want v0", got)
	}
	_, _, oneModule := settle(t, 0, 0, 0, false)

	for i := 1; i <= reloads; i++ {
		before := seq(s)
		v := fmt.Sprintf("v%d", i)
		if i%100 == 50 { // a broken version: the previous one keeps serving
			put(t, dir, "a.wasm", []byte("\x00asm broken"))
			waitFor(t, s, "the broken version's problem", func() bool { return seq(s) > before })
			if n := len(s.Problems()); n != 1 {
				t.Fatalf("reload %d: got %d problems, want 1", i, n)
			}
			continue
		}
		put(t, dir, "a.wasm", verModule(t, "alpha", v))
		waitFor(t, s, "reload "+v, func() bool { return seq(s) > before && len(s.Problems()) == 0 })
		if i%20 == 0 {
			if got := must(t)(c.callTool("alpha", nil)); got != v {
				t.Fatalf("reload %d: got %q, want %q", i, got, v)
			}
			id, err := c.startTask("alpha", map[string]any{"ms": 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := must(t)(c.taskResult(id)); got != v {
				t.Fatalf("reload %d task: got %q, want %q", i, got, v)
			}
		}
	}
	if seq(s) < reloads {
		t.Fatalf("got %d reloads, want at least %d", seq(s), reloads)
	}
	// While serving: exactly one module's compiled code, not 2000.
	_, _, exec := settle(t, math.MaxInt, math.MaxInt, oneModule, true)
	if exec != oneModule {
		t.Errorf("compiled code while serving one module after %d reloads: got %d bytes, want %d (as after the first load)", reloads, exec, oneModule)
	}

	c.close(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	g, fd, exec := settle(t, baseG, baseFD, baseExec, true)
	if g > baseG || fd > baseFD || exec > baseExec {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("after Close: got %d goroutines, %d fds, %d bytes of executable memory; want at most %d, %d, %d as before New\n%s",
			g, fd, exec, baseG, baseFD, baseExec, buf)
	}
}

// settle collects garbage until the goroutines, open files and anonymous
// executable memory (wazero's compiled code, unmapped by finalizers) stop
// changing, or, with until set, until they are at most the given values.
func settle(tb testing.TB, wantG, wantFD, wantExec int, until bool) (g, fd, exec int) {
	tb.Helper()
	deadline := time.Now().Add(waitDeadline)
	stableFor := 0
	for {
		runtime.GC()
		g2, fd2, exec2 := runtime.NumGoroutine(), openFDs(tb), execBytes(tb)
		if until {
			if g2 <= wantG && fd2 <= wantFD && exec2 <= wantExec {
				return g2, fd2, exec2
			}
		} else if g2 == g && fd2 == fd && exec2 == exec {
			if stableFor++; stableFor == 5 {
				return g, fd, exec
			}
		} else {
			stableFor = 0
		}
		g, fd, exec = g2, fd2, exec2
		if time.Now().After(deadline) {
			tb.Logf("still changing after %v: %d goroutines, %d fds, %d bytes of executable memory", waitDeadline, g, fd, exec)
			return g, fd, exec
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func openFDs(tb testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// execBytes sums the anonymous executable mappings of the process: the
// machine code wazero compiled.
func execBytes(tb testing.TB) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		tb.Skipf("no /proc/self/maps: %v", err)
	}
	total := 0
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 5 || !strings.Contains(f[1], "x") { // a path would be a sixth field
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		z, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			total += int(z - a)
		}
	}
	return total
}

// --- Streamable HTTP ------------------------------------------------------

// TestReloadOverHTTP: over Streamable HTTP, tools/list follows a reload, a
// client listening on the session's GET stream is told the list changed,
// and a task started before a replacement finishes on the old version.
func TestReloadOverHTTP(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
	s, _ := newReloadServer(t, Config{ToolsDir: dir})
	waitTools(t, s, "alpha")
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	h := &httpSession{t: t, url: srv.URL + HTTPPath, hc: srv.Client()}
	h.post("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "reload-test", "version": "1"}})
	h.post("notifications/initialized", nil)
	listed := func(want ...string) {
		t.Helper()
		var names []string
		waitFor(t, s, fmt.Sprintf("tools/list over HTTP to show %v", want), func() bool {
			var list struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			h.decode(h.post("tools/list", map[string]any{}), &list)
			names = names[:0]
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			return slices.Equal(want, names)
		})
	}
	listed("alpha")

	// The GET stream carries server notifications not tied to a request.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	notes := make(chan string, 16)
	streamDone := make(chan struct{})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	h.headers(req)
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: HTTP %d", resp.StatusCode)
	}
	go func() {
		defer close(streamDone)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m rpcMsg
				if json.Unmarshal([]byte(data), &m) == nil && m.Method != "" {
					select {
					case notes <- m.Method:
					default:
					}
				}
			}
		}
	}()
	defer func() { cancel(); <-streamDone }()

	var task toolResult
	h.decode(h.post("tools/call", map[string]any{"name": "alpha", "arguments": map[string]any{"ms": 300}, "task": map[string]any{}}), &task)
	if task.Task == nil {
		t.Fatal("no task")
	}
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-2"))
	put(t, dir, "b.wasm", verModule(t, "beta", "beta-1"))
	waitTools(t, s, "alpha", "beta")

	listed("alpha", "beta")
	select {
	case m := <-notes:
		if m != "notifications/tools/list_changed" {
			t.Errorf("GET stream: got %s, want notifications/tools/list_changed", m)
		}
	case <-time.After(waitDeadline):
		t.Error("no notifications/tools/list_changed on the GET stream")
	}
	var res toolResult
	h.decode(h.post("tasks/result", map[string]any{"taskId": task.Task.TaskID}), &res)
	if res.text() != "alpha-1" || res.IsError {
		t.Errorf("task started before the replacement: got %+v, want alpha-1", res)
	}
	var now toolResult
	h.decode(h.post("tools/call", map[string]any{"name": "alpha"}), &now)
	if now.text() != "alpha-2" {
		t.Errorf("call after the replacement: got %q, want alpha-2", now.text())
	}
}

type httpSession struct {
	t   *testing.T
	url string
	sid string
	hc  *http.Client
	id  int
}

func (h *httpSession) headers(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.sid != "" {
		req.Header.Set("Mcp-Session-Id", h.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
}

// post sends a request (or, with nil params, a notification) and returns
// the result of its response.
func (h *httpSession) post(method string, params any) json.RawMessage {
	h.t.Helper()
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		h.id++
		m["id"] = h.id
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	req, _ := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(b))
	h.headers(req)
	resp, err := h.hc.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		h.sid = sid
	}
	if params == nil {
		return nil
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, body)
	}
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok && strings.HasPrefix(strings.TrimSpace(line), "{") {
			data, ok = strings.TrimSpace(line), true
		}
		if !ok {
			continue
		}
		var msg rpcMsg
		if json.Unmarshal([]byte(data), &msg) == nil && msg.Method == "" {
			if msg.Error != nil {
				h.t.Fatalf("%s: %v", method, msg.Error)
			}
			return msg.Result
		}
	}
	h.t.Fatalf("%s: no response in %q", method, body)
	return nil
}

func (h *httpSession) decode(raw json.RawMessage, v any) {
	h.t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		h.t.Fatalf("%v: %s", err, raw)
	}
}
