package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/taskengine"
)

// askTools adds to the fake tools two that ask the client back:
//
//	sampler  optional  samples "2+2?" and returns the model's text
//	rooter   optional  returns the URIs of the client's roots
//
// Each returns "unsupported" when its events cannot ask.
type askTools struct{ *fakeTools }

var askExtra = []abi.Tool{
	{Name: "sampler", TaskSupport: abi.TaskOptional},
	{Name: "rooter", TaskSupport: abi.TaskOptional},
}

func (a askTools) Tools() []abi.Tool {
	out := a.fakeTools.Tools()
	for _, t := range askExtra {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b abi.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (a askTools) Tool(name string) (ToolInfo, bool) {
	for _, t := range a.Tools() {
		if t.Name == name {
			return ToolInfo{Decl: t, Asks: true}, true
		}
	}
	return ToolInfo{}, false
}

func (a askTools) Call(ctx context.Context, who Caller, name string, args json.RawMessage, ev abi.Events) (*abi.Result, bool, error) {
	if name != "sampler" && name != "rooter" {
		return a.fakeTools.Call(ctx, who, name, args, ev)
	}
	asker, ok := ev.(abi.Asker)
	if !ok {
		return text("unsupported"), false, nil
	}
	var reply json.RawMessage
	var err error
	if name == "sampler" {
		reply, err = asker.Sample(ctx, "", json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":5}`))
	} else {
		reply, err = asker.Roots(ctx, "")
	}
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return text("unsupported"), false, nil
	case err != nil:
		return nil, false, err
	}
	return text(string(reply)), false, nil
}

// A plain 2025-11-25 call samples the client's model and lists its roots
// on the session; a client without sampling is not asked.
func TestCallAsksTheClient(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	ts.catalog.Store(askTools{ts.tools})
	c := ts.connectStdio(t)
	r := c.call(0, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"sampling": map[string]any{}, "roots": map[string]any{}}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	if r["error"] != nil {
		t.Fatal(r["error"])
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	answer := func(method, result string) {
		t.Helper()
		for {
			m := c.next()
			if m["method"] == method {
				id, _ := json.Marshal(m["id"])
				if method == "sampling/createMessage" {
					if b, _ := json.Marshal(m["params"]); !strings.Contains(string(b), `"maxTokens":5`) {
						t.Errorf("sampling params: %s", b)
					}
				}
				c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
				return
			}
		}
	}
	callText := func(id int, tool string, extra map[string]any) string {
		t.Helper()
		params := map[string]any{"name": tool, "arguments": map[string]any{}}
		for k, v := range extra {
			params[k] = v
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
		c.send(string(b))
		switch tool {
		case "sampler":
			answer("sampling/createMessage", `{"role":"assistant","content":{"type":"text","text":"4"},"model":"test-model"}`)
		case "rooter":
			answer("roots/list", `{"roots":[{"uri":"file:///work","name":"work"}]}`)
		}
		for {
			m := c.next()
			if idOf(m) == fmt.Sprint(id) {
				content, _ := result(m)["content"].([]any)
				if len(content) == 0 {
					t.Fatalf("%s: %v", tool, m)
				}
				return fmt.Sprint(content[0].(map[string]any)["text"])
			}
		}
	}
	if got := callText(1, "sampler", nil); !strings.Contains(got, `"model":"test-model"`) || !strings.Contains(got, `"text":"4"`) {
		t.Errorf("sampler got %s", got)
	}
	if got := callText(2, "rooter", nil); got != `{"roots":[{"name":"work","uri":"file:///work"}]}` {
		t.Errorf("rooter got %s", got)
	}

	other := ts.connectStdio(t)
	other.initialize(false) // no sampling declared
	if got := other.call(3, "tools/call", map[string]any{"name": "sampler", "arguments": map[string]any{}}); !strings.Contains(fmt.Sprint(result(got)["content"]), "unsupported") {
		t.Errorf("sampling a client that did not declare it: %v", got)
	}
}
