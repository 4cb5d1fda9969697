package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcphttp"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// These tests hold the 2026-07-28 tasks extension to the brief's
// requirements (../shared/protocol/tasks-2026.md, R1–R9), check by check
// as the conformance suite's tasks-* scenarios make them, over the same
// fake tools as the 2025-11-25 tests, plus the ones below.

// modernTools adds to the fake tools:
//
//	rpcerr  required  ends with a protocol error (ABI 1.1 result "error")
//	twoq    required  asks two questions at once, returns both answers
//	twoq_plain        the same, optional (a plain call for a client
//	                  without the tasks extension)
//	ask3    optional  asks three questions one after the other
//	staged  required, taskStart begin_task: asks a name, begins its task,
//	        waits for release, greets the name
//	stuck   required  ignores its context until released (only the engine
//	        can end its task)
type modernTools struct {
	*fakeTools
	staged chan struct{} // staged's work began as a task
}

var modernExtra = []abi.Tool{
	{Name: "rpcerr", TaskSupport: abi.TaskRequired, TaskStart: abi.TaskStartCall},
	{Name: "twoq", TaskSupport: abi.TaskRequired, TaskStart: abi.TaskStartCall},
	{Name: "twoq_plain", TaskSupport: abi.TaskOptional, TaskStart: abi.TaskStartCall},
	{Name: "ask3", TaskSupport: abi.TaskOptional, TaskStart: abi.TaskStartCall},
	{Name: "staged", TaskSupport: abi.TaskRequired, TaskStart: abi.TaskStartBegin},
	{Name: "stuck", TaskSupport: abi.TaskRequired, TaskStart: abi.TaskStartCall},
	{Name: "steps", TaskSupport: abi.TaskOptional, TaskStart: abi.TaskStartCall},
	{Name: "needs_sampling", Requires: []string{"sampling"}},
	{Name: "routed", HeaderParams: []abi.HeaderParam{{Name: "Region", Path: []string{"region"}, Type: "string"}}},
}

