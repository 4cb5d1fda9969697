package abi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Version is the ABI version this package describes. A module declares the
// version it was built for in its manifest ([Manifest.ABI]); a host refuses a
// module whose version differs.
const Version = 1

// ImportModule is the Wasm import module name of the optional host functions
// of ABI v1. A module that imports from "wasmtask_v<N>" for another N was
// built for ABI v<N>.
const ImportModule = "wasmtask_v1"

// ImportModulePrefix is the prefix shared by the import modules of every ABI
// version; the host uses it to recognise a module built for another version.
const ImportModulePrefix = "wasmtask_v"

// Names of the optional host functions in [ImportModule]. Signatures (Wasm
// types) are documented in ABI.md.
const (
	FuncProgress = "progress" // (progress f64, total f64, msg_ptr i32, msg_len i32)
	FuncStatus   = "status"   // (msg_ptr i32, msg_len i32)
	FuncLog      = "log"      // (level i32, msg_ptr i32, msg_len i32)
	FuncElicit   = "elicit"   // (req_ptr i32, req_len i32) -> i32
	FuncReply    = "reply"    // (buf_ptr i32, buf_cap i32) -> i32
	// FuncElicitAll asks several questions at once (ABI 1.1).
	FuncElicitAll = "elicit_all" // (req_ptr i32, req_len i32) -> i32
	// FuncBeginTask makes a call with taskStart begin_task a task (ABI 1.1).
	FuncBeginTask = "begin_task" // () -> i32
	// FuncSample asks the client's model for a message
	// (sampling/createMessage; ABI 1.2): the request is MCP's
	// CreateMessageRequest params, the reply its CreateMessageResult.
	FuncSample = "sample" // (req_ptr i32, req_len i32) -> i32
	// FuncRoots asks the client for its roots (roots/list; ABI 1.2): the
	// reply is MCP's ListRootsResult.
	FuncRoots = "roots" // () -> i32
)

// MaxElicitAll bounds the questions one elicit_all call may ask.
const MaxElicitAll = 4

// ExportStart is the one export every ABI v1 module must have: it is a WASI
// preview1 command and its entry point reads one [Request] from stdin.
const ExportStart = "_start"

// ExportInitialize is the optional export of a pre-initialisable module
// (ABI 1.2, ABI.md section 13): the host runs it once, at load, and every
// instance starts from the state it left; then _start serves the request.
const ExportInitialize = "_initialize"

// Elicit error codes: negative results of the elicit host function.
const (
	ElicitUnsupported int32 = -1 // the requestor cannot answer input requests
	ElicitBadRequest  int32 = -2 // the request was not a valid ElicitRequest
	ElicitLimit       int32 = -3 // a limit on questions (per call, session or task) refused it (ABI 1.1)
)

// ErrElicitLimit is wrapped by an [Events.Elicit] error when a limit on
// questions refused the request: the guest gets [ElicitLimit].
var ErrElicitLimit = errors.New("abi: the limit on input requests was reached")

// Log levels accepted by the log host function.
const (
	LogDebug   int32 = 0
	LogInfo    int32 = 1
	LogWarning int32 = 2
	LogError   int32 = 3
)

// Methods of a [Request].
const (
	MethodDescribe = "describe"
	MethodCall     = "call"
)

// Task support values of a tool, as in MCP's ToolExecution.taskSupport.
const (
	TaskForbidden = "forbidden"
	TaskOptional  = "optional"
	TaskRequired  = "required"
)

// When the task of a task-capable tool starts (ABI 1.1, [Tool.TaskStart]).
const (
	// TaskStartCall: the call is a task from its start (the default).
	TaskStartCall = "call"
	// TaskStartBegin: under MCP 2026-07-28 the call first runs as a plain
	// request, whose questions the client answers by retrying the call
	// (input_required results), and becomes a task when the tool calls
	// the begin_task host function.
	TaskStartBegin = "begin_task"
)

