package taskcodec

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/taskengine"
)

// New returns the codec of what the MCP layer keeps in tasks (the tool a
// task runs, its CallToolResult or error, its input requests and their
// answers) for a task store that replicas share (taskengine.Config.Codec).
// What a replica decodes renders exactly as on the replica that ran the
// task: a result as the same CallToolResult, a JSON-RPC error with its code
// and data, a failure with the same wording.
func New() taskengine.Codec { return codec{} }

// Meta is a task's SubmitOptions.Meta as the MCP layer sets it: its tool
// and the tool's audit attributes (module and digest) as they were when the
// task was created. Only the tool is stored: a replica that reads the task
// back has the tool's name as its one attribute.
type Meta struct {
	Tool  string
	Attrs []slog.Attr
}

type codec struct{}

type wireMeta struct {
	Tool string `json:"tool"`
}

type wireOutcome struct {
	Result  *mcpwire.CallToolResult `json:"result,omitempty"`
	Failed  bool                    `json:"failed,omitempty"`
	RPC     *jsonrpc.Error          `json:"rpc,omitempty"`
	Failure *wireFailure            `json:"failure,omitempty"`
}

type wireFailure struct {
	Kind   mcperr.FailureKind `json:"kind"`
	Detail string             `json:"detail,omitempty"`
	Stderr string             `json:"stderr,omitempty"`
	Text   string             `json:"text,omitempty"` // the error's own text, for the server log
}

type wireAnswer struct {
	Reply  abi.ElicitReply `json:"reply"`
	Result json.RawMessage `json:"result,omitempty"` // a sampling or roots request's
	Err    string          `json:"err,omitempty"`
}

func (codec) Encode(k taskengine.Kind, v any) ([]byte, error) {
	switch k {
	case taskengine.KindMeta:
		info, _ := v.(*Meta)
		if info == nil {
			return json.Marshal(wireMeta{})
		}
		return json.Marshal(wireMeta{Tool: info.Tool})
	case taskengine.KindOutcome:
		out, _ := v.(taskengine.Outcome)
		w := wireOutcome{Failed: out.Failed}
		w.Result, _ = out.Value.(*mcpwire.CallToolResult)
		var rpc *jsonrpc.Error
		var f *mcperr.Failure
		switch {
		case out.Err == nil:
		case errors.As(out.Err, &rpc):
			w.RPC = rpc
		case errors.As(out.Err, &f):
			w.Failure = &wireFailure{Kind: f.Kind, Detail: f.Detail, Stderr: f.Stderr, Text: f.Error()}
		default:
			w.Failure = &wireFailure{Kind: mcperr.FailInternal, Text: out.Err.Error()}
		}
		return json.Marshal(w)
	case taskengine.KindInput:
		q, _ := v.(abi.Question)
		return json.Marshal(q)
	case taskengine.KindAnswer:
		a, _ := v.(mcpevents.Answer)
		w := wireAnswer{Reply: a.Reply, Result: a.Result}
		if a.Err != nil {
			w.Err = a.Err.Error()
		}
		return json.Marshal(w)
	}
	return nil, fmt.Errorf("unknown kind %d", k)
}

func (codec) Decode(k taskengine.Kind, b []byte) (any, error) {
	switch k {
	case taskengine.KindMeta:
		var w wireMeta
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		return &Meta{Tool: w.Tool, Attrs: []slog.Attr{slog.String("tool", w.Tool)}}, nil
	case taskengine.KindOutcome:
		var w wireOutcome
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		out := taskengine.Outcome{Failed: w.Failed}
		if w.Result != nil {
			out.Value = w.Result
		}
		switch {
		case w.RPC != nil:
			out.Err = w.RPC
		case w.Failure != nil:
			out.Err = &mcperr.Failure{Kind: w.Failure.Kind, Detail: w.Failure.Detail, Stderr: w.Failure.Stderr, Err: errors.New(w.Failure.Text)}
		}
		return out, nil
	case taskengine.KindInput:
		var q abi.Question // an elicit request as stored before ABI 1.2 reads as one
		err := json.Unmarshal(b, &q)
		return q, err
	case taskengine.KindAnswer:
		var w wireAnswer
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		a := mcpevents.Answer{Reply: w.Reply, Result: w.Result}
		if w.Err != "" {
			a.Err = errors.New(w.Err)
		}
		return a, nil
	}
	return nil, fmt.Errorf("unknown kind %d", k)
}