func (m *modernTools) Tools() []abi.Tool {
	out := m.fakeTools.Tools()
	for _, t := range modernExtra {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b abi.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (m *modernTools) Tool(name string) (ToolInfo, bool) {
	for _, t := range m.Tools() {
		if t.Name == name {
			return info(t), true
		}
	}
	return ToolInfo{}, false
}

var nameQuestion = abi.ElicitRequest{Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}

func (m *modernTools) Call(ctx context.Context, _ Caller, name string, args json.RawMessage, ev abi.Events) (*abi.Result, bool, error) {
	res, err := m.call(ctx, name, args, ev)
	return res, false, err
}

func (m *modernTools) call(ctx context.Context, name string, args json.RawMessage, ev abi.Events) (*abi.Result, error) {
	switch name {
	case "rpcerr":
		return &abi.Result{Error: &abi.ProtocolError{Code: -32603, Message: "simulated protocol error"}}, nil
	case "twoq", "twoq_plain":
		var wg sync.WaitGroup
		replies := make([]string, 2)
		for i, q := range []string{"First?", "Second?"} {
			wg.Go(func() {
				r, err := ev.Elicit(ctx, abi.ElicitRequest{Message: q, RequestedSchema: nameQuestion.RequestedSchema})
				if err == nil {
					replies[i] = string(r.Content)
				}
			})
		}
		wg.Wait()
		return text(strings.Join(replies, " ")), nil
	case "ask3":
		var got []string
		for i := range 3 {
			r, err := ev.Elicit(ctx, abi.ElicitRequest{Message: fmt.Sprintf("Question %d?", i+1), RequestedSchema: nameQuestion.RequestedSchema})
			if err != nil {
				return nil, &mcperr.Failure{Kind: mcperr.FailCrashed, Detail: err.Error(), Err: err}
			}
			got = append(got, string(r.Content))
		}
		return text(strings.Join(got, " ")), nil
	case "stuck":
		<-m.release
		return text("released"), nil
	case "routed":
		return text("routed"), nil
	case "steps", "needs_sampling":
		// Keyed questions of every kind, one round each.
		a := ev.(abi.Asker)
		r, err := ev.Elicit(ctx, abi.ElicitRequest{Key: "step1", Message: nameQuestion.Message, RequestedSchema: nameQuestion.RequestedSchema})
		if err != nil {
			return nil, err
		}
		// _meta and unknown members are the tool's, never sent on.
		model, err := a.Sample(ctx, "model", json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"other"}},"x-evil":1}`))
		if err != nil {
			return nil, err
		}
		roots, err := a.Roots(ctx, "")
		if err != nil {
			return nil, err
		}
		return text(string(r.Content) + " " + string(model) + " " + string(roots)), nil
	case "staged":
		r, err := ev.Elicit(ctx, nameQuestion)
		if err != nil {
			return nil, &mcperr.Failure{Kind: mcperr.FailCanceled, Detail: err.Error(), Err: err}
		}
		var in struct{ Name string }
		_ = json.Unmarshal(r.Content, &in)
		if b, ok := ev.(abi.TaskBeginner); ok && b.BeginTask() {
			m.staged <- struct{}{}
			select {
			case <-m.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return text("hello " + in.Name + " (in a task)"), nil
	}
	return m.fakeTools.call(ctx, Caller{}, name, args, ev)
}

// modernServer is a test server over HTTP that also serves modernTools.
func modernServer(t *testing.T, ecfg taskengine.Config) (*testServer, *modernTools, *hosttest.ModernClient) {
	t.Helper()
	ts := newTestServer(t, ecfg)
	mt := &modernTools{fakeTools: ts.tools, staged: make(chan struct{}, 4)}
	ts.catalog.Store(mt)
	srv := ts.httpServer(t)
	c := hosttest.NewModernClient(t, srv.URL+mcphttp.Path)
	c.HC = srv.Client()
	return ts, mt, c
}

func call(name string, args map[string]any) map[string]any {
	if args == nil {
		args = map[string]any{}
	}
	return map[string]any{"name": name, "arguments": args}
}

func taskID(id string) map[string]any { return map[string]any{"taskId": id} }

// keys returns the sorted member names of a result.
func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// pollStatus polls tasks/get until the task's status is want, failing
// the test if it ends in another terminal status. Between polls it waits
// for the engine to change the task, not for the clock: the watch starts
// before each tasks/get, so a change after that read always wakes it.
func pollStatus(t *testing.T, ts *testServer, c *hosttest.ModernClient, id, want string) map[string]any {
	t.Helper()
	for {
		sub, err := ts.engine.Watch(context.Background(), anonymousOwner, id)
		if err != nil {
			t.Fatalf("watching task %s: %v", id, err)
		}
		<-sub.C() // the state when the watch began
		m := c.Call(methodTasksGet, taskID(id))
		if m.Error != nil {
			sub.Stop()
			t.Fatalf("tasks/get: %v", m.Error)
		}
		r := m.Map()
		switch status, _ := r["status"].(string); {
		case status == want:
			sub.Stop()
			return r
		case status == "completed" || status == "failed" || status == "cancelled":
			sub.Stop()
			t.Fatalf("task %s ended %s, want %s: %v", id, status, want, r)
		}
		<-sub.C() // the next change (closed once the task is terminal)
		sub.Stop()
	}
}

func TestModernDiscover(t *testing.T) {
	_, _, c := modernServer(t, taskengine.Config{})
	r := c.Call(methodDiscover, nil).Map()
	caps, _ := r["capabilities"].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	if _, ok := ext[tasksExtension]; !ok {
		t.Errorf("server/discover: no %s extension in %v", tasksExtension, caps)
	}
	for _, served := range []string{"tools", "prompts", "resources", "completions"} {
		if caps[served] == nil {
			t.Errorf("server/discover does not declare %q, which is served: %v", served, caps)
		}
	}
	for _, legacy := range []string{"tasks", "logging"} {
		if _, ok := caps[legacy]; ok {
			t.Errorf("server/discover advertises %q, which 2026-07-28 answers do not deliver: %v", legacy, caps)
		}
	}
	if vs, _ := r["supportedVersions"].([]any); !slices.Contains(vs, any(modernVersion)) || !slices.Contains(vs, any("2025-11-25")) {
		t.Errorf("supportedVersions = %v, want both eras", vs)
	}
}

func TestModernToolsList(t *testing.T) {
	_, _, c := modernServer(t, taskengine.Config{})
	m := c.Call(methodListTools, nil)
	r := m.Map()
	if r["resultType"] != resultComplete {
		t.Errorf("resultType = %v", r["resultType"])
	}
	if strings.Contains(string(m.Result), `"execution"`) {
		t.Errorf("2026-07-28 tools carry no execution field: %s", m.Result)
	}
	if _, ok := r["ttlMs"]; !ok || r["cacheScope"] == nil {
		t.Errorf("tools/list lacks ttlMs/cacheScope: %v", keys(r))
	}
}

// TestModernCapabilityGate: tasks/get, tasks/update and tasks/cancel of a
// request that does not declare the extension get -32021 (HTTP 400) before
// any lookup; so does a required tool.
func TestModernCapabilityGate(t *testing.T) {
	_, _, c := modernServer(t, taskengine.Config{})
	c.Capabilities = hosttest.NoCapabilities
	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{methodTasksGet, taskID("gate-test")},
		{methodTasksUpdate, map[string]any{"taskId": "gate-test", "inputResponses": map[string]any{}}},
		{methodTasksCancel, taskID("gate-test")},
		{methodCallTool, call("required", nil)},
	} {
		status, m := c.Do(tc.method, tc.params, nil)
		if m.Code() != -32021 || status != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, %s; want 400 and -32021", tc.method, status, m.Raw)
			continue
		}
		var data struct {
			RequiredCapabilities struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"requiredCapabilities"`
		}
		if err := json.Unmarshal(m.Error.Data, &data); err != nil || data.RequiredCapabilities.Extensions[tasksExtension] == nil {
			t.Errorf("%s: error data %s does not name the extension", tc.method, m.Error.Data)
		}
	}
	// An optional tool answers synchronously.
	r := c.Call(methodCallTool, call("quick", map[string]any{"name": "sync"})).Map()
	if r["resultType"] != resultComplete || r["taskId"] != nil || !strings.Contains(fmt.Sprint(r["content"]), "hello sync") {
		t.Errorf("optional tool without the extension: %v", r)
	}
}

