package mcpwire

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
)

// Task is an MCP Task.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"` // null = unlimited
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// RelatedTaskKey is the _meta key that names the task a message belongs
// to (a task's result, progress, log or input request).
const RelatedTaskKey = "io.modelcontextprotocol/related-task"

// RelatedTask is the _meta of a message that belongs to task id.
func RelatedTask(id string) mcp.Meta {
	return mcp.Meta{RelatedTaskKey: map[string]any{"taskId": id}}
}

// TimeFormat is RFC 3339 in UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// TaskResult answers tasks/get and tasks/cancel (2025-11-25): the task.
type TaskResult struct {
	mcp.ResultBase
	Task
}

// CreateTaskResult answers a task-augmented tools/call (2025-11-25).
type CreateTaskResult struct {
	mcp.ResultBase
	Task Task `json:"task"`
}

// ListTasksResult answers tasks/list: one page of the requestor's tasks.
type ListTasksResult struct {
	mcp.ResultBase
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// TaskIDParams are the params of tasks/get, tasks/result and tasks/cancel.
type TaskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// ListTasksParams are the params of tasks/list.
type ListTasksParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// ModernTask is a Task of the extension: flat, with ttlMs and
// pollIntervalMs.
type ModernTask struct {
	ResultType     string `json:"resultType"`
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          *int64 `json:"ttlMs"` // null = unlimited
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

// ModernTaskResult is a CreateTaskResult (resultType "task") or a
// GetTaskResult (resultType "complete", with the payload of its status).
type ModernTaskResult struct {
	mcp.ResultBase
	ModernTask
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	Result        *CallToolResult         `json:"result,omitempty"`
	Error         *jsonrpc.Error          `json:"error,omitempty"`
}

// InputRequest is one entry of inputRequests: the request a 2025-11-25
// server would have sent the client. Params are an ElicitParams, the
// sampling/createMessage params the tool gave, or {} for roots/list.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// ElicitParams are the params of an elicitation/create in form mode.
type ElicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
}

// AckResult answers tasks/update and tasks/cancel.
type AckResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// TaskUpdateParams are the params of tasks/update. The responses stay raw:
// one is decoded only when it answers a pending request.
type TaskUpdateParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// DecodeElicitResult reads an ElicitResult answering an elicitation/create.
func DecodeElicitResult(raw json.RawMessage) (abi.ElicitReply, error) {
	var r struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return abi.ElicitReply{}, errors.New("not an elicitation result object")
	}
	switch r.Action {
	case "accept", "decline", "cancel":
	default:
		return abi.ElicitReply{}, errors.New(`"action" must be "accept", "decline" or "cancel"`)
	}
	reply := abi.ElicitReply{Action: r.Action}
	if c := r.Content; len(c) > 0 && !isNull(c) {
		if c[0] != '{' {
			return abi.ElicitReply{}, errors.New(`"content" must be an object`)
		}
		reply.Content = c
	}
	return reply, nil
}

// ModernListTools answers tools/list in the 2026-07-28 era.
type ModernListTools struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Tools      []Tool `json:"tools"`
	// The list changes on every reload: clients should not cache it, and
	// what one tenant sees is its own.
	TTLMs      int    `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

// InputRequiredResult is a round's answer: the questions still open, and
// the state the client echoes with its answers.
type InputRequiredResult struct {
	mcp.ResultBase
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests"`
	RequestState  string                  `json:"requestState,omitempty"`
}

// QuestionKey names a question of a round: the key the tool chose, else
// a digest of its method and text, and which of the round's questions
// with that text it is (the n-th). The same in every round that asks it,
// whatever order questions asked together (elicit_all) reach the host in;
// identical questions are interchangeable.
func QuestionKey(q abi.Question, seen map[string]int) string {
	if q.Key != "" {
		return q.Key
	}
	h := sha256.New()
	prefix := "q"
	switch q.Method {
	case "", abi.MethodElicit: // the digest of ABI 1.1, which has only these
		h.Write([]byte(q.Message))
		h.Write([]byte{0})
		h.Write(q.RequestedSchema)
	case abi.MethodSample:
		prefix = "sample"
		h.Write(q.Params)
	default:
		prefix = "roots"
		h.Write([]byte(q.Method))
	}
	d := fmt.Sprintf("%x", h.Sum(nil)[:6])
	seen[d]++
	return fmt.Sprintf("%s-%s-%d", prefix, d, seen[d])
}

// ElicitInput is the input request a question becomes on the wire.
func ElicitInput(req abi.ElicitRequest) InputRequest {
	return InputRequest{Method: abi.MethodElicit, Params: ElicitParams{Mode: "form", Message: req.Message, RequestedSchema: req.RequestedSchema}}
}

// QuestionInput is the input request any question becomes on the wire.
func QuestionInput(q abi.Question) InputRequest {
	switch q.Method {
	case abi.MethodSample:
		return InputRequest{Method: abi.MethodSample, Params: q.Params}
	case abi.MethodRoots:
		return InputRequest{Method: abi.MethodRoots, Params: struct{}{}}
	}
	return ElicitInput(q.Elicitation())
}

// AnswersOf reads a round's inputResponses (go-sdk decoded each as the
// result of an elicitation, a sampling or a roots request) as JSON, to be
// checked against the question each answers when it is asked.
func AnswersOf(m mcp.InputResponseMap) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if b, err := json.Marshal(v); err == nil {
			out[k] = b
		}
	}
	return out
}
