package examples_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// These tests build each example from its sources, serve it with a
// host.Server and call its tools over MCP on an in-memory stdio session
// (hosttest's client, which also checks that no text a client sees names
// Go internals), as a client would.

// session is an initialized MCP session with a server: hosttest's stdio
// client, and the notifications it has received so far. It belongs to the
// test goroutine.
type session struct {
	*hosttest.Client
	t     *testing.T
	notes []hosttest.Message
}

// serveMCP serves srv on an in-memory stdio session and returns the session
// initialized, with the elicitation capability. The session ends at the
// end of the test, before the server closes.
func serveMCP(t *testing.T, srv *host.Server) *session {
	t.Helper()
	c := hosttest.Stdio(t, func(in io.Reader, out io.Writer) error {
		return srv.ServeStdio(context.Background(), in, out)
	})
	s := &session{Client: c, t: t}
	s.Initialize(map[string]any{"elicitation": map[string]any{}})
	return s
}

// serveExample builds ex with build.sh, serves it and returns a session.
func serveExample(t *testing.T, ex example) *session {
	t.Helper()
	return serveMCP(t, serveBuilt(t, ex))
}

// keep records m when it is a notification.
func (s *session) keep(m hosttest.Message) {
	if m.Method != "" && m.ID == nil {
		s.notes = append(s.notes, m)
	}
}

// call sends a request and waits for its response, keeping the
// notifications that arrive first and answering elicitation with Elicit.
func (s *session) call(method string, params any) hosttest.Message {
	s.t.Helper()
	return s.Await(s.Request(method, params), s.keep)
}