// TestModernTaskLifecycle mirrors tasks-lifecycle, tasks-wire-fields and
// tasks-dispatch-and-envelope.
func TestModernTaskLifecycle(t *testing.T) {
	ts, mt, c := modernServer(t, taskengine.Config{})

	// A forbidden tool is synchronous, even with params.task (ignored).
	r := c.Call(methodCallTool, map[string]any{"name": "plain", "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}}).Map()
	if r["resultType"] != resultComplete || r["taskId"] != nil {
		t.Errorf("forbidden tool: %v", r)
	}

	// An optional tool is a task for a declaring client: a flat
	// CreateTaskResult with exactly the extension's fields.
	m := c.Call(methodCallTool, call("slow", nil))
	created := m.Map()
	delete(created, "_meta")
	want := []string{"createdAt", "lastUpdatedAt", "pollIntervalMs", "resultType", "status", "taskId", "ttlMs"}
	if got := keys(created); !slices.Equal(got, want) {
		t.Errorf("CreateTaskResult members %v, want %v: %s", got, want, m.Result)
	}
	id, _ := created["taskId"].(string)
	if created["resultType"] != resultTask || created["status"] != "working" {
		t.Errorf("CreateTaskResult = %s", m.Result)
	}
	if ttl, ok := created["ttlMs"].(float64); !ok || ttl <= 0 {
		t.Errorf("ttlMs = %v, want a positive integer", created["ttlMs"])
	}
	// Durable create: an immediate tasks/get resolves.
	got := c.Call(methodTasksGet, taskID(id)).Map()
	if got["taskId"] != id || got["resultType"] != resultComplete || got["result"] != nil {
		t.Errorf("tasks/get of a working task: %v", got)
	}
	<-mt.started
	mt.release <- struct{}{}
	done := pollStatus(t, ts, c, id, "completed")
	res, _ := done["result"].(map[string]any)
	if !strings.Contains(fmt.Sprint(res["content"]), "slow done") {
		t.Errorf("completed task's result = %v", done["result"])
	}
	if res["resultType"] != resultComplete {
		t.Errorf("the inlined result has resultType %v, want %q (2026-07-28 results carry it)", res["resultType"], resultComplete)
	}
	if meta, _ := res["_meta"].(map[string]any); meta[mcpwire.RelatedTaskKey] != nil {
		t.Errorf("the inlined result carries %s: %v", mcpwire.RelatedTaskKey, res)
	}
	if done["error"] != nil || done["inputRequests"] != nil || done["requestState"] != nil {
		t.Errorf("completed task has other payloads: %v", keys(done))
	}

	// A tool error is completed with result.isError; a protocol error is
	// failed with error{code,message} and no result.
	for tool, want := range map[string]string{"fail": "completed", "crash": "completed", "rpcerr": "failed"} {
		id := c.Call(methodCallTool, call(tool, nil)).Map()["taskId"].(string)
		r := pollStatus(t, ts, c, id, want)
		switch want {
		case "completed":
			if res, _ := r["result"].(map[string]any); res["isError"] != true {
				t.Errorf("%s: result = %v, want isError", tool, r["result"])
			}
		case "failed":
			e, _ := r["error"].(map[string]any)
			if e["code"] != float64(-32603) || e["message"] != "simulated protocol error" || r["result"] != nil {
				t.Errorf("%s: %v", tool, r)
			}
		}
	}

	// Cancel: an empty ack, the task cancelled; again: the same ack.
	id = c.Call(methodCallTool, call("slow", nil)).Map()["taskId"].(string)
	<-mt.started
	for range 2 {
		ack := c.Call(methodTasksCancel, taskID(id))
		if a := ack.Map(); a["resultType"] != resultComplete || len(keys(a)) > 2 || a["taskId"] != nil || a["status"] != nil {
			t.Errorf("cancel ack = %s", ack.Raw)
		}
	}
	pollStatus(t, ts, c, id, "cancelled")
	if <-mt.cancelled == "" {
		t.Error("the cancelled tool's context did not end")
	}

	// Unknown tasks: -32602 everywhere.
	for _, method := range []string{methodTasksGet, methodTasksCancel, methodTasksUpdate} {
		if status, m := c.Do(method, taskID("tasks-conformance-nonexistent-12345"), nil); m.Code() != -32602 || status != http.StatusBadRequest {
			t.Errorf("%s of an unknown task: HTTP %d %s", method, status, m.Raw)
		}
	}
	// Removed methods: -32601, HTTP 404.
	for _, method := range []string{methodTasksResult, methodTasksList} {
		if status, m := c.Do(method, taskID("tasks-conformance-isolation-probe"), nil); m.Code() != -32601 || status != http.StatusNotFound {
			t.Errorf("%s: HTTP %d %s", method, status, m.Raw)
		}
	}
}

// TestModernInputRequired mirrors tasks-mrtr-input: questions pending at
// once, partial answers, keys never reused, unknown keys ignored unread.
func TestModernInputRequired(t *testing.T) {
	ts, _, c := modernServer(t, taskengine.Config{})
	id := c.Call(methodCallTool, call("twoq", nil)).Map()["taskId"].(string)
	var r map[string]any
	for {
		r = pollStatus(t, ts, c, id, "input_required")
		if reqs, _ := r["inputRequests"].(map[string]any); len(reqs) == 2 {
			break
		}
	}
	reqs := r["inputRequests"].(map[string]any)
	first, second := "1", "2"
	for _, k := range []string{first, second} {
		q, _ := reqs[k].(map[string]any)
		if q["method"] != "elicitation/create" {
			t.Fatalf("inputRequests[%s] = %v", k, reqs[k])
		}
	}
	ack := c.Call(methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{
		first:         map[string]any{"action": "accept", "content": map[string]any{"name": "partial-1"}},
		"unknown-key": map[string]any{"ignored": true},
	}})
	if a := ack.Map(); a["resultType"] != resultComplete || a["taskId"] != nil {
		t.Errorf("update ack = %s", ack.Raw)
	}
	r = c.Call(methodTasksGet, taskID(id)).Map()
	left, _ := r["inputRequests"].(map[string]any)
	if r["status"] != "input_required" || left[first] != nil || left[second] == nil {
		t.Fatalf("after a partial answer: %v", r)
	}
	c.Call(methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{
		second: map[string]any{"action": "accept", "content": map[string]any{"name": "partial-2"}},
	}})
	r = pollStatus(t, ts, c, id, "completed")
	if txt := fmt.Sprint(r["result"]); !strings.Contains(txt, "partial-1") || !strings.Contains(txt, "partial-2") {
		t.Errorf("result = %v", txt)
	}

	// Sequential questions get keys 1, 2, 3.
	id = c.Call(methodCallTool, call("ask3", nil)).Map()["taskId"].(string)
	for i := 1; i <= 3; i++ {
		r := pollStatus(t, ts, c, id, "input_required")
		key := fmt.Sprint(i)
		if reqs, _ := r["inputRequests"].(map[string]any); reqs[key] == nil || len(reqs) != 1 {
			t.Fatalf("question %d: inputRequests = %v", i, r["inputRequests"])
		}
		c.Call(methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"name": key}},
		}})
	}
	pollStatus(t, ts, c, id, "completed")

	// An invalid answer to a pending question is refused.
	id = c.Call(methodCallTool, call("ask", nil)).Map()["taskId"].(string)
	pollStatus(t, ts, c, id, "input_required")
	if m := c.Call(methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{"1": map[string]any{"action": "maybe"}}}); m.Code() != -32602 {
		t.Errorf("invalid answer: %s", m.Raw)
	}
}

