package hosttest

import (
	"encoding/json"
	"fmt"
)

// Message is one JSON-RPC message a client received.
type Message struct {
	Raw    json.RawMessage `json:"-"` // the message as received
	ID     any             `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// IsResponse reports whether m answers a request (it has an ID and no method).
func (m Message) IsResponse() bool { return m.Method == "" && m.ID != nil }

// IsRequest reports whether m is a request from the server (it has an ID
// and a method), such as elicitation/create.
func (m Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// Code is the error code of a response, 0 for a result.
func (m Message) Code() int {
	if m.Error == nil {
		return 0
	}
	return m.Error.Code
}

// Decode decodes the result of a response into v.
func (m Message) Decode(v any) error {
	if m.Error != nil {
		return m.Error
	}
	return json.Unmarshal(m.Result, v)
}

// Map returns the result as a map (nil for an error response).
func (m Message) Map() map[string]any {
	var v map[string]any
	_ = json.Unmarshal(m.Result, &v)
	return v
}

// ToolResult is a CallToolResult as a client sees it.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              map[string]any  `json:"_meta,omitempty"`
	Task              *Task           `json:"task,omitempty"` // set in a CreateTaskResult
}

// Text is the text of the first content block.
func (r ToolResult) Text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// Task is an MCP Task (2025-11-25).
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

func decodeMessage(raw []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return Message{}, err
	}
	m.Raw = append(json.RawMessage(nil), raw...)
	if f, ok := m.ID.(float64); ok && f == float64(int64(f)) {
		m.ID = int64(f)
	}
	return m, nil
}

// initializeParams are the params of an initialize request at protocol
// 2025-11-25 with capabilities caps (nil: none).
func initializeParams(caps map[string]any) map[string]any {
	if caps == nil {
		caps = map[string]any{}
	}
	return map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "hosttest", "version": "1"},
	}
}

// rpcMessage is a JSON-RPC request (id set) or notification (id nil).
func rpcMessage(id any, method string, params any) map[string]any {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		msg["id"] = id
	}
	if params != nil {
		msg["params"] = params
	}
	return msg
}
