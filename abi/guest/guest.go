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

// Errors of the SDK; returned wrapped with details.
var (
	// ErrRequest: stdin did not hold a valid ABI v1 request.
	ErrRequest = errors.New("guest: invalid request")
	// ErrTool: a Tool declaration is invalid (no handler, bad schema, …).
	ErrTool = errors.New("guest: invalid tool declaration")
	// ErrArguments: the call's arguments do not decode into the handler's type.
	ErrArguments = errors.New("guest: invalid arguments")
	// ErrStructured: structured content is not a JSON object.
	ErrStructured = errors.New("guest: structured content must be a JSON object")
)

// Tool declares one tool of a module and the function that runs it. Only
// Name and Handler are required.
type Tool struct {
	Name        string // 1-128 of A-Z a-z 0-9 _ . -, unique in the module
	Title       string // human-readable name
	Description string // what the tool does, for the model

	// InputSchema is the JSON Schema of the arguments, as JSON text; its
	// "type" must be "object". Empty means {"type":"object"}.
	InputSchema string
	// OutputSchema is the JSON Schema of the structured content, as JSON
	// text; empty means none.
	OutputSchema string

	Annotations *abi.Annotations // MCP hints; nil for none
	TaskSupport string           // abi.TaskForbidden (when empty), abi.TaskOptional or abi.TaskRequired
	// TaskStart is abi.TaskStartCall (when empty) or abi.TaskStartBegin:
	// the call becomes a task only when the handler calls
	// [Call.BeginTask], after asking its questions (ABI 1.1).
	TaskStart string
	Cache     *abi.CacheHint // nil: results are not reused
	Grants    *abi.Grants    // sandbox grants the tool asks for; nil for none
	// Requires names the client capabilities every call needs
	// (elicitation, sampling, roots; ABI 1.2): the host refuses a call of
	// a client that did not declare them before the handler runs.
	Requires []string

	Handler Handler
}

// Handler runs one call of a tool. args is the JSON object of arguments
// ({} when the client sent none). A non-nil error becomes a tool error
// (isError: true) whose text is err.Error(); the Result is then ignored.
// Most tools build a Handler with [Handle].
type Handler func(c *Call, args json.RawMessage) (Result, error)

// Handle makes a Handler from a function taking typed arguments: the
// arguments are decoded into an In with encoding/json (unknown members are
// ignored, missing ones keep their zero value). When they do not decode,
// the call is a tool error wrapping [ErrArguments], and f is not called.
// In a pre-initialised build (see the package documentation), Handle
// called while the packages initialise prepares encoding/json for In: it
// encodes a zero In and decodes the result, so a MarshalJSON or
// UnmarshalJSON method of In's types runs then, on zero values.
func Handle[In any](f func(c *Call, in In) (Result, error)) Handler {
	if warming() {
		warmType[In]()
	}
	return func(c *Call, args json.RawMessage) (Result, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return Result{}, fmt.Errorf("%w for tool %q: %v", ErrArguments, c.Tool(), err)
		}
		return f(c, in)
	}
}

// Result is what a call returns: an MCP CallToolResult. Build it with
// [Text], [Textf] or [Structured], or fill it in directly.
type Result = abi.Result

// Text returns a result with one text block.
func Text(text string) Result {
	return Result{Content: []abi.Content{{Type: "text", Text: text}}}
}

// ProtocolError returns a result that makes the host answer the call with
// a JSON-RPC error (ABI 1.1) instead of a result: for a request the tool
// cannot serve at all. A tool that ran and failed returns a tool error
// (an error from the handler, or IsError) instead. code is -32602, -32603
// or an application code outside -32768..-32000.
func ProtocolError(code int64, message string) Result {
	return Result{Error: &abi.ProtocolError{Code: code, Message: message}}
}

// Textf returns a result with one text block formatted as by fmt.Sprintf.
func Textf(format string, args ...any) Result {
	return Text(fmt.Sprintf(format, args...))
}

// Structured returns a result whose structuredContent is v encoded as JSON,
// with the same JSON as its one text block (for clients that read only
// text). v must encode to a JSON object (a struct or a map); otherwise the
// error wraps [ErrStructured]. Replace Content to show another text.
func Structured(v any) (Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrStructured, err)
	}
	if len(b) == 0 || b[0] != '{' {
		return Result{}, fmt.Errorf("%w: got %.20s", ErrStructured, b)
	}
	return Result{Content: []abi.Content{{Type: "text", Text: string(b)}}, StructuredContent: b}, nil
}