// TestModernPlainCallAsksInRounds: a plain 2026-07-28 call that asks is
// answered input_required, then again with the answers; a tool with
// taskStart begin_task becomes a task only when it says so
// (tasks-mrtr-composition).
func TestModernPlainCallAsksInRounds(t *testing.T) {
	ts, mt, c := modernServer(t, taskengine.Config{})
	c.Capabilities = map[string]any{"elicitation": map[string]any{}} // no tasks: "ask" runs plain
	round1 := c.Call(methodCallTool, call("ask", nil)).Map()
	reqs, _ := round1["inputRequests"].(map[string]any)
	if round1["resultType"] != resultInputRequired || len(reqs) != 1 || round1["taskId"] != nil {
		t.Fatalf("round 1 = %v", round1)
	}
	var key string
	for k := range reqs {
		key = k
	}
	// The same question keeps its key; an answer to another key is none.
	again := c.Call(methodCallTool, map[string]any{"name": "ask", "arguments": map[string]any{},
		"inputResponses": map[string]any{"q1-000000000000": map[string]any{"action": "accept", "content": map[string]any{"color": "red"}}}}).Map()
	if again2, _ := again["inputRequests"].(map[string]any); again2[key] == nil {
		t.Errorf("a round with a stray answer: %v, want the question %s again", again, key)
	}
	round2 := c.Call(methodCallTool, map[string]any{"name": "ask", "arguments": map[string]any{},
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"color": "blue"}}}}).Map()
	if round2["resultType"] != resultComplete || !strings.Contains(fmt.Sprint(round2["content"]), `blue`) {
		t.Errorf("round 2 = %v", round2)
	}

	// Two questions asked together reach the host in any order; their
	// keys do not depend on it, so the answers of round 1 always complete
	// round 2.
	for i := range 20 {
		round1 := c.Call(methodCallTool, call("twoq_plain", nil)).Map()
		reqs, _ := round1["inputRequests"].(map[string]any)
		if len(reqs) != 2 {
			t.Fatalf("twoq_plain round 1 = %v", round1)
		}
		answers := map[string]any{}
		for k, q := range reqs {
			msg := q.(map[string]any)["params"].(map[string]any)["message"]
			answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": fmt.Sprint(msg)}}
		}
		round2 := c.Call(methodCallTool, map[string]any{"name": "twoq_plain", "arguments": map[string]any{}, "inputResponses": answers}).Map()
		if round2["resultType"] != resultComplete || !strings.Contains(fmt.Sprint(round2["content"]), `{"name":"First?"} {"name":"Second?"}`) {
			t.Fatalf("twoq_plain round 2 (try %d) = %v", i, round2)
		}
	}

	// begin_task: round 1 asks, round 2 becomes a task.
	c.Capabilities = hosttest.WithTasks
	round1 = c.Call(methodCallTool, call("staged", nil)).Map()
	reqs, _ = round1["inputRequests"].(map[string]any)
	if round1["resultType"] != resultInputRequired || round1["taskId"] != nil || len(reqs) != 1 {
		t.Fatalf("staged round 1 = %v", round1)
	}
	for k := range reqs {
		key = k
	}
	round2 = c.Call(methodCallTool, map[string]any{"name": "staged", "arguments": map[string]any{},
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}}}).Map()
	id, _ := round2["taskId"].(string)
	if round2["resultType"] != resultTask || id == "" || round2["requestState"] != nil || round2["inputRequests"] != nil {
		t.Fatalf("staged round 2 = %v", round2)
	}
	<-mt.staged
	mt.release <- struct{}{}
	r := pollStatus(t, ts, c, id, "completed")
	if !strings.Contains(fmt.Sprint(r["result"]), "hello Alice (in a task)") {
		t.Errorf("staged result = %v", r["result"])
	}
}

