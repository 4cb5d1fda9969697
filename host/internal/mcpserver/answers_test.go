package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// surveyTools adds to the fake tools:
//
//	survey  optional  asks surveyQuestion, returns "answer: <action> <content>"
//	                  or "refused" when its question failed
type surveyTools struct{ *fakeTools }

var surveyQuestion = abi.ElicitRequest{Message: "About you?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","maxLength":16},` +
	`"age":{"type":"integer","minimum":0},` +
	`"color":{"type":"string","enum":["red","green"]},` +
	`"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},` +
	`"note":{"type":"string"},` +
	`"subscribe":{"type":"boolean","default":true}},` +
	`"required":["name","age"]}`)}

func (s surveyTools) Tools() []abi.Tool {
	out := append(s.fakeTools.Tools(), abi.Tool{Name: "survey", TaskSupport: abi.TaskOptional, InputSchema: json.RawMessage(`{"type":"object"}`)})
	slices.SortFunc(out, func(a, b abi.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (s surveyTools) Tool(name string) (ToolInfo, bool) {
	for _, t := range s.Tools() {
		if t.Name == name {
			return info(t), true
		}
	}
	return ToolInfo{}, false
}

func (s surveyTools) Call(ctx context.Context, who Caller, name string, args json.RawMessage, ev abi.Events) (*abi.Result, bool, error) {
	if name != "survey" {
		return s.fakeTools.Call(ctx, who, name, args, ev)
	}
	reply, err := ev.Elicit(ctx, surveyQuestion)
	if err != nil {
		return text("refused"), false, nil // the reason is the host's (a guest gets a code)
	}
	return text(fmt.Sprintf("answer: %s %s", reply.Action, reply.Content)), false, nil
}

// badAnswers break surveyQuestion's schema in every way a flat form can be
// broken, and MCP's shape of an answer; want is in the reason given.
//
// In an input round go-sdk decodes the answers itself, as ElicitResults:
// one it cannot decode (undecodable) refuses the whole request before the
// server sees it, with go-sdk's own error.
var badAnswers = []struct {
	name, content, want string
	undecodable         bool
}{
	{"wrong type", `{"name":"Ada","age":"old"}`, "age", false},
	{"not an integer", `{"name":"Ada","age":1.5}`, "age", false},
	{"below minimum", `{"name":"Ada","age":-1}`, "minimum", false},
	{"missing required", `{"name":"Ada"}`, "age", false},
	{"enum violation", `{"name":"Ada","age":36,"color":"blue"}`, "color", false},
	{"multi-select violation", `{"name":"Ada","age":36,"tags":["a","z"]}`, "tags", false},
	{"extra property of an object", `{"name":"Ada","age":36,"extra":{"a":1}}`, `property "extra" is an object`, false},
	{"extra property null", `{"name":"Ada","age":36,"extra":null}`, `property "extra" is null`, false},
	{"array of numbers", `{"name":"Ada","age":36,"tags":[1]}`, `property "tags" is an array`, false},
	{"string over maxLength", `{"name":"` + strings.Repeat("n", 17) + `","age":36}`, "name", false},
	{"oversized content", `{"name":"Ada","age":36,"note":"` + strings.Repeat("x", mcpwire.MaxAnswerBytes) + `"}`, "more than the limit", false},
	{"number beyond float64", `{"name":"Ada","age":1e400}`, "64-bit float", true},
	{"content not an object", `["Ada",36]`, `"content" must be an object`, true},
	{"accepted without content", ``, "age", false},
}

// goodAnswer passes, and reaches the tool with the schema's default.
const (
	goodAnswer   = `{"name":"Ada","age":36,"tags":["a"]}`
	goodReceived = `answer: accept {"age":36,"name":"Ada","subscribe":true,"tags":["a"]}`
)

func elicitResult(content string) map[string]any {
	r := map[string]any{"action": "accept"}
	if content != "" {
		r["content"] = json.RawMessage(content)
	}
	return r
}

func TestCheckAnswer(t *testing.T) {
	for _, c := range badAnswers {
		t.Run(c.name, func(t *testing.T) {
			_, err := mcpwire.CheckAnswer(surveyQuestion, abi.ElicitReply{Action: "accept", Content: json.RawMessage(c.content)})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckAnswer(%.80s) = %v, want an error naming %q", c.content, err, c.want)
			}
			if len(err.Error()) > mcpwire.MaxAnswerDetail+100 {
				t.Errorf("the error is %d bytes long: %.120s…", len(err.Error()), err)
			}
		})
	}
	got, err := mcpwire.CheckAnswer(surveyQuestion, abi.ElicitReply{Action: "accept", Content: json.RawMessage(goodAnswer)})
	if err != nil || "answer: accept "+string(got.Content) != goodReceived {
		t.Errorf("CheckAnswer(good) = %s, %v; want %s", got.Content, err, goodReceived)
	}
	got, err = mcpwire.CheckAnswer(surveyQuestion, abi.ElicitReply{Action: "decline", Content: json.RawMessage(`{"x":{}}`)})
	if err != nil || got.Action != "decline" || got.Content != nil {
		t.Errorf("CheckAnswer(decline with content) = %+v, %v; want decline without content", got, err)
	}
	if _, err := mcpwire.CheckAnswer(surveyQuestion, abi.ElicitReply{Action: "maybe"}); err == nil {
		t.Error("CheckAnswer(action maybe) passed")
	}
	// Lone surrogates reach the tool as U+FFFD.
	got, err = mcpwire.CheckAnswer(surveyQuestion, abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"name":"\ud800","age":1}`)})
	if err != nil || !strings.Contains(string(got.Content), "\uFFFD") || strings.Contains(string(got.Content), `\ud800`) {
		t.Errorf("CheckAnswer(lone surrogate) = %s, %v; want U+FFFD", got.Content, err)
	}
}

// TestBadAnswers2025: over 2025-11-25, an elicitation/create response that
// breaks the question never reaches the tool: its question fails.
func TestBadAnswers2025(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	ts.catalog.Store(surveyTools{ts.tools})
	ask := func(id int, content string) string {
		t.Helper()
		// A session of its own: a session's questions are rate limited.
		c := ts.connectStdio(t)
		defer c.closeInput()
		c.initialize(true)
		b, _ := json.Marshal(elicitResult(content))
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"survey","arguments":{}}}`, id))
		for {
			m := c.next()
			if m["method"] == "elicitation/create" {
				c.answerElicit(m, string(b))
				continue
			}
			if idOf(m) == fmt.Sprint(id) {
				if m["error"] != nil {
					t.Fatalf("tools/call: %v", m["error"])
				}
				return fmt.Sprint(result(m)["content"])
			}
		}
	}
	for i, bad := range badAnswers {
		if got := ask(i+1, bad.content); !strings.Contains(got, "refused") || strings.Contains(got, "answer: ") {
			t.Errorf("%s: the tool got %s, want its question refused", bad.name, got)
		}
	}
	if got := ask(100, goodAnswer); !strings.Contains(got, goodReceived) {
		t.Errorf("good answer: the tool got %s, want %s", got, goodReceived)
	}
}