// Request is the single JSON document a module reads from stdin, followed by
// end of file.
type Request struct {
	ABI       int             `json:"abi"`
	Method    string          `json:"method"`              // MethodDescribe, MethodCall, MethodRead, MethodPrompt or MethodComplete
	Tool      string          `json:"tool,omitempty"`      // MethodCall only
	Arguments json.RawMessage `json:"arguments,omitempty"` // MethodCall: a JSON object; MethodPrompt: an object of strings
	URI       string          `json:"uri,omitempty"`       // MethodRead (ABI 1.2)
	// Template and Variables (MethodRead of a URI that matched a declared
	// resource template): the template, and the values of its variables
	// the URI holds, percent-decoded (a variable it leaves out is absent).
	Template  string            `json:"template,omitempty"`
	Variables map[string]string `json:"variables,omitempty"`
	Prompt    string            `json:"prompt,omitempty"` // MethodPrompt (ABI 1.2)
	// MethodComplete (ABI 1.2): what is completed, the argument and its
	// value so far, and the values of the other arguments already given.
	Ref      *CompleteRef      `json:"ref,omitempty"`
	Argument *CompleteArgument `json:"argument,omitempty"`
	Context  map[string]string `json:"context,omitempty"`
}

// Manifest is what a module writes to stdout when asked to describe itself.
type Manifest struct {
	ABI int `json:"abi"`
	// Revision is the minor version of the ABI the module was written for
	// (1 for ABI 1.1; absent or 0 for 1.0). A module of revision 1 gets
	// 1.1's answers from existing functions (elicit's -3); one that
	// imports a 1.1 function is of revision 1 whatever it says.
	Revision int    `json:"revision,omitempty"`
	Name     string `json:"name,omitempty"` // module name, informational
	Tools    []Tool `json:"tools"`
	// ABI 1.2: the module's other MCP primitives (primitives.go). A
	// module that declares any of them may declare no tools.
	Resources         []Resource         `json:"resources,omitempty"`
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates,omitempty"`
	Prompts           []Prompt           `json:"prompts,omitempty"`
}

// Revision is the ABI revision this package describes: ABI 1.2.
const Revision = 2

// Serves reports whether m declares anything besides tools.
func (m *Manifest) Serves() bool {
	return len(m.Resources) > 0 || len(m.ResourceTemplates) > 0 || len(m.Prompts) > 0
}

// Tool declares one tool of a module.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`  // JSON Schema object; {"type":"object"} when absent
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"` // JSON Schema object, optional
	Annotations  *Annotations    `json:"annotations,omitempty"`
	TaskSupport  string          `json:"taskSupport,omitempty"` // forbidden (default), optional, required
	TaskStart    string          `json:"taskStart,omitempty"`   // call (default) or begin_task (ABI 1.1)
	Cache        *CacheHint      `json:"cache,omitempty"`
	Grants       *Grants         `json:"grants,omitempty"` // sandbox grants the tool asks for
	// Requires names the client capabilities a call needs (ABI 1.2):
	// elicitation, sampling, roots. A call whose client did not declare
	// them is refused before anything runs.
	Requires []string `json:"requires,omitempty"`
	// HeaderParams are the inputSchema's x-mcp-header parameters
	// (SEP-2243), read by DecodeManifest.
	HeaderParams []HeaderParam `json:"-"`
}

// ClientCapabilities a tool may require ([Tool.Requires]).
var ClientCapabilities = []string{"elicitation", "sampling", "roots"}

// Annotations are MCP tool annotations (hints, never trusted for security).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// CacheHint says whether a successful result may be reused for identical
// arguments, and for how long.
type CacheHint struct {
	Cacheable bool  `json:"cacheable"`
	TTLMillis int64 `json:"ttlMs,omitempty"`
}

// Grants are sandbox grants a tool asks for. Asking grants nothing: only the
// operator's policy grants.
type Grants struct {
	Env       []string `json:"env,omitempty"`       // names of environment variables
	Dirs      []Mount  `json:"dirs,omitempty"`      // directories to mount
	MemoryMiB int      `json:"memoryMiB,omitempty"` // memory the tool expects to need
	TimeoutMs int64    `json:"timeoutMs,omitempty"` // wall-clock time the tool expects to need
	OutputKiB int      `json:"outputKiB,omitempty"` // result size the tool expects to produce
}

// Mount is a directory a tool asks to see, at GuestPath.
type Mount struct {
	GuestPath string `json:"guestPath"`
	Write     bool   `json:"write,omitempty"`
}

// Result is what a module writes to stdout after a call: the same shape as an
// MCP CallToolResult.
type Result struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// Error, when set, answers the call with this protocol (JSON-RPC)
	// error instead of a result (ABI 1.1): a request the tool cannot
	// serve at all, as opposed to a tool error (IsError). Content is
	// then absent.
	Error *ProtocolError `json:"error,omitempty"`
}