// TestModernNameHeader: tasks/* need Mcp-Name equal to params.taskId
// (-32020, HTTP 400), and Mcp-Method must match the body.
func TestModernNameHeader(t *testing.T) {
	ts, mt, c := modernServer(t, taskengine.Config{})
	id := c.Call(methodCallTool, call("slow", nil)).Map()["taskId"].(string)
	<-mt.started
	defer func() { mt.release <- struct{}{}; pollStatus(t, ts, c, id, "completed") }()
	for name, hdr := range map[string]http.Header{
		"mismatch": {"Mcp-Name": {"someone-else"}},
		"missing":  {"Mcp-Name": {""}},
	} {
		status, m := c.Do(methodTasksGet, taskID(id), hdr)
		if status != http.StatusBadRequest || m.Code() != -32020 {
			t.Errorf("%s Mcp-Name: HTTP %d %s", name, status, m.Raw)
		}
	}
	if status, m := c.Do(methodCallTool, call("plain", nil), http.Header{"Mcp-Method": {methodTasksGet}}); status != http.StatusBadRequest || m.Code() != -32020 {
		t.Errorf("mismatched Mcp-Method: HTTP %d %s", status, m.Raw)
	}
	if m := c.Call(methodTasksGet, taskID(id)); m.Error != nil {
		t.Errorf("matching headers: %s", m.Raw)
	}
	// Names that differ only in case, or repeat, must not let the check
	// and go-sdk read different requests.
	meta, _ := json.Marshal(hosttest.ModernMeta(hosttest.WithTasks))
	for name, tc := range map[string]struct{ body, mcpName string }{
		"decoy METHOD": {fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","METHOD":"x","params":{"taskId":%q,"_meta":%s}}`, id, meta), ""},
		"decoy TASKID": {fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":%q,"TASKID":"other","_meta":%s}}`, id, meta), "other"},
		"twice taskId": {fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"other","taskId":%q,"_meta":%s}}`, id, meta), "other"},
	} {
		req, _ := http.NewRequest(http.MethodPost, c.URL, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", hosttest.ModernVersion)
		req.Header.Set("Mcp-Method", methodTasksGet)
		if tc.mcpName != "" {
			req.Header.Set("Mcp-Name", tc.mcpName)
		}
		resp, err := c.HC.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, want 400", name, resp.StatusCode)
		}
	}
}

// TestModernNoSessionState (R1.4): modern requests leave no session
// behind and no goroutine.
func TestModernNoSessionState(t *testing.T) {
	ts, _, c := modernServer(t, taskengine.Config{})
	sessions := func() int {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return len(ts.sessions)
	}
	// Before any connection: after the calls, the client's idle
	// connections are closed, and with them the server's connection
	// goroutines, so only what the requests left would remain.
	before, goroutines := sessions(), runtime.NumGoroutine()
	for range 1000 {
		if r := c.Call(methodCallTool, call("plain", nil)).Map(); r["resultType"] != resultComplete {
			t.Fatalf("plain call: %v", r)
		}
	}
	if n := sessions(); n != before {
		t.Errorf("sessions: %d before, %d after 1000 modern calls", before, n)
	}
	// A stateless request's go-sdk session and goroutines end just after
	// its answer: poll both counts until they come back (go test's
	// -timeout bounds the wait; no duration is asserted).
	c.HC.CloseIdleConnections()
	for runtime.NumGoroutine() > goroutines || len(slices.Collect(ts.mcp.Sessions())) != 0 {
		runtime.Gosched() // the request goroutines are finishing; a leak hangs here until -timeout, which dumps them
	}
}

// TestModernOwnerLimit (R9.2): anonymous modern requests share one owner;
// past its running-task limit a call gets a clear error, not a hang.
func TestModernOwnerLimit(t *testing.T) {
	_, mt, c := modernServer(t, taskengine.Config{MaxRunningPerOwner: 2})
	for range 2 {
		c.Call(methodCallTool, call("slow", nil))
		<-mt.started
	}
	m := c.Call(methodCallTool, call("slow", nil))
	if m.Code() != mcperr.CodeLimit || !strings.Contains(m.Error.Message, "too many tasks") {
		t.Errorf("third task: %s", m.Raw)
	}
}

// TestBothErasOnStdio (R1.5, R4.6): one stdio process answers a
// 2025-11-25 session and 2026-07-28 requests; each era reads the other's
// task in its own words (a tool error: failed for 2025-11-25, completed
// with result.isError for 2026-07-28).
func TestBothErasOnStdio(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	c := ts.connectStdio(t)
	c.hc.Initialize(map[string]any{"elicitation": map[string]any{}})
	legacy := c.hc.StartTask("fail", map[string]any{}, 0)
	if res := c.hc.TaskResult(legacy.TaskID); !res.IsError {
		t.Fatalf("legacy tasks/result: %+v", res)
	}
	if got := c.hc.GetTask(legacy.TaskID); got.Status != "failed" {
		t.Errorf("legacy tasks/get: %s", got.Status)
	}
	modern := func(method string, params map[string]any) map[string]any {
		m := c.hc.Call(method, hosttest.ModernParams(params, hosttest.WithTasks))
		if m.Error != nil {
			t.Fatalf("%s: %v", method, m.Error)
		}
		return m.Map()
	}
	if caps, _ := modern(methodDiscover, nil)["capabilities"].(map[string]any); caps["extensions"] == nil {
		t.Errorf("stdio server/discover: %v", caps)
	}
	r := modern(methodTasksGet, taskID(legacy.TaskID))
	if res, _ := r["result"].(map[string]any); r["status"] != "completed" || res["isError"] != true {
		t.Errorf("the legacy task read by a 2026-07-28 request: %v", r)
	}
	created := modern(methodCallTool, call("required", nil))
	id, _ := created["taskId"].(string)
	if created["resultType"] != resultTask || id == "" {
		t.Fatalf("modern task on stdio: %v", created)
	}
	if res := c.hc.TaskResult(id); res.Text() != "done" {
		t.Errorf("the modern task read by tasks/result: %+v", res)
	}
}

// TestModernEngineEndedTask (R4.5): a task the engine ended (here its run
// time limit) is failed with a -32603 error worded like its status
// message, never a result.
func TestModernEngineEndedTask(t *testing.T) {
	ts, mt, c := modernServer(t, taskengine.Config{MaxRunTime: time.Millisecond})
	// stuck ignores its context: only the engine ends its task. slow
	// honours it and returns at once: its end races the engine's, and the
	// task must read the same either way.
	for _, tool := range []string{"stuck", "slow"} {
		id := c.Call(methodCallTool, call(tool, nil)).Map()["taskId"].(string)
		r := pollStatus(t, ts, c, id, "failed")
		if tool == "stuck" {
			mt.release <- struct{}{} // what the work returns now is discarded
		}
		e, _ := r["error"].(map[string]any)
		if e["code"] != float64(-32603) || e["message"] == "" || e["message"] != r["statusMessage"] || r["result"] != nil {
			t.Errorf("%s: engine-ended task: %v", tool, r)
		}
	}
}

// TestModernTTL (R3.4): a 2026-07-28 client cannot ask for a TTL; the
// task gets the engine's default, reports it as ttlMs, stays retrievable
// for it and is unknown (-32602) after it. On a fake clock.
func TestModernTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTestServer(t, taskengine.Config{DefaultTTL: time.Second})
		c := ts.connectStdio(t)
		modern := func(method string, params map[string]any) hosttest.Message {
			return c.hc.Call(method, hosttest.ModernParams(params, hosttest.WithTasks))
		}
		created := modern(methodCallTool, map[string]any{"name": "required", "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}}).Map()
		id, _ := created["taskId"].(string)
		if created["ttlMs"] != float64(1000) {
			t.Fatalf("ttlMs = %v, want the default 1000 (params.task is not 2026-07-28)", created["ttlMs"])
		}
		synctest.Wait()
		time.Sleep(999 * time.Millisecond)
		if r := modern(methodTasksGet, taskID(id)); r.Error != nil || r.Map()["status"] != "completed" {
			t.Errorf("tasks/get within the TTL: %s", r.Raw)
		}
		time.Sleep(2 * time.Millisecond)
		if r := modern(methodTasksGet, taskID(id)); r.Code() != -32602 {
			t.Errorf("tasks/get after the TTL: %s, want -32602", r.Raw)
		}
		c.closeInput()
		<-c.done
	})
}

// TestModernAnonymousInFlight: 2026-07-28 requests without a tenant have
// no session to be bounded by; they share the tenant bound on requests
// in flight as one anonymous tenant (429 past it).
func TestModernAnonymousInFlight(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) { c.MaxRequestsPerTenant = 2 })
	srv := ts.httpServer(t)
	c := hosttest.NewModernClient(t, srv.URL+mcphttp.Path)
	c.HC = srv.Client()
	c.Capabilities = hosttest.NoCapabilities // slow runs as a plain call, holding its request
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { c.Call(methodCallTool, call("slow", nil)) })
		<-ts.tools.started
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"plain","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, c.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", hosttest.ModernVersion)
	resp, err := c.HC.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a third anonymous request in flight: HTTP %d, want 429", resp.StatusCode)
	}
	ts.tools.release <- struct{}{}
	ts.tools.release <- struct{}{}
	wg.Wait()
}

// TestModernJSONAnswers: a 2026-07-28 request that cannot receive anything
// before its answer (no progress token, or a call of a tool that cannot
// report progress) is answered as plain JSON; a call with a progress token
// of a tool that can report progress gets a stream.
func TestModernJSONAnswers(t *testing.T) {
	ts, _, c := modernServer(t, taskengine.Config{})
	for name, tc := range map[string]struct {
		tool, text string
		meta       map[string]any
		want       string
	}{
		"no progress token":                    {"plain", "plain", nil, "application/json"},
		"progress token, tool without":         {"plain", "plain", map[string]any{"progressToken": "p1"}, "application/json"},
		"progress token, tool that reports":    {"slow", "slow done", map[string]any{"progressToken": "p2"}, "text/event-stream"},
		"no progress token, tool that reports": {"slow", "slow done", nil, "application/json"},
	} {
		if tc.tool == "slow" {
			ts.tools.release <- struct{}{}
		}
		params := hosttest.ModernParams(map[string]any{"name": tc.tool, "arguments": map[string]any{}, "_meta": tc.meta}, hosttest.NoCapabilities)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": methodCallTool, "params": params})
		req, _ := http.NewRequest(http.MethodPost, c.URL, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", hosttest.ModernVersion)
		req.Header.Set("Mcp-Method", methodCallTool)
		req.Header.Set("Mcp-Name", tc.tool)
		resp, err := c.HC.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, tc.want) || !strings.Contains(string(b), `"text":"`+tc.text+`"`) {
			t.Errorf("%s: HTTP %d %s %s, want %s with the result", name, resp.StatusCode, ct, b, tc.want)
		}
	}
}

// A 2026-07-28 client that listens for tools/list_changed
// (subscriptions/listen) is told when the tool list changes, on the
// listen request's stream, as 2025-11-25 sessions are.
func TestModernListenToolsChanged(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	p := hosttest.ModernParams(map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, hosttest.WithTasks)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": p})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+mcphttp.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", hosttest.ModernVersion)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("subscriptions/listen: HTTP %d %q, want a stream", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct{ Method string }
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		seen = append(seen, m.Method)
		switch m.Method {
		case "notifications/subscriptions/acknowledged":
			ts.ToolsChanged() // as the server does after a reload changed the list
		case "notifications/tools/list_changed":
			return
		}
	}
	t.Fatalf("the listen stream ended after %q without notifications/tools/list_changed", seen)
}

// TestModernRoundState: questions named by their tool's keys, of every
// kind, one per round; each round's requestState carries the answers
// taken so far, so the client answers each question once; a state that
// was altered or issued for another call is refused with -32602.
func TestModernRoundState(t *testing.T) {
	_, _, c := modernServer(t, taskengine.Config{})
	c.Capabilities = map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}, "roots": map[string]any{}}
	steps := func(state string, answers map[string]any) map[string]any {
		p := map[string]any{"name": "steps", "arguments": map[string]any{}, "inputResponses": answers}
		if state != "" {
			p["requestState"] = state
		}
		return c.Call(methodCallTool, p).Map()
	}
	// round asks a round and returns its one open question's key and its state.
	round := func(res map[string]any, wantMethod string) (key, state string) {
		t.Helper()
		reqs, _ := res["inputRequests"].(map[string]any)
		state, _ = res["requestState"].(string)
		if res["resultType"] != resultInputRequired || len(reqs) != 1 || state == "" {
			t.Fatalf("got %v, want input_required with one question and a requestState", res)
		}
		for k, q := range reqs {
			if m := q.(map[string]any)["method"]; m != wantMethod {
				t.Fatalf("question %s is %v, want %s", k, m, wantMethod)
			}
			key = k
		}
		return key, state
	}
	key, s1 := round(steps("", nil), "elicitation/create")
	if key != "step1" {
		t.Fatalf("the first question's key is %q, want the tool's step1", key)
	}
	r2 := steps(s1, map[string]any{"step1": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}})
	key, s2 := round(r2, "sampling/createMessage")
	if key != "model" {
		t.Fatalf("the second question's key is %q, want model", key)
	}
	if p := fmt.Sprint(r2["inputRequests"]); strings.Contains(p, "_meta") || strings.Contains(p, "x-evil") || !strings.Contains(p, "maxTokens") {
		t.Errorf("the sampling question as sent: %s, want its params without the tool's _meta and unknown members", p)
	}
	// Round 3 answers only round 2's question: the state carries step1.
	model := map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "hello"}, "model": "m"}
	rootsKey, s3 := round(steps(s2, map[string]any{"model": model}), "roots/list")
	done := steps(s3, map[string]any{rootsKey: map[string]any{"roots": []any{map[string]any{"uri": "file:///work"}}}})
	if done["resultType"] != resultComplete || !strings.Contains(fmt.Sprint(done["content"]), `{"name":"Ada"}`) ||
		!strings.Contains(fmt.Sprint(done["content"]), `hello`) || !strings.Contains(fmt.Sprint(done["content"]), `file:///work`) {
		t.Fatalf("the last round = %v, want every answer in the result", done)
	}
	// An answer the client sends again replaces the one the state holds.
	roots := map[string]any{"roots": []any{map[string]any{"uri": "file:///work"}}}
	if c2 := steps(s3, map[string]any{rootsKey: roots, "step1": map[string]any{"action": "accept", "content": map[string]any{"name": "Bob"}}}); !strings.Contains(fmt.Sprint(c2["content"]), `{"name":"Bob"}`) {
		t.Errorf("a corrected answer: %v, want Bob", c2)
	}
	// Without its state, round 3's answer alone does not complete it.
	if again := steps("", map[string]any{"model": model}); again["resultType"] != resultInputRequired {
		t.Errorf("round 3 without its state = %v, want step1 asked again", again)
	}

	refused := func(what string, p map[string]any) {
		t.Helper()
		if m := c.Call(methodCallTool, p); m.Code() != -32602 || !strings.Contains(m.Error.Message, "requestState") {
			t.Errorf("%s: got %+v, want -32602 naming requestState", what, m.Error)
		}
	}
	refused("an altered state", map[string]any{"name": "steps", "arguments": map[string]any{}, "requestState": s2 + "-TAMPERED"})
	refused("a state for other arguments", map[string]any{"name": "steps", "arguments": map[string]any{"a": 1}, "requestState": s2})
	refused("another tool's state", map[string]any{"name": "ask", "arguments": map[string]any{}, "requestState": s2})

	// An answer that is not a sampling result is refused, naming its key.
	if m := c.Call(methodCallTool, map[string]any{"name": "steps", "arguments": map[string]any{}, "requestState": s2,
		"inputResponses": map[string]any{"model": map[string]any{"role": "robot", "content": map[string]any{"type": "text", "text": "x"}, "model": "m"}}}); m.Code() != -32602 || !strings.Contains(m.Error.Message, "model") {
		t.Errorf("a bad sampling answer: %+v, want -32602 naming its key", m.Error)
	}

	// A tool that requires sampling is refused to a client that does not
	// declare it, before it runs.
	c.Capabilities = map[string]any{"elicitation": map[string]any{}}
	m := c.Call(methodCallTool, call("needs_sampling", nil))
	if m.Code() != -32021 || !strings.Contains(string(m.Error.Data), `"requiredCapabilities":{"sampling":{}}`) {
		t.Errorf("needs_sampling without sampling: %+v, want -32021 with requiredCapabilities.sampling", m.Error)
	}
}

// TestModernTaskAsksEveryKind: a task's sampling and roots requests are
// input requests as its elicitations are: tasks/get lists each with its
// method, tasks/update answers it (checked as a round's answer is).
func TestModernTaskAsksEveryKind(t *testing.T) {
	ts, _, c := modernServer(t, taskengine.Config{})
	c.Capabilities = map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}, "roots": map[string]any{},
		"extensions": hosttest.WithTasks["extensions"]}
	id, _ := c.Call(methodCallTool, call("steps", nil)).Map()["taskId"].(string)
	if id == "" {
		t.Fatal("steps did not become a task")
	}
	answers := []any{
		map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "hello"}, "model": "m"},
		map[string]any{"roots": []any{map[string]any{"uri": "file:///work"}}},
	}
	for i, method := range []string{"elicitation/create", "sampling/createMessage", "roots/list"} {
		r := pollStatus(t, ts, c, id, "input_required")
		reqs, _ := r["inputRequests"].(map[string]any)
		key := fmt.Sprint(i + 1)
		q, _ := reqs[key].(map[string]any)
		if len(reqs) != 1 || q["method"] != method {
			t.Fatalf("question %d: inputRequests = %v, want one %s", i+1, reqs, method)
		}
		if i == 1 { // a bad answer is refused, and the question stays
			if m := c.Call(methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"role": "robot", "content": map[string]any{"type": "text", "text": "x"}}}}); m.Code() != -32602 {
				t.Errorf("a bad sampling answer: %s, want -32602", m.Raw)
			}
		}
		c.Call(methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{key: answers[i]}})
	}
	r := pollStatus(t, ts, c, id, "completed")
	if txt := fmt.Sprint(r["result"]); !strings.Contains(txt, `{"name":"Ada"}`) || !strings.Contains(txt, "hello") || !strings.Contains(txt, "file:///work") {
		t.Errorf("result = %v, want every answer", txt)
	}
}

