package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/wasmtask/wasmtask/abi"
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

func (f *fakeTools) List() []abi.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]abi.Tool(nil), f.tools...)
}

func (f *fakeTools) set(tools []abi.Tool) {
	f.mu.Lock()
	f.tools = tools
	f.mu.Unlock()
}

func text(s string) *abi.Result {
	return &abi.Result{Content: []abi.Content{{Type: "text", Text: s}}}
}

func (f *fakeTools) Call(ctx context.Context, name string, args json.RawMessage, ev Events) (*abi.Result, error) {
	switch name {
	case "quick":
		var a struct{ Name string }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		return text("hello " + a.Name), nil
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
			return nil, err
		}
		return text(fmt.Sprintf("action=%s content=%s", reply.Action, reply.Content)), nil
	case "fail":
		return &abi.Result{Content: []abi.Content{{Type: "text", Text: "bad input: no such city"}}, IsError: true}, nil
	case "crash":
		return nil, errors.New("tool crash: wasm trap: unreachable")
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownTool, name)
}

// panicky panics for tool "boom".
type panicky struct{ *fakeTools }

func (p panicky) Call(ctx context.Context, name string, args json.RawMessage, ev Events) (*abi.Result, error) {
	if name == "boom" {
		panic("boom")
	}
	return p.fakeTools.Call(ctx, name, args, ev)
}