// ProtocolError is the JSON-RPC error a [Result] asks the host to answer
// with. Code is -32602 (invalid params), -32603 (internal error) or an
// application code outside the range JSON-RPC reserves (-32768 to -32000);
// Message is one line of at most [MaxProtocolErrorBytes] bytes.
type ProtocolError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// MaxProtocolErrorBytes bounds a [ProtocolError]'s message.
const MaxProtocolErrorBytes = 1024

// Check reports what is wrong with e, or nil.
func (e *ProtocolError) Check() error {
	switch {
	case e.Code == -32602 || e.Code == -32603:
	case e.Code < math.MinInt32 || e.Code > math.MaxInt32:
		return fmt.Errorf("error code %d is not a 32-bit integer", e.Code)
	case e.Code >= -32768 && e.Code <= -32000:
		return fmt.Errorf("error code %d is reserved by JSON-RPC and MCP (use -32602, -32603, or a code outside -32768..-32000)", e.Code)
	}
	switch {
	case e.Message == "":
		return errors.New("error message is empty")
	case len(e.Message) > MaxProtocolErrorBytes:
		return fmt.Errorf("error message is %d bytes, more than %d", len(e.Message), MaxProtocolErrorBytes)
	case !utf8.ValidString(e.Message):
		return errors.New("error message is not valid UTF-8")
	case strings.ContainsFunc(e.Message, unicode.IsControl):
		return errors.New("error message has control characters")
	}
	return nil
}

// Content is one content block of a [Result] or a prompt message.
type Content struct {
	Type     string `json:"type"`               // "text", "image", "audio"; ABI 1.2: "resource_link", "resource"
	Text     string `json:"text,omitempty"`     // type text
	Data     string `json:"data,omitempty"`     // type image/audio: base64
	MIMEType string `json:"mimeType,omitempty"` // type image/audio; resource_link, optional
	// Type resource_link (ABI 1.2): a resource the client may read.
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// Type resource (ABI 1.2): a resource's contents, embedded.
	Resource *ResourceContents `json:"resource,omitempty"`
}

// ElicitRequest is the JSON a module passes to the elicit host function.
type ElicitRequest struct {
	// Key (ABI 1.2, optional) names the question in a 2026-07-28 input
	// round's inputRequests (ValidInputKey); without it the host derives
	// one from the question. Elsewhere it is ignored.
	Key             string          `json:"key,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"` // flat JSON Schema object
}

