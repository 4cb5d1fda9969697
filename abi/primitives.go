package abi

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ABI 1.2: a module may serve MCP's other primitives beside its tools.
// Its manifest declares resources (static URIs), resource templates
// (RFC 6570 URI templates) and prompts; the host sends one request per
// instance for each read, prompt and completion, exactly as for a call.

// Methods of a [Request] added by ABI 1.2.
const (
	// MethodRead reads a resource: Request.URI names it (a declared
	// resource's URI, or one that matches a declared template); the
	// module writes a [ReadResult].
	MethodRead = "read"
	// MethodPrompt renders a prompt: Request.Prompt names it and
	// Request.Arguments holds its arguments (an object of strings); the
	// module writes a [PromptResult].
	MethodPrompt = "prompt"
	// MethodComplete completes an argument of a prompt or a variable of a
	// template: Request.Ref and Request.Argument; the module writes a
	// [CompleteResult].
	MethodComplete = "complete"
)

// Bounds of a manifest's primitives, so that what the host keeps per
// module stays bounded.
const (
	MaxResources           = 1024
	MaxResourceTemplates   = 64
	MaxPrompts             = 256
	MaxPromptArguments     = 32
	MaxURIBytes            = 2048 // a resource's URI, a read's URI
	MaxTemplateBytes       = 1024
	MaxTemplateExpressions = 8
	MaxTextBytes           = 4096 // a name, title, description or MIME type
	MaxCompletionValues    = 100  // MCP's bound on completion/complete values
)

// Resource declares one static resource of a module.
type Resource struct {
	URI         string               `json:"uri"`
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	MIMEType    string               `json:"mimeType,omitempty"`
	Size        *int64               `json:"size,omitempty"` // bytes, when known
	Annotations *ResourceAnnotations `json:"annotations,omitempty"`
	// Cache says a read of the resource may be reused, as a tool's
	// result may ([CacheHint]).
	Cache *CacheHint `json:"cache,omitempty"`
}

// ResourceTemplate declares a family of resources by an RFC 6570 URI
// template: a read of any URI that matches it goes to the module.
type ResourceTemplate struct {
	URITemplate string               `json:"uriTemplate"`
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	MIMEType    string               `json:"mimeType,omitempty"`
	Annotations *ResourceAnnotations `json:"annotations,omitempty"`
	// Complete names the template's variables the module completes
	// (MethodComplete with a "ref/resource" reference).
	Complete []string   `json:"complete,omitempty"`
	Cache    *CacheHint `json:"cache,omitempty"`
}

// ResourceAnnotations are MCP's hints about a resource.
type ResourceAnnotations struct {
	Audience     []string `json:"audience,omitempty"`     // "user", "assistant"
	Priority     *float64 `json:"priority,omitempty"`     // 0 to 1
	LastModified string   `json:"lastModified,omitempty"` // ISO 8601
}

// Prompt declares one prompt of a module.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// PromptArgument declares one argument of a [Prompt].
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	// Complete says the module completes this argument's values.
	Complete bool `json:"complete,omitempty"`
}

// Completion references (MCP's ref types).
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompleteRef names what a completion is for: a prompt (Name) or a
// resource template (URI, the template itself).
type CompleteRef struct {
	Type string `json:"type"` // RefPrompt or RefResource
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed and what was typed.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ResourceContents is one part of a resource as read: text, or a blob in
// standard base64.
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// ReadResult is what a module writes after a read.
type ReadResult struct {
	Contents []ResourceContents `json:"contents"`
	Error    *ProtocolError     `json:"error,omitempty"` // instead of contents: -32002 for "no such resource"
}

// PromptMessage is one message of a rendered prompt.
type PromptMessage struct {
	Role    string  `json:"role"` // "user" or "assistant"
	Content Content `json:"content"`
}

// PromptResult is what a module writes after a prompt request.
type PromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Error       *ProtocolError  `json:"error,omitempty"`
}

// CompleteResult is what a module writes after a completion request.
type CompleteResult struct {
	Values  []string       `json:"values"`
	Total   int            `json:"total,omitempty"`
	HasMore bool           `json:"hasMore,omitempty"`
	Error   *ProtocolError `json:"error,omitempty"`
}

// CodeResourceNotFound is MCP's error code for a read of a resource that
// does not exist.
const CodeResourceNotFound = -32002

