package mcpwire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestLiftTaskParams: params.task moves into the private _meta key, and a
// client's own private keys never survive.
func TestLiftTaskParams(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no task", `{"name":"a"}`, `{"name":"a"}`},
		{"task lifted", `{"name":"a","task":{"ttl":5}}`, `{"_meta":{"io.wasmtask/lifted-task":{"ttl":5}},"name":"a"}`},
		{"injection stripped", `{"name":"a","_meta":{"io.wasmtask/lifted-task":{},"k":1}}`, `{"_meta":{"k":1},"name":"a"}`},
		{"escaped injection stripped", `{"name":"a","_meta":{"io.wasmtask\/lifted-task":{}}}`, `{"_meta":{},"name":"a"}`},
		{"not an object", `[1]`, `[1]`},
		{"keeps size", `{"name":"t","arguments":{"s":"<<&&>>"},"task":{}}`, `{"_meta":{"io.wasmtask/lifted-task":{}},"arguments":{"s":"<<&&>>"},"name":"t"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(LiftTaskParams(json.RawMessage(tc.in), nil))
			if canonical(got) != canonical(tc.want) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if strings.Contains(tc.in, "<<&&>>") && !strings.Contains(got, `"<<&&>>"`) {
				t.Errorf("lifted params %s escape HTML characters", got)
			}
		})
	}
}

func FuzzLiftTaskParams(f *testing.F) {
	f.Add([]byte(`{"name":"a","task":{"ttl":5},"_meta":{"x":1}}`))
	f.Add([]byte(`{"_meta":null,"task":null}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, params []byte) {
		out := LiftTaskParams(params, int64(7))
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) != nil || bytes.Equal(out, params) {
			return
		}
		if _, ok := m["task"]; ok {
			t.Errorf("task left in %s", out)
		}
		// A private key in the output is ours, never the client's: the
		// request ID appears only next to a lifted task.
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(m["_meta"], &meta)
		if _, ok := meta[RequestIDKey]; ok {
			if _, lifted := meta[LiftedTaskKey]; !lifted || string(meta[RequestIDKey]) != "7" {
				t.Errorf("request ID without a lifted task, or not ours, in %s", out)
			}
		}
	})
}

// canonical is raw re-encoded, members sorted (raw itself when it is not
// JSON).
func canonical(raw string) string {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return raw
	}
	b, _ := json.Marshal(v)
	return string(b)
}