// toolCall sends tools/call of tool with args, with a progress token unless
// token is "", as a task when task is not nil.
func (s *session) toolCall(tool string, args any, token string, task map[string]any) hosttest.Message {
	s.t.Helper()
	params := map[string]any{"name": tool, "arguments": args}
	if token != "" {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	if task != nil {
		params["task"] = task
	}
	return s.call("tools/call", params)
}

// callTool calls tool without a task and returns its result; a JSON-RPC
// error fails the test.
func (s *session) callTool(tool string, args any, token string) hosttest.ToolResult {
	s.t.Helper()
	return s.toolResult("tools/call "+tool, s.toolCall(tool, args, token, nil))
}

// startTask calls tool as a task and returns the ID of the working task.
func (s *session) startTask(tool string, args any, token string) string {
	s.t.Helper()
	r := s.toolResult("tools/call "+tool+" as a task", s.toolCall(tool, args, token, map[string]any{"ttl": 60000}))
	if r.Task == nil || r.Task.TaskID == "" || r.Task.Status != "working" {
		s.t.Fatalf("tools/call %s as a task: got %+v, want a working task", tool, r)
	}
	return r.Task.TaskID
}

// taskStatus returns the status tasks/get reports for id.
func (s *session) taskStatus(id string) string {
	s.t.Helper()
	var task hosttest.Task
	if err := s.call("tasks/get", map[string]any{"taskId": id}).Decode(&task); err != nil {
		s.t.Fatalf("tasks/get %s: %v", id, err)
	}
	return task.Status
}

func (s *session) toolResult(what string, m hosttest.Message) hosttest.ToolResult {
	s.t.Helper()
	var r hosttest.ToolResult
	if err := m.Decode(&r); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
	return r
}

// progressNote is the params of notifications/progress.
type progressNote struct {
	Token    any     `json:"progressToken"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

// progress returns the progress notifications received so far for token.
func (s *session) progress(token string) []progressNote {
	s.t.Helper()
	var out []progressNote
	for _, m := range s.notes {
		if m.Method != "notifications/progress" {
			continue
		}
		var p progressNote
		if err := json.Unmarshal(m.Params, &p); err != nil {
			s.t.Fatalf("progress notification %s: %v", m.Raw, err)
		}
		if p.Token == token {
			out = append(out, p)
		}
	}
	return out
}

// awaitProgress reads messages until a progress notification for token has
// arrived.
func (s *session) awaitProgress(token string) {
	s.t.Helper()
	for len(s.progress(token)) == 0 {
		m := s.Next()
		if m.Method == "" || m.ID != nil {
			s.t.Fatalf("waiting for progress of %q: got %s", token, m.Raw)
		}
		s.keep(m)
	}
}

// toolSupport returns the tools of tools/list by name with their task
// support.
func (s *session) toolSupport() map[string]string {
	s.t.Helper()
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if err := s.call("tools/list", map[string]any{}).Decode(&list); err != nil {
		s.t.Fatalf("tools/list: %v", err)
	}
	out := map[string]string{}
	for _, tool := range list.Tools {
		out[tool.Name] = tool.Execution.TaskSupport
	}
	return out
}

// canonical returns the JSON value raw re-encoded with sorted members.
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("structuredContent %s: %v", raw, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantArgumentsError checks that r is the tool error of arguments the
// tool's input schema refuses.
func wantArgumentsError(t *testing.T, what, tool string, r hosttest.ToolResult) {
	t.Helper()
	if want := fmt.Sprintf("invalid arguments for tool %q: ", tool); !r.IsError || !strings.HasPrefix(r.Text(), want) {
		t.Errorf("%s: got %+v, want a tool error starting %q", what, r, want)
	}
}

func TestWATAddThroughHost(t *testing.T) {
	s := serveExample(t, exampleFor(t, "wat"))
	if got := s.toolSupport(); fmt.Sprint(got) != "map[add:forbidden]" {
		t.Errorf("tools/list: got %v, want add (forbidden)", got)
	}
	tests := []struct {
		args     map[string]any
		wantText string
	}{
		{map[string]any{"a": 2, "b": 40}, "42"},
		{map[string]any{"b": -7, "a": 1000000000000}, "999999999993"},
		{map[string]any{"a": -5, "b": -6}, "-11"},
	}
	for _, tt := range tests {
		r := s.callTool("add", tt.args, "")
		if r.Text() != tt.wantText || r.IsError {
			t.Errorf("add(%v): got %+v, want %s", tt.args, r, tt.wantText)
		}
		if got, want := canonical(t, r.StructuredContent), `{"sum":`+tt.wantText+`}`; got != want {
			t.Errorf("add(%v): structuredContent %s, want %s", tt.args, got, want)
		}
	}
	// Arguments outside the schema never reach a successful answer.
	wantArgumentsError(t, "add(1.5, 1)", "add", s.callTool("add", map[string]any{"a": 1.5, "b": 1}, ""))
}

func TestCSHA256ThroughHost(t *testing.T) {
	s := serveExample(t, exampleFor(t, "c"))
	if got := s.toolSupport(); fmt.Sprint(got) != "map[sha256:forbidden]" {
		t.Errorf("tools/list: got %v, want sha256 (forbidden)", got)
	}
	// Escapes, non-ASCII, HTML-escaped characters and a text of several
	// hundred KiB all hash like crypto/sha256 does.
	for i, in := range []string{"abc", "", "h\u00e9\U0001F600\n\"<&>\t\\", strings.Repeat("wasmtask ", 100000)} {
		token := fmt.Sprintf("sha-%d", i)
		r := s.callTool("sha256", map[string]any{"text": in}, token)
		sum := sha256.Sum256([]byte(in))
		want := hex.EncodeToString(sum[:])
		if r.Text() != want || r.IsError {
			t.Errorf("sha256(%.20q): got %+v, want %s", in, r, want)
		}
		if got, wantS := canonical(t, r.StructuredContent), fmt.Sprintf(`{"bytes":%d,"sha256":"%s"}`, len(in), want); got != wantS {
			t.Errorf("sha256(%.20q): structuredContent %s, want %s", in, got, wantS)
		}
		// The tool reports once per MiB and at the end, before it answers.
		ps := s.progress(token)
		if len(ps) == 0 || ps[len(ps)-1].Progress != float64(len(in)) {
			t.Errorf("sha256(%.20q): progress %+v, want the last at %d", in, ps, len(in))
		}
	}
	// A missing argument is refused by the input schema.
	wantArgumentsError(t, "sha256 without text", "sha256", s.callTool("sha256", map[string]any{}, ""))
}

// TestGoDemoThroughHost runs the Go demo built as a command and built
// pre-initialised (ABI.md section 13): the same answers, progress,
// cancellation and elicitation.
func TestGoDemoThroughHost(t *testing.T) {
	for _, lang := range []string{"go", "go-preinit"} {
		t.Run(lang, func(t *testing.T) { testGoDemoThroughHost(t, exampleFor(t, lang)) })
	}
}

func testGoDemoThroughHost(t *testing.T, ex example) {
	s := serveExample(t, ex)
	want := "map[long_job:required slow_count:optional word_count:forbidden]"
	if got := s.toolSupport(); fmt.Sprint(got) != want {
		t.Fatalf("tools/list: got %v, want %s", got, want)
	}

	t.Run("word_count", func(t *testing.T) {
		r := s.callTool("word_count", map[string]any{"text": "one two\nthree"}, "")
		if got, want := canonical(t, r.StructuredContent), `{"chars":13,"lines":2,"words":3}`; got != want || r.IsError {
			t.Errorf("got %s (%+v), want %s", got, r, want)
		}
		m := s.toolCall("word_count", map[string]any{"text": "x"}, "", map[string]any{})
		if m.Code() != -32601 {
			t.Errorf("word_count as a task: got %s, want error -32601 (taskSupport forbidden)", m.Raw)
		}
	})

	t.Run("slow_count plain with progress", func(t *testing.T) {
		r := s.callTool("slow_count", map[string]any{"steps": 5, "delay_ms": 10}, "slow-plain")
		if got := canonical(t, r.StructuredContent); got != `{"count":5}` {
			t.Errorf("got %s (%+v), want {\"count\":5}", got, r)
		}
		ps := s.progress("slow-plain")
		if len(ps) == 0 {
			t.Fatal("no progress notification")
		}
		if last := ps[len(ps)-1]; last.Progress != 5 || last.Total != 5 {
			t.Errorf("last progress: got %+v, want 5 of 5", last)
		}
	})

	t.Run("slow_count task cancelled", func(t *testing.T) {
		// 10000 steps of 100 ms: only the cancel ends it as cancelled (the
		// default 30 s timeout would fail it).
		id := s.startTask("slow_count", map[string]any{"steps": 10000, "delay_ms": 100}, "slow-task")
		s.awaitProgress("slow-task") // the guest is running
		var task hosttest.Task
		if err := s.call("tasks/cancel", map[string]any{"taskId": id}).Decode(&task); err != nil || task.Status != "cancelled" {
			t.Fatalf("tasks/cancel: got %+v (%v), want status cancelled", task, err)
		}
		if got := s.taskStatus(id); got != "cancelled" {
			t.Errorf("tasks/get after cancel: status %s, want cancelled", got)
		}
		if m := s.call("tasks/result", map[string]any{"taskId": id}); m.Code() != -32603 {
			t.Errorf("tasks/result of the cancelled task: got %s, want error -32603", m.Raw)
		}
	})

	t.Run("long_job plain call refused", func(t *testing.T) {
		m := s.toolCall("long_job", map[string]any{"steps": 2}, "", nil)
		if m.Code() != -32601 {
			t.Errorf("got %s, want error -32601 (taskSupport required)", m.Raw)
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
			// The client answers the question while it waits in
			// tasks/result; meanwhile the task waits for input.
			var (
				id       string
				asked    []string
				statuses []string
			)
			s.Elicit = func(params json.RawMessage) any {
				var p struct {
					Message string `json:"message"`
				}
				if err := json.Unmarshal(params, &p); err != nil {
					t.Errorf("elicitation/create params %s: %v", params, err)
				}
				asked = append(asked, p.Message)
				statuses = append(statuses, s.taskStatus(id))
				return tt.reply
			}
			defer func() { s.Elicit = nil }()
			token := "long-" + strings.ReplaceAll(tt.name, " ", "-")
			id = s.startTask("long_job", map[string]any{"steps": 4, "delay_ms": 10}, token)

			m := s.call("tasks/result", map[string]any{"taskId": id})
			r := s.toolResult("tasks/result", m)
			if got := canonical(t, r.StructuredContent); got != tt.want || r.Text() != tt.wantText || r.IsError {
				t.Errorf("tasks/result: got %s %q (%s), want %s %q", got, r.Text(), m.Raw, tt.want, tt.wantText)
			}
			related, _ := r.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
			if related["taskId"] != id {
				t.Errorf("tasks/result _meta: got %v, want related-task %s", r.Meta, id)
			}
			if len(asked) != 1 {
				t.Fatalf("got %d elicitations %q, want 1", len(asked), asked)
			}
			if !strings.Contains(asked[0], "Halfway there: 2 of 4 steps done") {
				t.Errorf("elicitation message %q, want the halfway question", asked[0])
			}
			if fmt.Sprint(statuses) != "[input_required]" {
				t.Errorf("task status while the question was open: got %v, want [input_required]", statuses)
			}
			if got := s.taskStatus(id); got != "completed" {
				t.Errorf("final status %s, want completed", got)
			}
			ps := s.progress(token)
			if len(ps) == 0 || ps[len(ps)-1].Progress != tt.wantSteps {
				t.Errorf("progress: got %+v, want the last at %v", ps, tt.wantSteps)
			}
		})
	}
}