// Question is one item of an elicit_all request: an elicitation (Method
// empty or MethodElicit, with Message and RequestedSchema) or, from ABI
// 1.2, a sampling request (MethodSample, Params its
// sampling/createMessage params) or a roots request (MethodRoots). Key is
// as [ElicitRequest.Key]'s.
type Question struct {
	Key             string          `json:"key,omitempty"`
	Method          string          `json:"method,omitempty"`
	Params          json.RawMessage `json:"params,omitempty"`
	Message         string          `json:"message,omitempty"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
}

// The methods of a [Question]: the client requests they stand for.
const (
	MethodElicit = "elicitation/create"
	MethodSample = "sampling/createMessage"
	MethodRoots  = "roots/list"
)

// Elicitation is q as an elicit request, for a question of MethodElicit.
func (q Question) Elicitation() ElicitRequest {
	return ElicitRequest{Key: q.Key, Message: q.Message, RequestedSchema: q.RequestedSchema}
}

// ValidInputKey reports whether key may name a question: 1 to 64 of
// A-Z a-z 0-9 _ . - (a tool name's characters), and not of the form of
// the keys the host derives (q-, sample- or roots-, 12 hex digits, -, a
// number), which name questions without a key of their own.
func ValidInputKey(key string) bool {
	return len(key) <= 64 && ValidToolName(key) && !derivedKey(key)
}

func derivedKey(key string) bool {
	for _, prefix := range []string{"q-", "sample-", "roots-"} {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok || len(rest) < 14 || rest[12] != '-' {
			continue
		}
		digits := func(s, set string) bool {
			for i := 0; i < len(s); i++ {
				if !strings.ContainsRune(set, rune(s[i])) {
					return false
				}
			}
			return len(s) > 0
		}
		if digits(rest[:12], "0123456789abcdef") && digits(rest[13:], "0123456789") {
			return true
		}
	}
	return false
}

// ElicitReply is the JSON the host hands back through the reply host function.
type ElicitReply struct {
	Action  string          `json:"action"` // accept, decline or cancel
	Content json.RawMessage `json:"content,omitempty"`
}

// MaxTools bounds the tools one module may declare, so that everything the
// host keeps per tool is bounded by the number of modules.
const MaxTools = 256

// Errors returned by the decoders; wrapped with details.
var (
	ErrVersion  = errors.New("ABI version mismatch")
	ErrManifest = errors.New("invalid manifest")
	ErrResult   = errors.New("invalid result")
)

// ValidToolName reports whether name is a valid tool name: 1 to 128 of
// A-Z a-z 0-9 _ . - (the characters MCP recommends). A hand-written check,
// not a regexp, so a Go guest does not link the regexp package.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// DecodeManifest parses and validates a manifest written by a module. It
// checks the version, that every tool has a valid, unique name, a valid task
// support value, and input/output schemas that are JSON objects whose "type"
// is "object" (MCP requires it). It does not compile the schemas.
func DecodeManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := strictUnmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManifest, err)
	}
	var declared struct {
		ABI *int `json:"abi"`
	}
	if m.ABI == 0 && json.Unmarshal(b, &declared) == nil && declared.ABI == nil {
		return nil, fmt.Errorf("%w: the manifest has no \"abi\" member: add \"abi\": %d to the object describe writes", ErrVersion, Version)
	}
	if m.ABI != Version {
		return nil, fmt.Errorf("%w: module declares ABI v%d, this host speaks v%d: rebuild the module against wasmtask abi v%d", ErrVersion, m.ABI, Version, Version)
	}
	if m.Revision < 0 {
		return nil, fmt.Errorf("%w: revision %d is negative", ErrManifest, m.Revision)
	}
	if len(m.Tools) == 0 && !m.Serves() {
		return nil, fmt.Errorf("%w: declares no tools (nor resources or prompts)", ErrManifest)
	}
	if len(m.Tools) > MaxTools {
		return nil, fmt.Errorf("%w: declares %d tools, at most %d are allowed", ErrManifest, len(m.Tools), MaxTools)
	}
	seen := make(map[string]bool, len(m.Tools))
	for i := range m.Tools {
		t := &m.Tools[i]
		if !ValidToolName(t.Name) {
			return nil, fmt.Errorf("%w: tool %d: invalid name %q (want 1-128 of A-Z a-z 0-9 _ . -)", ErrManifest, i, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: duplicate tool name %q", ErrManifest, t.Name)
		}
		seen[t.Name] = true
		switch t.TaskSupport {
		case "":
			t.TaskSupport = TaskForbidden
		case TaskForbidden, TaskOptional, TaskRequired:
		default:
			return nil, fmt.Errorf("%w: tool %q: taskSupport %q is not forbidden, optional or required", ErrManifest, t.Name, t.TaskSupport)
		}
		switch t.TaskStart {
		case "":
			t.TaskStart = TaskStartCall
		case TaskStartCall:
		case TaskStartBegin:
			if t.TaskSupport == TaskForbidden {
				return nil, fmt.Errorf("%w: tool %q: taskStart %q needs taskSupport optional or required", ErrManifest, t.Name, t.TaskStart)
			}
		default:
			return nil, fmt.Errorf("%w: tool %q: taskStart %q is not call or begin_task", ErrManifest, t.Name, t.TaskStart)
		}
		for j, c := range t.Requires {
			if !slices.Contains(ClientCapabilities, c) || slices.Contains(t.Requires[:j], c) {
				return nil, fmt.Errorf("%w: tool %q: requires %q: want each of %s at most once", ErrManifest, t.Name, c, strings.Join(ClientCapabilities, ", "))
			}
		}
		if len(t.InputSchema) == 0 {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		if err := checkObjectSchema(t.InputSchema); err != nil {
			return nil, fmt.Errorf("%w: tool %q: inputSchema: %v", ErrManifest, t.Name, err)
		}
		var err error
		if t.HeaderParams, err = HeaderParams(t.InputSchema); err != nil {
			return nil, fmt.Errorf("%w: tool %q: inputSchema: %v", ErrManifest, t.Name, err)
		}
		if len(t.OutputSchema) > 0 {
			if err := checkObjectSchema(t.OutputSchema); err != nil {
				return nil, fmt.Errorf("%w: tool %q: outputSchema: %v", ErrManifest, t.Name, err)
			}
		}
		if t.Cache != nil && t.Cache.TTLMillis < 0 {
			return nil, fmt.Errorf("%w: tool %q: cache.ttlMs is negative", ErrManifest, t.Name)
		}
		if t.Grants != nil {
			for _, d := range t.Grants.Dirs {
				if !strings.HasPrefix(d.GuestPath, "/") {
					return nil, fmt.Errorf("%w: tool %q: grants.dirs guestPath %q is not absolute", ErrManifest, t.Name, d.GuestPath)
				}
			}
		}
	}
	if err := checkPrimitives(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManifest, err)
	}
	return &m, nil
}

func checkObjectSchema(raw json.RawMessage) error {
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if s == nil {
		return errors.New("is null")
	}
	if t, _ := s["type"].(string); t != "object" {
		return fmt.Errorf(`"type" is %v, want "object"`, s["type"])
	}
	// MCP clients check these two members of a tool's schemas when they
	// list tools (the TypeScript SDK refuses the whole list otherwise).
	if p, ok := s["properties"]; ok {
		props, ok := p.(map[string]any)
		if !ok {
			return errors.New(`"properties" is not an object`)
		}
		for name, v := range props {
			if _, ok := v.(map[string]any); !ok {
				return fmt.Errorf(`"properties" member %q is not an object`, truncateText(name))
			}
		}
	}
	if r, ok := s["required"]; ok {
		names, ok := r.([]any)
		if !ok {
			return errors.New(`"required" is not an array`)
		}
		for _, n := range names {
			if _, ok := n.(string); !ok {
				return errors.New(`"required" has a member that is not a string`)
			}
		}
	}
	return nil
}

// DecodeResult parses and validates the result a module wrote to stdout,
// within lim (a zero field: its default). One pass over b checks its JSON,
// its counts and its numbers before anything is decoded: nesting deeper
// than lim.MaxDepth and a number whose magnitude a float64 cannot hold are
// invalid results (errors wrapping [ErrResult]); more content blocks or
// values than lim allows are too (wrapping [ErrResultTooLarge] as well).
// Strings that are not valid Unicode (a lone UTF-16 surrogate escape, bytes
// that are not UTF-8), in values and member names alike, come out with
// U+FFFD in their place, in structuredContent as in text.
func DecodeResult(b []byte, lim ResultLimits) (*Result, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: the module wrote nothing to stdout", ErrResult)
	}
	b, err := cleanResult(b, lim) // its errors wrap ErrResult
	if err != nil {
		return nil, err
	}
	var r Result
	if err := strictUnmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrResult, err)
	}
	if r.Error != nil {
		if len(r.Content) > 0 || r.StructuredContent != nil || r.IsError {
			return nil, fmt.Errorf("%w: \"error\" comes alone: no content blocks, structuredContent or isError", ErrResult)
		}
		if err := r.Error.Check(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrResult, err)
		}
		return &r, nil
	}
	if r.Content == nil {
		return nil, fmt.Errorf("%w: missing \"content\" array", ErrResult)
	}
	for i, c := range r.Content {
		if err := checkContent(c); err != nil {
			return nil, fmt.Errorf("%w: content[%d]: %v", ErrResult, i, err)
		}
	}
	// The document parsed, so structuredContent is valid JSON: an object
	// is one that starts with '{' (no second parse).
	if sc := bytes.TrimSpace(r.StructuredContent); len(sc) > 0 && sc[0] != '{' {
		return nil, fmt.Errorf("%w: structuredContent is not a JSON object", ErrResult)
	}
	return &r, nil
}

// strictUnmarshal decodes exactly one JSON value and refuses trailing data.
// Its errors describe the JSON, never the Go types it decodes into: they
// reach plugin authors and clients.
func strictUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 0 && se.Offset <= int64(len(b)) && json.Valid(b[:se.Offset-1]) {
			// A whole value, then more: json.Unmarshal reports it at
			// the first byte after the value.
			return errors.New("trailing data after the JSON value")
		}
		return jsonError(err)
	}
	return nil
}

// jsonError words an encoding/json error in JSON terms: which member has
// which kind of value where another was expected.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		where := "the document"
		if te.Field != "" {
			where = fmt.Sprintf("%q", te.Field)
		}
		return fmt.Errorf("%s is %s, want %s", where, article(te.Value), jsonKind(te.Type))
	case errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end"):
		return errors.New("the JSON document is incomplete")
	case errors.As(err, &se):
		return fmt.Errorf("not valid JSON at byte %d", se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the JSON document is incomplete")
	}
	return err
}

func article(kind string) string {
	switch kind {
	case "array", "object":
		return "an " + kind
	case "":
		return "a value"
	}
	return "a " + kind
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "an object"
}
