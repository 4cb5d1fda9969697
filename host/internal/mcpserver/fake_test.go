package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
)

// fakeTools is an in-Go tool set for tests.
//
//	quick     optional   says hello to arguments.name (schema: name string, required)
//	plain     (absent)   returns "plain"
//	required  required   returns "done"
//	slow      optional   status message, waits for release (or ctx), progress 2/2, returns "slow done"
//	ask       optional   elicits a color and returns it
//	fail      optional   returns an isError result
//	crash     optional   returns a Go error (a guest failure)
type fakeTools struct {
	mu        sync.Mutex
	tools     []abi.Tool
	release   chan struct{} // closed or sent to, to let slow finish
	cancelled chan string   // slow reports its ctx ended
	started   chan struct{} // slow reports it started
}

// info is what the fakes tell of decl: slow reports progress, ask asks;
// the others send nothing before their result but logs.
func info(decl abi.Tool) ToolInfo {
	return ToolInfo{Decl: decl, Progress: decl.Name == "slow", Asks: decl.Name == "ask" || decl.Name == "survey"}
}

func newFakeTools() *fakeTools {
	f := &fakeTools{
		release:   make(chan struct{}, 16),
		cancelled: make(chan string, 16),
		started:   make(chan struct{}, 16),
	}
	f.tools = []abi.Tool{
		{Name: "quick", Description: "Say hello.", TaskSupport: abi.TaskOptional,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		{Name: "plain", Description: "No task support declared."},
		{Name: "required", TaskSupport: abi.TaskRequired},
		{Name: "slow", TaskSupport: abi.TaskOptional},
		{Name: "ask", TaskSupport: abi.TaskOptional},
		{Name: "fail", TaskSupport: abi.TaskOptional},
		{Name: "crash", TaskSupport: abi.TaskOptional},
	}
	return f
}

// Tools implements Catalog. The fake is a catalog of its own: set swaps
// the tools it holds (tests of list_changed).
func (f *fakeTools) Tools() []abi.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]abi.Tool, 0, len(f.tools))
	for _, t := range f.tools {
		if t.TaskSupport == "" {
			t.TaskSupport = abi.TaskForbidden
		}
		if len(t.InputSchema) == 0 {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b abi.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Tool implements Catalog.
func (f *fakeTools) Tool(name string) (ToolInfo, bool) {
	for _, t := range f.Tools() {
		if t.Name == name {
			return info(t), true
		}
	}
	return ToolInfo{}, false
}

func (f *fakeTools) set(tools []abi.Tool) {
	f.mu.Lock()
	f.tools = tools
	f.mu.Unlock()
}

func text(s string) *abi.Result {
	return &abi.Result{Content: []abi.Content{{Type: "text", Text: s}}}
}

func (f *fakeTools) Call(ctx context.Context, who Caller, name string, args json.RawMessage, ev abi.Events) (*abi.Result, bool, error) {
	res, err := f.call(ctx, who, name, args, ev)
	hit := err == nil && name == "quick" && strings.Contains(string(args), `"from-cache"`) // as the host's catalog reports a result cache hit
	return res, hit, err
}

func (f *fakeTools) call(ctx context.Context, who Caller, name string, args json.RawMessage, ev abi.Events) (*abi.Result, error) {
	if _, ok := f.Tool(name); !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTool, name)
	}
	switch name {
	case "quick":
		// The catalog validates arguments against the input schema; the
		// fake checks the one property by hand.
		var a map[string]any
		_ = json.Unmarshal(args, &a)
		name, ok := a["name"].(string)
		switch {
		case a["name"] == nil:
			return nil, &mcperr.Failure{Kind: mcperr.FailArguments, Detail: `missing properties: ["name"]`, Err: errors.New("fake: no name")}
		case !ok:
			return nil, &mcperr.Failure{Kind: mcperr.FailArguments, Detail: "/properties/name: want a string", Err: errors.New("fake: name not a string")}
		}
		if name == "tenant?" {
			return text("tenant " + who.Tenant), nil
		}
		return text("hello " + name), nil
	case "plain":
		return text("plain"), nil
	case "required":
		return text("done"), nil
	case "slow":
		ev.Status("waiting for release")
		f.started <- struct{}{}
		select {
		case <-f.release:
		case <-ctx.Done():
			f.cancelled <- context.Cause(ctx).Error()
			return nil, ctx.Err()
		}
		ev.Progress(2, 2, "finished")
		return text("slow done"), nil
	case "ask":
		reply, err := ev.Elicit(ctx, abi.ElicitRequest{
			Message:         "Pick a color",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`),
		})
		if err != nil {
			return nil, &mcperr.Failure{Kind: mcperr.FailCrashed, Detail: err.Error(), Err: err}
		}
		return text(fmt.Sprintf("action=%s content=%s", reply.Action, reply.Content)), nil
	case "fail":
		return &abi.Result{Content: []abi.Content{{Type: "text", Text: "bad input: no such city"}}, IsError: true}, nil
	case "crash":
		return nil, &mcperr.Failure{Kind: mcperr.FailCrashed, Detail: "wasm error: unreachable", Err: errors.New("fake: trap")}
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownTool, name)
}

// panicky panics for tool "boom".
type panicky struct{ *fakeTools }

func (p panicky) Call(ctx context.Context, who Caller, name string, args json.RawMessage, ev abi.Events) (*abi.Result, bool, error) {
	if name == "boom" {
		panic("boom")
	}
	return p.fakeTools.Call(ctx, who, name, args, ev)
}
