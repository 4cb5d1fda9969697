package taskcodec

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// roundTrip encodes v as a replica that ran a task does and decodes it as
// another replica does.
func roundTrip(t *testing.T, k taskengine.Kind, v any) any {
	t.Helper()
	b, err := New().Encode(k, v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := New().Decode(k, b)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCodecRendersTheSameOnEveryReplica: what a replica decodes answers a
// client exactly as the replica that ran the task would.
func TestCodecRendersTheSameOnEveryReplica(t *testing.T) {
	res := &mcpwire.CallToolResult{
		ResultBase:        mcp.ResultBase{Meta: mcp.Meta{"io.wasmtask/cache": map[string]any{"hit": true}}},
		Content:           mcpwire.ContentList{mcpwire.TextBlock(""), {Type: "image", Data: "aGk=", MIMEType: "image/png"}},
		StructuredContent: json.RawMessage(`{"n":1}`),
		IsError:           true,
	}
	out := roundTrip(t, taskengine.KindOutcome, taskengine.Outcome{Value: res, Failed: true}).(taskengine.Outcome)
	if diff := cmp.Diff(wireJSON(t, res), wireJSON(t, out.Value)); diff != "" || !out.Failed {
		t.Errorf("result (-ran +read):\n%s; failed %v", diff, out.Failed)
	}

	rpc := &jsonrpc.Error{Code: -32602, Message: "bad", Data: json.RawMessage(`{"why":"x"}`)}
	out = roundTrip(t, taskengine.KindOutcome, taskengine.Outcome{Err: rpc}).(taskengine.Outcome)
	var got *jsonrpc.Error
	if !errors.As(out.Err, &got) || got.Code != rpc.Code || got.Message != rpc.Message || string(got.Data) != string(rpc.Data) {
		t.Errorf("JSON-RPC error read back as %#v, want %#v", out.Err, rpc)
	}

	for _, err := range []error{
		&mcperr.Failure{Kind: mcperr.FailOutOfMemory, Detail: "64 MiB", Stderr: "boom", Err: errors.New("wasm: oom")},
		errors.New("something internal"),
	} {
		out = roundTrip(t, taskengine.KindOutcome, taskengine.Outcome{Err: err}).(taskengine.Outcome)
		if a, b := mcperr.FailureText("t", err), mcperr.FailureText("t", out.Err); a != b {
			t.Errorf("failure text: ran %q, read %q", a, b)
		}
		if a, b := mcperr.TaskEndText("t", err), mcperr.TaskEndText("t", out.Err); a != b {
			t.Errorf("status message: ran %q, read %q", a, b)
		}
	}

	info := roundTrip(t, taskengine.KindMeta, &Meta{Tool: "word_count"}).(*Meta)
	if info.Tool != "word_count" {
		t.Errorf("meta read back as %+v", info)
	}
	req := abi.Question{Method: abi.MethodElicit, Message: "ok?", RequestedSchema: json.RawMessage(`{"type":"object"}`)}
	if got := roundTrip(t, taskengine.KindInput, req).(abi.Question); got.Message != req.Message || string(got.RequestedSchema) != string(req.RequestedSchema) {
		t.Errorf("input request read back as %+v", got)
	}
	sample := abi.Question{Method: abi.MethodSample, Params: json.RawMessage(`{"maxTokens":5}`)}
	if got := roundTrip(t, taskengine.KindInput, sample).(abi.Question); got.Method != abi.MethodSample || string(got.Params) != `{"maxTokens":5}` {
		t.Errorf("sampling request read back as %+v", got)
	}
	// A record a replica of an older version wrote: an elicit request.
	old, err := New().Decode(taskengine.KindInput, []byte(`{"message":"ok?","requestedSchema":{"type":"object"}}`))
	if q, _ := old.(abi.Question); err != nil || q.Message != "ok?" || q.Elicitation().Message != "ok?" || q.Method != "" {
		t.Errorf("an elicit request as stored before read back as %+v, %v", old, err)
	}
	rootsAns := mcpevents.Answer{Result: json.RawMessage(`{"roots":[]}`)}
	if got := roundTrip(t, taskengine.KindAnswer, rootsAns).(mcpevents.Answer); string(got.Result) != `{"roots":[]}` {
		t.Errorf("a roots answer read back as %+v", got)
	}
	ans := mcpevents.Answer{Reply: abi.ElicitReply{Action: "accept", Content: json.RawMessage(`{"a":1}`)}}
	if got := roundTrip(t, taskengine.KindAnswer, ans).(mcpevents.Answer); got.Reply.Action != "accept" || string(got.Reply.Content) != `{"a":1}` || got.Err != nil {
		t.Errorf("answer read back as %+v", got)
	}
}

func wireJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
