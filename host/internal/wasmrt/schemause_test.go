package wasmrt

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/schema"
)

// TestCheckOutput: a tool with an outputSchema must return
// structuredContent that matches it, unless its result is a tool error.
func TestCheckOutput(t *testing.T) {
	out, err := schema.Compile(json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		out  *schema.Schema
		res  abi.Result
		want string // "" for no error
	}{
		{"matches", out, abi.Result{StructuredContent: json.RawMessage(`{"count":3}`)}, ""},
		{"no outputSchema", nil, abi.Result{}, ""},
		{"tool error without structuredContent", out, abi.Result{IsError: true}, ""},
		{"tool error with other structuredContent", out, abi.Result{IsError: true, StructuredContent: json.RawMessage(`{"why":"x"}`)}, ""},
		{"missing", out, abi.Result{}, "declares an outputSchema but its result has no structuredContent"},
		{"wrong type", out, abi.Result{StructuredContent: json.RawMessage(`{"count":"many"}`)}, `structuredContent does not match the tool's outputSchema: validating root: validating /properties/count: type: "many" has type "string", want "integer"`},
		{"required", out, abi.Result{StructuredContent: json.RawMessage(`{}`)}, `missing properties: ["count"]`},
		{"too deep", out, abi.Result{StructuredContent: json.RawMessage(`{"count":1,"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`)}, "nested deeper than 32 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOutput(tt.out, &tt.res)
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestArgumentsCheckedWithinTimeout: checking the arguments counts against
// the call's time; a call whose time ran out meanwhile is a timeout, and
// its guest does not run.
func TestArgumentsCheckedWithinTimeout(t *testing.T) {
	r := newRuntime(t, Config{})
	m := load(t, r, "ok")
	lim := with(Limits{Timeout: time.Second})
	t0 := time.Now()
	calls := 0
	timeNow = func() time.Time { calls++; return t0.Add(time.Duration(calls-1) * lim.Timeout) }
	defer func() { timeNow = time.Now }()
	ev := &events{}
	_, err := m.Call(context.Background(), "hello", json.RawMessage(`{"who":"x"}`), lim, ev)
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Kind != KindTimeout || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(ge.Msg, "exceeded 1s while checking the arguments") {
		t.Fatalf("got %v, want a timeout while checking the arguments", err)
	}
	if calls != 2 {
		t.Errorf("clock read %d times, want 2 (before and after the check)", calls)
	}
}
