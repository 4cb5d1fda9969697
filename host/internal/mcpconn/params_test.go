package mcpconn

import (
	"encoding/json"
	"testing"
)

// TestParamsLeaveTheRestToGoSDK: params go-sdk might read otherwise
// than the exact reading here (a name in another case, a repeated member,
// a _meta key of the client's, a taskId that is not a string) are left to
// go-sdk; the plain ones are taken.
func TestParamsLeaveTheRestToGoSDK(t *testing.T) {
	for _, tc := range []struct {
		params string
		take   bool
	}{
		{`{"name":"quick","arguments":{"name":"a"}}`, true},
		{`{"name":"quick","_meta":{"io.wasmtask/lifted-task":{}}}`, true},
		{`{"Name":"quick"}`, false},
		{`{"name":"quick","name":"other"}`, false},
		{`{"name":"quick","_meta":{"progressToken":1}}`, false},
		{`{"name":"quick","task":{}}`, false},
		{`{"name":7}`, false},
		{`{"arguments":{}}`, false},
		{`[{"name":"quick"}]`, false},
	} {
		if got := CallParams(json.RawMessage(tc.params)) != nil; got != tc.take {
			t.Errorf("tools/call params %s: taken %v, want %v", tc.params, got, tc.take)
		}
	}
	for _, tc := range []struct {
		params string
		take   bool
	}{
		{`{"taskId":"t1"}`, true},
		{`{"taskId":null}`, false},
		{`{"taskId":""}`, false},
		{`{"taskId":5}`, false},
		{`{"TaskId":"t1"}`, false},
		{`{"taskId":"t1","taskId":"t2"}`, false},
		{`{"taskId":"t1","_meta":{}}`, false},
	} {
		if got := TaskParams(json.RawMessage(tc.params)) != nil; got != tc.take {
			t.Errorf("task params %s: taken %v, want %v", tc.params, got, tc.take)
		}
	}
}