// TestTaskAsksEveryKindOn2025: a 2025-11-25 task's sampling and roots
// requests reach the client through tasks/result, as its elicitations
// do, each with the related-task _meta.
func TestTaskAsksEveryKindOn2025(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	ts.catalog.Store(&modernTools{fakeTools: ts.tools, staged: make(chan struct{}, 4)})
	c := ts.connectStdio(t)
	c.hc.Initialize(map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}, "roots": map[string]any{}})
	var asked []string
	c.hc.Elicit = func(p json.RawMessage) any {
		asked = append(asked, "elicitation/create "+relatedTask(p))
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
	}
	c.hc.Answer = func(method string, p json.RawMessage) any {
		asked = append(asked, method+" "+relatedTask(p))
		switch method {
		case "sampling/createMessage":
			return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "hello"}, "model": "m"}
		case "roots/list":
			return map[string]any{"roots": []any{map[string]any{"uri": "file:///work"}}}
		}
		return nil
	}
	task := c.hc.StartTask("steps", map[string]any{}, 0)
	res := c.hc.TaskResult(task.TaskID)
	if txt := res.Text(); !strings.Contains(txt, `{"name":"Ada"}`) || !strings.Contains(txt, "hello") || !strings.Contains(txt, "file:///work") {
		t.Errorf("result = %+v, want every answer", res)
	}
	want := []string{"elicitation/create " + task.TaskID, "sampling/createMessage " + task.TaskID, "roots/list " + task.TaskID}
	if !slices.Equal(asked, want) {
		t.Errorf("the client was asked %q, want %q", asked, want)
	}
}

