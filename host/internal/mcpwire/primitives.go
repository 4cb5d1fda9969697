package mcpwire

import (
	"encoding/base64"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
)

// The declarations and answers of ABI 1.2 (resources, templates, prompts)
// as go-sdk's values. Every field was checked when its manifest or answer
// was decoded (abi.DecodeManifest, abi.DecodeReadResult,
// abi.DecodePromptResult); base64 in them is valid.

// Resource is r as MCP lists it.
func Resource(r *abi.Resource) *mcp.Resource {
	out := &mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Annotations: annotations(r.Annotations)}
	if r.Size != nil {
		out.Size = *r.Size
	}
	return out
}

// ResourceTemplate is t as MCP lists it.
func ResourceTemplate(t *abi.ResourceTemplate) *mcp.ResourceTemplate {
	return &mcp.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType, Annotations: annotations(t.Annotations)}
}

// Prompt is p as MCP lists it.
func Prompt(p *abi.Prompt) *mcp.Prompt {
	out := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
	for _, a := range p.Arguments {
		out.Arguments = append(out.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
	}
	return out
}

// ResourceContents is c as resources/read and embedded resources carry it.
func ResourceContents(c *abi.ResourceContents) *mcp.ResourceContents {
	out := &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text}
	if c.Blob != "" {
		out.Blob = decoded(c.Blob)
	}
	return out
}

// PromptContent is a prompt message's content block as go-sdk's value.
func PromptContent(c *abi.Content) mcp.Content {
	switch c.Type {
	case "image":
		return &mcp.ImageContent{Data: decoded(c.Data), MIMEType: c.MIMEType}
	case "audio":
		return &mcp.AudioContent{Data: decoded(c.Data), MIMEType: c.MIMEType}
	case "resource_link":
		return &mcp.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType, Size: c.Size}
	case "resource":
		return &mcp.EmbeddedResource{Resource: ResourceContents(c.Resource)}
	}
	return &mcp.TextContent{Text: c.Text}
}

func annotations(a *abi.ResourceAnnotations) *mcp.Annotations {
	if a == nil {
		return nil
	}
	out := &mcp.Annotations{LastModified: a.LastModified}
	for _, r := range a.Audience {
		out.Audience = append(out.Audience, mcp.Role(r))
	}
	if a.Priority != nil {
		out.Priority = *a.Priority
	}
	return out
}

// decoded is base64 text the decoder checked, as bytes.
func decoded(s string) []byte {
	b, _ := base64.StdEncoding.DecodeString(s)
	return b
}

// ReadResourceResult is a resources/read result. go-sdk's own leaves out
// resultType, which a 2026-07-28 result must carry (set ResultType then).
type ReadResourceResult struct {
	mcp.ResultBase
	ResultType string                  `json:"resultType,omitempty"`
	Contents   []*mcp.ResourceContents `json:"contents"`
	TTLMs      int                     `json:"ttlMs"`
	CacheScope string                  `json:"cacheScope"`
}

// GetPromptResult is a prompts/get result, for the same reason.
type GetPromptResult struct {
	mcp.ResultBase
	ResultType  string               `json:"resultType,omitempty"`
	Description string               `json:"description,omitempty"`
	Messages    []*mcp.PromptMessage `json:"messages"`
}