// checkPrimitives validates the resources, templates and prompts of m,
// after its tools.
func checkPrimitives(m *Manifest) error {
	switch {
	case len(m.Resources) > MaxResources:
		return fmt.Errorf("declares %d resources, at most %d are allowed", len(m.Resources), MaxResources)
	case len(m.ResourceTemplates) > MaxResourceTemplates:
		return fmt.Errorf("declares %d resource templates, at most %d are allowed", len(m.ResourceTemplates), MaxResourceTemplates)
	case len(m.Prompts) > MaxPrompts:
		return fmt.Errorf("declares %d prompts, at most %d are allowed", len(m.Prompts), MaxPrompts)
	}
	uris := make(map[string]bool, len(m.Resources))
	for i, r := range m.Resources {
		if err := CheckURI(r.URI); err != nil {
			return fmt.Errorf("resource %d: uri: %v", i, err)
		}
		if uris[r.URI] {
			return fmt.Errorf("duplicate resource uri %q", truncateText(r.URI))
		}
		uris[r.URI] = true
		if err := checkDisplay(r.Name, r.Title, r.Description, r.MIMEType, r.Annotations, r.Cache); err != nil {
			return fmt.Errorf("resource %q: %v", truncateText(r.URI), err)
		}
		if r.Size != nil && *r.Size < 0 {
			return fmt.Errorf("resource %q: size is negative", truncateText(r.URI))
		}
	}
	templates := make(map[string]bool, len(m.ResourceTemplates))
	for i, t := range m.ResourceTemplates {
		vars, err := TemplateVars(t.URITemplate)
		if err != nil {
			return fmt.Errorf("resource template %d: uriTemplate: %v", i, err)
		}
		if templates[t.URITemplate] {
			return fmt.Errorf("duplicate resource template %q", truncateText(t.URITemplate))
		}
		templates[t.URITemplate] = true
		if err := checkDisplay(t.Name, t.Title, t.Description, t.MIMEType, t.Annotations, t.Cache); err != nil {
			return fmt.Errorf("resource template %q: %v", truncateText(t.URITemplate), err)
		}
		for _, v := range t.Complete {
			if !containsString(vars, v) {
				return fmt.Errorf("resource template %q: complete names %q, which is not one of its variables", truncateText(t.URITemplate), truncateText(v))
			}
		}
	}
	prompts := make(map[string]bool, len(m.Prompts))
	for i, p := range m.Prompts {
		if !ValidToolName(p.Name) {
			return fmt.Errorf("prompt %d: invalid name %q (want 1-128 of A-Z a-z 0-9 _ . -)", i, truncateText(p.Name))
		}
		if prompts[p.Name] {
			return fmt.Errorf("duplicate prompt name %q", p.Name)
		}
		prompts[p.Name] = true
		if err := checkDisplay("x", p.Title, p.Description, "", nil, nil); err != nil {
			return fmt.Errorf("prompt %q: %v", p.Name, err)
		}
		if len(p.Arguments) > MaxPromptArguments {
			return fmt.Errorf("prompt %q: %d arguments, at most %d are allowed", p.Name, len(p.Arguments), MaxPromptArguments)
		}
		args := make(map[string]bool, len(p.Arguments))
		for _, a := range p.Arguments {
			if !ValidToolName(a.Name) {
				return fmt.Errorf("prompt %q: invalid argument name %q", p.Name, truncateText(a.Name))
			}
			if args[a.Name] {
				return fmt.Errorf("prompt %q: duplicate argument %q", p.Name, a.Name)
			}
			args[a.Name] = true
			if err := checkDisplay("x", a.Title, a.Description, "", nil, nil); err != nil {
				return fmt.Errorf("prompt %q: argument %q: %v", p.Name, a.Name, err)
			}
		}
	}
	return nil
}