// Run is the whole main function of a tool module: it serves the one request
// on stdin, writes the answer to stdout and exits the process, with code 0
// when an answer was written and 1 (with the reason on stderr) otherwise.
// Run does not return.
func Run(tools ...Tool) { Module{Tools: tools}.Run() }

// Serve answers the request read from r (to end of file) by writing the
// manifest or the result to w; handler logs without a host go to stderr. Run
// is Serve on stdin and stdout; Serve lets a tool's own tests drive it.
func Serve(r io.Reader, w io.Writer, tools ...Tool) error {
	return serve(r, w, os.Stderr, wasmHost{}, Module{Tools: tools})
}

// Describe returns the manifest of tools as JSON, checked as the host will
// check it ([abi.DecodeManifest]). A tool's tests can call it to catch
// declaration errors before the module reaches a host.
func Describe(tools ...Tool) ([]byte, error) { return Module{Tools: tools}.Describe() }

// decl is t's declaration.
func (t Tool) decl() (abi.Tool, error) {
	if t.Handler == nil {
		return abi.Tool{}, fmt.Errorf("%w: tool %q has no Handler", ErrTool, t.Name)
	}
	at := abi.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		Annotations: t.Annotations,
		TaskSupport: t.TaskSupport,
		TaskStart:   t.TaskStart,
		Cache:       t.Cache,
		Grants:      t.Grants,
		Requires:    t.Requires,
	}
	for _, s := range []struct {
		name string
		text string
		dst  *json.RawMessage
	}{{"InputSchema", t.InputSchema, &at.InputSchema}, {"OutputSchema", t.OutputSchema, &at.OutputSchema}} {
		if s.text == "" {
			continue
		}
		if !json.Valid([]byte(s.text)) {
			return abi.Tool{}, fmt.Errorf("%w: tool %q: %s is not valid JSON", ErrTool, t.Name, s.name)
		}
		*s.dst = json.RawMessage(s.text)
	}
	return at, nil
}

// serve is Serve with its host and log writer supplied.
func serve(r io.Reader, w io.Writer, logw io.Writer, h host, m Module) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%w: reading stdin: %v", ErrRequest, err)
	}
	var req abi.Request
	if err := json.Unmarshal(b, &req); err != nil {
		return fmt.Errorf("%w: %v", ErrRequest, err)
	}
	if req.ABI != abi.Version {
		return fmt.Errorf("%w: the host sent an ABI v%d request, this tool was built for ABI v%d: rebuild it with a guest SDK for v%d",
			abi.ErrVersion, req.ABI, abi.Version, req.ABI)
	}
	var out []byte
	switch req.Method {
	case abi.MethodDescribe:
		if out, err = m.Describe(); err != nil {
			return err
		}
	case abi.MethodCall:
		res := call(&Call{tool: req.Tool, host: h, logw: logw}, m.Tools, req.Arguments)
		if out, err = json.Marshal(res); err != nil {
			out, _ = json.Marshal(errorResult(fmt.Sprintf("tool %q returned a result that does not encode: %v", req.Tool, err)))
		}
	case abi.MethodRead, abi.MethodPrompt, abi.MethodComplete:
		if out, err = json.Marshal(m.answer(req, h, logw)); err != nil {
			out, _ = json.Marshal(protocolError(fmt.Sprintf("the answer does not encode: %v", err)))
		}
	default:
		return fmt.Errorf("%w: unknown method %q", ErrRequest, req.Method)
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("guest: writing the answer: %w", err)
	}
	return nil
}

// call runs the named tool and turns errors and panics into tool errors.
func call(c *Call, tools []Tool, args json.RawMessage) (res Result) {
	var t *Tool
	for i := range tools {
		if tools[i].Name == c.tool {
			t = &tools[i]
			break
		}
	}
	if t == nil || t.Handler == nil {
		return errorResult(fmt.Sprintf("unknown tool %q", c.tool))
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(c.logw, "panic in tool %q: %v\n%s", c.tool, p, debug.Stack())
			res = errorResult(fmt.Sprintf("tool %q failed: panic: %v", c.tool, p))
		}
	}()
	res, err := t.Handler(c, args)
	if err != nil {
		return errorResult(err.Error())
	}
	if res.Content == nil {
		res.Content = []abi.Content{}
	}
	return res
}

func errorResult(text string) Result {
	r := Text(text)
	r.IsError = true
	return r
}