// TestBadAnswers2026: over 2026-07-28, an answer that breaks the question
// is refused with -32602 naming the answer, in an input round of a plain
// call and in tasks/update alike; the question stays open, and a good
// answer then completes the call.
func TestBadAnswers2026(t *testing.T) {
	ts, _, c := modernServer(t, taskengine.Config{})
	ts.catalog.Store(surveyTools{ts.tools})

	t.Run("input rounds", func(t *testing.T) {
		c.Capabilities = map[string]any{"elicitation": map[string]any{}} // no tasks: a plain call
		round1 := c.Call(methodCallTool, call("survey", nil)).Map()
		reqs, _ := round1["inputRequests"].(map[string]any)
		if round1["resultType"] != resultInputRequired || len(reqs) != 1 {
			t.Fatalf("round 1 = %v", round1)
		}
		key := slices.Collect(func(yield func(string) bool) {
			for k := range reqs {
				yield(k)
			}
		})[0]
		retry := func(content string) hosttest.Message {
			return c.Call(methodCallTool, map[string]any{"name": "survey", "arguments": map[string]any{},
				"inputResponses": map[string]any{key: elicitResult(content)}})
		}
		for _, bad := range badAnswers {
			m := retry(bad.content)
			if bad.undecodable {
				if m.Error == nil {
					t.Errorf("%s: round 2 = %s, want the request refused", bad.name, m.Raw)
				}
				continue
			}
			if m.Code() != -32602 || !strings.Contains(m.Error.Message, "inputResponses") || !strings.Contains(m.Error.Message, bad.want) {
				t.Errorf("%s: round 2 = %s, want -32602 naming the answer and %q", bad.name, m.Raw, bad.want)
			}
		}
		if got := retry(goodAnswer).Map(); got["resultType"] != resultComplete || !strings.Contains(fmt.Sprint(got["content"]), goodReceived) {
			t.Errorf("good answer: round 2 = %v, want %s", got, goodReceived)
		}
	})

	t.Run("tasks/update", func(t *testing.T) {
		c.Capabilities = hosttest.WithTasks
		id, _ := c.Call(methodCallTool, call("survey", nil)).Map()["taskId"].(string)
		if id == "" {
			t.Fatal("no task")
		}
		r := pollStatus(t, ts, c, id, "input_required")
		reqs, _ := r["inputRequests"].(map[string]any)
		if len(reqs) != 1 {
			t.Fatalf("inputRequests = %v", reqs)
		}
		var key string
		for k := range reqs {
			key = k
		}
		update := func(content string) hosttest.Message {
			return c.Call(methodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]any{key: elicitResult(content)}})
		}
		for _, bad := range badAnswers {
			m := update(bad.content)
			if m.Code() != -32602 || !strings.Contains(m.Error.Message, bad.want) {
				t.Errorf("%s: tasks/update = %s, want -32602 naming %q", bad.name, m.Raw, bad.want)
			}
			r := c.Call(methodTasksGet, taskID(id)).Map()
			if left, _ := r["inputRequests"].(map[string]any); r["status"] != "input_required" || left[key] == nil {
				t.Fatalf("%s: after a refused update the task is %v, want its question open", bad.name, r)
			}
		}
		if m := update(goodAnswer); m.Error != nil {
			t.Fatalf("good answer: tasks/update = %s", m.Raw)
		}
		r = pollStatus(t, ts, c, id, "completed")
		if !strings.Contains(fmt.Sprint(r["result"]), goodReceived) {
			t.Errorf("good answer: result %v, want %s", r["result"], goodReceived)
		}
	})
}