// checkDisplay checks the text members a resource, template or prompt
// shows a client.
func checkDisplay(name, title, desc, mimeType string, ann *ResourceAnnotations, cache *CacheHint) error {
	if name == "" {
		return errors.New("name is empty")
	}
	for _, f := range []struct{ what, s string }{{"name", name}, {"title", title}, {"description", desc}, {"mimeType", mimeType}} {
		if len(f.s) > MaxTextBytes {
			return fmt.Errorf("%s is %d bytes, more than %d", f.what, len(f.s), MaxTextBytes)
		}
	}
	if mimeType != "" {
		if _, ok := mediaType(mimeType); !ok {
			return fmt.Errorf("mimeType %q is not a media type", truncateText(mimeType))
		}
	}
	if ann != nil {
		for _, a := range ann.Audience {
			if a != "user" && a != "assistant" {
				return fmt.Errorf("annotations.audience has %q (want user or assistant)", truncateText(a))
			}
		}
		if ann.Priority != nil && !(*ann.Priority >= 0 && *ann.Priority <= 1) {
			return errors.New("annotations.priority is not between 0 and 1")
		}
		if len(ann.LastModified) > 64 {
			return errors.New("annotations.lastModified is too long")
		}
	}
	if cache != nil && cache.TTLMillis < 0 {
		return errors.New("cache.ttlMs is negative")
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// CheckURI reports what keeps s from being a resource URI: an RFC 3986
// scheme, then ':' and printable ASCII without spaces (percent-encode the
// rest), at most [MaxURIBytes] bytes.
func CheckURI(s string) error {
	if len(s) > MaxURIBytes {
		return fmt.Errorf("%d bytes, more than %d", len(s), MaxURIBytes)
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || !validScheme(scheme) {
		return fmt.Errorf("%q does not start with a scheme (such as file: or data:)", truncateText(s))
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%q has a byte that is not printable ASCII (percent-encode it)", truncateText(s))
		}
	}
	return nil
}

// validScheme reports whether s is an RFC 3986 scheme: a letter, then
// letters, digits, '+', '-' or '.'.
func validScheme(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// DecodeReadResult parses and validates what a module wrote after a read
// of uri, within lim: contents (text, or a standard base64 blob) for that
// URI or, for a template's read, URIs of the same scheme; or an error
// alone.
func DecodeReadResult(b []byte, uri string, lim ResultLimits) (*ReadResult, error) {
	var r ReadResult
	if err := decodeAnswer(b, lim, &r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		if len(r.Contents) > 0 {
			return nil, fmt.Errorf("%w: \"error\" comes alone, without contents", ErrResult)
		}
		return &r, protocolErrorCheck(r.Error)
	}
	if r.Contents == nil {
		return nil, fmt.Errorf("%w: missing \"contents\" array", ErrResult)
	}
	for i, c := range r.Contents {
		if err := checkContents(c); err != nil {
			return nil, fmt.Errorf("%w: contents[%d]: %v", ErrResult, i, err)
		}
	}
	return &r, nil
}

// checkContents validates one part of a resource as read.
func checkContents(c ResourceContents) error {
	if err := CheckURI(c.URI); err != nil {
		return fmt.Errorf("uri: %v", err)
	}
	if c.MIMEType != "" {
		if _, ok := mediaType(c.MIMEType); !ok {
			return fmt.Errorf("mimeType %q is not a media type", truncateText(c.MIMEType))
		}
	}
	if c.Blob != "" {
		if c.Text != "" {
			return errors.New(`has both "text" and "blob"`)
		}
		if _, err := base64.StdEncoding.Strict().DecodeString(c.Blob); err != nil {
			return errors.New("blob is not valid base64 (standard alphabet, padded)")
		}
	}
	return nil
}

// DecodePromptResult parses and validates what a module wrote after a
// prompt request, within lim.
func DecodePromptResult(b []byte, lim ResultLimits) (*PromptResult, error) {
	var r PromptResult
	if err := decodeAnswer(b, lim, &r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		if len(r.Messages) > 0 || r.Description != "" {
			return nil, fmt.Errorf("%w: \"error\" comes alone, without messages", ErrResult)
		}
		return &r, protocolErrorCheck(r.Error)
	}
	if r.Messages == nil {
		return nil, fmt.Errorf("%w: missing \"messages\" array", ErrResult)
	}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("%w: messages[%d]: role %q is not user or assistant", ErrResult, i, truncateText(m.Role))
		}
		if err := checkContent(m.Content); err != nil {
			return nil, fmt.Errorf("%w: messages[%d]: %v", ErrResult, i, err)
		}
	}
	return &r, nil
}

// DecodeCompleteResult parses and validates what a module wrote after a
// completion request: at most [MaxCompletionValues] values.
func DecodeCompleteResult(b []byte, lim ResultLimits) (*CompleteResult, error) {
	var r CompleteResult
	if err := decodeAnswer(b, lim, &r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		if len(r.Values) > 0 {
			return nil, fmt.Errorf("%w: \"error\" comes alone, without values", ErrResult)
		}
		return &r, protocolErrorCheck(r.Error)
	}
	if r.Values == nil {
		return nil, fmt.Errorf("%w: missing \"values\" array", ErrResult)
	}
	if len(r.Values) > MaxCompletionValues {
		return nil, fmt.Errorf("%w: %d values, at most %d are allowed", ErrResult, len(r.Values), MaxCompletionValues)
	}
	if r.Total < 0 {
		return nil, fmt.Errorf("%w: total is negative", ErrResult)
	}
	return &r, nil
}

// decodeAnswer checks b within lim (as DecodeResult does) and decodes it
// into v.
func decodeAnswer(b []byte, lim ResultLimits, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("%w: the module wrote nothing to stdout", ErrResult)
	}
	b, err := cleanResult(b, lim)
	if err != nil {
		return err
	}
	if err := strictUnmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrResult, err)
	}
	return nil
}

func protocolErrorCheck(e *ProtocolError) error {
	if e.Code == CodeResourceNotFound {
		return checkMessage(e.Message)
	}
	if err := e.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrResult, err)
	}
	return nil
}

// checkMessage checks a protocol error's message alone.
func checkMessage(msg string) error {
	e := ProtocolError{Code: -32603, Message: msg}
	if err := e.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrResult, err)
	}
	return nil
}
