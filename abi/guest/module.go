package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/wasmtask/wasmtask/abi"
)

// Module is everything a module serves (ABI 1.2): tools, and beside them
// resources, resource templates and prompts. A module of tools alone can
// use [Run] instead.
//
//	func main() {
//		guest.Module{
//			Tools:     []guest.Tool{…},
//			Resources: []guest.Resource{{URI: "docs://readme", Name: "readme", MIMEType: "text/plain", Read: readme}},
//			Prompts:   []guest.Prompt{{Name: "review", Arguments: []abi.PromptArgument{{Name: "code", Required: true}}, Get: review}},
//		}.Run()
//	}
type Module struct {
	Name      string // informational
	Tools     []Tool
	Resources []Resource
	Templates []ResourceTemplate
	Prompts   []Prompt
}

// Resource declares one resource and the function that reads it.
type Resource struct {
	URI, Name, Title, Description, MIMEType string
	Size                                    *int64
	Annotations                             *abi.ResourceAnnotations
	Cache                                   *abi.CacheHint
	Read                                    ReadFunc
}

// ResourceTemplate declares a family of resources by an RFC 6570 URI
// template. Read gets the values the host matched in req.Variables;
// Complete, when set, completes the template's variables.
type ResourceTemplate struct {
	URITemplate, Name, Title, Description, MIMEType string
	Annotations                                     *abi.ResourceAnnotations
	Cache                                           *abi.CacheHint
	Read                                            ReadFunc
	// Complete lists the variables it completes, by name, and completes
	// one of them.
	CompleteVars []string
	Complete     CompleteFunc
}

// Prompt declares one prompt and the function that renders it. Complete,
// when set, completes the arguments declared with Complete: true.
type Prompt struct {
	Name, Title, Description string
	Arguments                []abi.PromptArgument
	// Get renders the prompt; c asks the client, as a tool's Call does
	// (a 2026-07-28 prompts/get runs in input rounds as a call does).
	Get      func(c *Call, args map[string]string) (abi.PromptResult, error)
	Complete CompleteFunc
}

// ReadRequest is one read: the URI, and for a template the values of its
// variables.
type ReadRequest struct {
	URI       string
	Template  string
	Variables map[string]string
}

// ReadFunc reads a resource. An error wrapping [ErrNotFound] answers
// "resource not found" (-32002); another error, an internal error.
type ReadFunc func(req ReadRequest) ([]abi.ResourceContents, error)

// CompleteFunc completes argument (or variable) name, whose value so far
// is value; given holds the other arguments already given. At most
// abi.MaxCompletionValues values are sent; more are cut and HasMore set.
type CompleteFunc func(name, value string, given map[string]string) ([]string, error)

// ErrNotFound is wrapped by a ReadFunc's error for a resource that does
// not exist.
var ErrNotFound = errors.New("guest: resource not found")

// TextContents is the contents of a text resource.
func TextContents(uri, mimeType, text string) []abi.ResourceContents {
	return []abi.ResourceContents{{URI: uri, MIMEType: mimeType, Text: text}}
}

// Run is the whole main function of the module: it serves the one request
// on stdin, writes the answer to stdout and exits (see [Run]).
func (m Module) Run() {
	if err := serve(os.Stdin, os.Stdout, os.Stderr, wasmHost{}, m); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Serve answers the request read from r by writing the answer to w.
func (m Module) Serve(r io.Reader, w io.Writer) error {
	return serve(r, w, os.Stderr, wasmHost{}, m)
}

// Describe returns the module's manifest as JSON, checked as the host will
// check it.
func (m Module) Describe() ([]byte, error) {
	man := abi.Manifest{ABI: abi.Version, Revision: abi.Revision, Name: m.Name, Tools: make([]abi.Tool, 0, len(m.Tools))}
	for _, t := range m.Tools {
		at, err := t.decl()
		if err != nil {
			return nil, err
		}
		man.Tools = append(man.Tools, at)
	}
	for _, r := range m.Resources {
		if r.Read == nil {
			return nil, fmt.Errorf("%w: resource %q has no Read", ErrTool, r.URI)
		}
		man.Resources = append(man.Resources, abi.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
			MIMEType: r.MIMEType, Size: r.Size, Annotations: r.Annotations, Cache: r.Cache})
	}
	for _, t := range m.Templates {
		if t.Read == nil {
			return nil, fmt.Errorf("%w: resource template %q has no Read", ErrTool, t.URITemplate)
		}
		if len(t.CompleteVars) > 0 && t.Complete == nil {
			return nil, fmt.Errorf("%w: resource template %q names CompleteVars but has no Complete", ErrTool, t.URITemplate)
		}
		man.ResourceTemplates = append(man.ResourceTemplates, abi.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title,
			Description: t.Description, MIMEType: t.MIMEType, Annotations: t.Annotations, Cache: t.Cache, Complete: t.CompleteVars})
	}
	for _, p := range m.Prompts {
		if p.Get == nil {
			return nil, fmt.Errorf("%w: prompt %q has no Get", ErrTool, p.Name)
		}
		for _, a := range p.Arguments {
			if a.Complete && p.Complete == nil {
				return nil, fmt.Errorf("%w: prompt %q: argument %q is Complete but the prompt has no Complete", ErrTool, p.Name, a.Name)
			}
		}
		man.Prompts = append(man.Prompts, abi.Prompt{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: p.Arguments})
	}
	b, err := json.Marshal(man)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTool, err)
	}
	if _, err := abi.DecodeManifest(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTool, err)
	}
	return b, nil
}