// relatedTask is the related-task ID of a request's params' _meta.
func relatedTask(params json.RawMessage) string {
	var p struct {
		Meta map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Meta["io.modelcontextprotocol/related-task"].TaskID
}

// TestModernParamHeaders: a tools/call of a tool with x-mcp-header
// parameters needs each present argument mirrored in its Mcp-Param-*
// header (SEP-2243); a missing or different one is HTTP 400, -32020,
// and the tool does not run.
func TestModernParamHeaders(t *testing.T) {
	_, _, c := modernServer(t, taskengine.Config{})
	params := call("routed", map[string]any{"region": "eu"})
	for name, hdr := range map[string]http.Header{
		"no header":        {},
		"another value":    {"Mcp-Param-Region": {"us"}},
		"invalid encoding": {"Mcp-Param-Region": {"=?base64?ZX?="}},
	} {
		if status, m := c.Do(methodCallTool, params, hdr); status != http.StatusBadRequest || m.Code() != -32020 {
			t.Errorf("%s: HTTP %d %s, want 400 and -32020", name, status, m.Raw)
		}
	}
	// Arguments a guest could read otherwise than the check does.
	twin := call("routed", nil)
	twin["arguments"] = json.RawMessage(`{"region":"eu","REGION":"us"}`)
	if status, m := c.Do(methodCallTool, twin, http.Header{"Mcp-Param-Region": {"eu"}}); status != http.StatusBadRequest || m.Code() != -32020 {
		t.Errorf("a case twin of the argument: HTTP %d %s, want 400 and -32020", status, m.Raw)
	}
	meta, _ := json.Marshal(hosttest.ModernMeta(c.Capabilities))
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"_meta":` + string(meta) +
		`,"name":"routed","arguments":{"region":"eu"},"arguments":{"region":"us"}}}`
	req, _ := http.NewRequest(http.MethodPost, c.URL, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": hosttest.ModernVersion, "Mcp-Method": "tools/call", "Mcp-Name": "routed", "Mcp-Param-Region": "eu"} {
		req.Header.Set(k, v)
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(raw), "routed\"") {
		t.Errorf("params with two arguments members: HTTP %d %s, want 400 and no call", resp.StatusCode, raw)
	}
	for name, v := range map[string]string{"plain": "eu", "base64": "=?base64?ZXU=?="} {
		if status, m := c.Do(methodCallTool, params, http.Header{"Mcp-Param-Region": {v}}); status != http.StatusOK || !strings.Contains(string(m.Raw), "routed") {
			t.Errorf("%s: HTTP %d %s, want the result", name, status, m.Raw)
		}
	}
}
