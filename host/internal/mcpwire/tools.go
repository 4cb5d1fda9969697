package mcpwire

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
)

// Tool is an MCP Tool as 2026-07-28 has it (task support is the
// server's policy there, not part of the tool); both eras share it.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *abi.Annotations `json:"annotations,omitempty"`
}

// ListedTool is a 2025-11-25 MCP Tool: with execution.taskSupport, which
// go-sdk's Tool type lacks.
type ListedTool struct {
	Tool
	Execution ToolExecution `json:"execution"`
}

// ToolExecution is a 2025-11-25 Tool's execution member.
type ToolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

// ListToolsResult answers tools/list in the 2025-11-25 era.
type ListToolsResult struct {
	mcp.ResultBase
	Tools []ListedTool `json:"tools"`
}

// CallToolResult is an MCP CallToolResult.
type CallToolResult struct {
	mcp.ResultBase
	ResultType        string          `json:"resultType,omitempty"` // 2026-07-28: "complete"
	Content           ContentList     `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// ContentList is the content of a CallToolResult on the wire. A text block
// always has "text", even empty (MCP clients require the member; abi's
// own encoding omits an empty one), and a block has only the members of
// its type. It is a plain slice with no MarshalJSON of its own, so that
// the encoder of the whole answer writes the blocks in place: the bytes a
// MarshalJSON returns are copied and compacted again, twice a result's
// text more in memory.
type ContentList []Content

// Content is one content block of a CallToolResult.
type Content struct {
	Type     string  `json:"type"`
	Text     *string `json:"text,omitempty"` // set for every text block
	Data     string  `json:"data,omitempty"`
	MIMEType string  `json:"mimeType,omitempty"`
	// A resource_link block (ABI 1.2).
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// A resource block (ABI 1.2).
	Resource *EmbeddedContents `json:"resource,omitempty"`
}

// EmbeddedContents are a resource's contents in a resource block: text
// (always present for a text resource, even empty) or a base64 blob.
type EmbeddedContents struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     string  `json:"blob,omitempty"`
}

// TextBlock is a text content block holding s.
func TextBlock(s string) Content { return Content{Type: "text", Text: &s} }

// PlainText is the block's text, "" for a block of another type.
func (c Content) PlainText() string {
	if c.Text == nil {
		return ""
	}
	return *c.Text
}

// ToolError is a CallToolResult with isError set whose one text block is
// msg.
func ToolError(msg string) *CallToolResult {
	return &CallToolResult{Content: ContentList{TextBlock(msg)}, IsError: true}
}

// RenderResult is r as a CallToolResult. Text blocks point into r, which
// no one changes (a result may be shared from the result cache).
func RenderResult(r *abi.Result) *CallToolResult {
	c := make(ContentList, len(r.Content))
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case "text":
			c[i] = Content{Type: b.Type, Text: &b.Text}
		case "resource_link":
			c[i] = Content{Type: b.Type, URI: b.URI, Name: b.Name, Title: b.Title, Description: b.Description, MIMEType: b.MIMEType, Size: b.Size}
		case "resource":
			e := &EmbeddedContents{URI: b.Resource.URI, MIMEType: b.Resource.MIMEType, Blob: b.Resource.Blob}
			if e.Blob == "" {
				e.Text = &b.Resource.Text
			}
			c[i] = Content{Type: b.Type, Resource: e}
		default:
			c[i] = Content{Type: b.Type, Data: b.Data, MIMEType: b.MIMEType}
		}
	}
	return &CallToolResult{Content: c, StructuredContent: r.StructuredContent, IsError: r.IsError}
}

// Size estimates the bytes a result holds, for the task store's bound,
// without encoding it again.
func (r *CallToolResult) Size() int64 {
	n := int64(len(r.StructuredContent)) + 32
	for _, c := range r.Content {
		n += int64(len(c.PlainText())+len(c.Data)+len(c.MIMEType)+len(c.URI)+len(c.Name)+len(c.Title)+len(c.Description)) + 32
		if e := c.Resource; e != nil {
			n += int64(len(e.URI)+len(e.MIMEType)+len(e.Blob)) + 32
			if e.Text != nil {
				n += int64(len(*e.Text))
			}
		}
	}
	return n
}