// answer serves a read, prompt or complete request.
func (m Module) answer(req abi.Request, h host, logw io.Writer) (v any) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(logw, "panic serving %s: %v\n%s", req.Method, p, debug.Stack())
			v = protocolError(fmt.Sprintf("%s failed: panic: %v", req.Method, p))
		}
	}()
	switch req.Method {
	case abi.MethodRead:
		read := m.reader(req)
		if read == nil {
			return abi.ReadResult{Error: &abi.ProtocolError{Code: abi.CodeResourceNotFound, Message: "resource not found"}}
		}
		contents, err := read(ReadRequest{URI: req.URI, Template: req.Template, Variables: req.Variables})
		switch {
		case errors.Is(err, ErrNotFound):
			return abi.ReadResult{Error: &abi.ProtocolError{Code: abi.CodeResourceNotFound, Message: err.Error()}}
		case err != nil:
			return abi.ReadResult{Error: &abi.ProtocolError{Code: -32603, Message: err.Error()}}
		}
		if contents == nil {
			contents = []abi.ResourceContents{}
		}
		return abi.ReadResult{Contents: contents}
	case abi.MethodPrompt:
		var args map[string]string
		if len(req.Arguments) > 0 && json.Unmarshal(req.Arguments, &args) != nil {
			return abi.PromptResult{Error: &abi.ProtocolError{Code: -32602, Message: "prompt arguments are not an object of strings"}}
		}
		for _, p := range m.Prompts {
			if p.Name == req.Prompt {
				res, err := p.Get(&Call{host: h, logw: logw}, args)
				if err != nil {
					return abi.PromptResult{Error: &abi.ProtocolError{Code: -32603, Message: err.Error()}}
				}
				if res.Messages == nil {
					res.Messages = []abi.PromptMessage{}
				}
				return res
			}
		}
		return abi.PromptResult{Error: &abi.ProtocolError{Code: -32602, Message: fmt.Sprintf("unknown prompt %q", req.Prompt)}}
	case abi.MethodComplete:
		f := m.completer(req.Ref)
		if f == nil || req.Argument == nil {
			return abi.CompleteResult{Values: []string{}}
		}
		vals, err := f(req.Argument.Name, req.Argument.Value, req.Context)
		if err != nil {
			return abi.CompleteResult{Error: &abi.ProtocolError{Code: -32603, Message: err.Error()}}
		}
		res := abi.CompleteResult{Values: vals, Total: len(vals)}
		if len(vals) > abi.MaxCompletionValues {
			res.Values, res.HasMore = vals[:abi.MaxCompletionValues], true
		}
		if res.Values == nil {
			res.Values = []string{}
		}
		return res
	}
	return nil
}

// protocolError is an internal-error answer of any request kind (its
// shape, {"error":…}, is the same for read, prompt and complete).
func protocolError(msg string) any {
	return struct {
		Error *abi.ProtocolError `json:"error"`
	}{&abi.ProtocolError{Code: -32603, Message: msg}}
}

// reader finds what reads req's URI: the declared resource, or the
// template the host matched.
func (m Module) reader(req abi.Request) ReadFunc {
	if req.Template != "" {
		for _, t := range m.Templates {
			if t.URITemplate == req.Template {
				return t.Read
			}
		}
		return nil
	}
	for _, r := range m.Resources {
		if r.URI == req.URI {
			return r.Read
		}
	}
	return nil
}

// completer finds what completes for ref.
func (m Module) completer(ref *abi.CompleteRef) CompleteFunc {
	if ref == nil {
		return nil
	}
	switch ref.Type {
	case abi.RefPrompt:
		for _, p := range m.Prompts {
			if p.Name == ref.Name {
				return p.Complete
			}
		}
	case abi.RefResource:
		for _, t := range m.Templates {
			if t.URITemplate == ref.URI {
				return t.Complete
			}
		}
	}
	return nil
}
