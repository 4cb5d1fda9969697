package mcphttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/rpcmsg"
)

// serveModern serves a 2026-07-28 request through go-sdk's stateless
// handler: as one JSON body when nothing can precede its answer (it asks
// for no progress, or calls a tool that reports none), else on an event
// stream.
func (h *Handler) serveModern(w http.ResponseWriter, r *http.Request) {
	done, ok := h.enterRequest(w, r, "") // no session: its tenant's bound applies
	if !ok {
		return
	}
	defer done()
	w = newDeadlineWriter(w, h.cfg.WriteTimeout)
	if r.Method != http.MethodPost {
		h.modern.ServeHTTP(w, r) // go-sdk answers 405
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	if !h.headersMatch(w, r, body) {
		return
	}
	r.Body = readCloser{bytes.NewReader(body)}
	r.ContentLength = int64(len(body))
	w = &errorRewriter{ResponseWriter: w, reword: h.cfg.MCP.ClientMessage}
	if !bytes.Contains(body, progressTokenMember) || !h.mayReportProgress(r) {
		h.modernJSON.ServeHTTP(w, r)
		return
	}
	h.modern.ServeHTTP(w, r)
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// progressTokenMember marks a body that may ask for progress: its answer
// needs a stream (any occurrence, escaped or not, keeps the stream).
var progressTokenMember = []byte("progressToken")

// mayReportProgress reports whether a 2026-07-28 POST that asks for
// progress could receive any before its answer: anything but a tools/call
// of a tool that cannot report it. The method and tool come from the
// Mcp-Method and Mcp-Name headers, which go-sdk holds to the body (a
// request whose headers differ is refused). A tool reloaded in between
// into one that reports progress loses those notifications, never its
// answer.
func (h *Handler) mayReportProgress(r *http.Request) bool {
	name := r.Header.Get(nameHeader)
	if r.Header.Get(methodHeader) != "tools/call" || name == "" {
		return true
	}
	return h.cfg.MCP.MayReportProgress(r.Context(), name)
}

// headersMatch checks the headers of a 2026-07-28 POST that go-sdk does
// not hold to its body, reading the body once: the Mcp-Name of tasks/get,
// tasks/update and tasks/cancel against params.taskId (go-sdk checks it
// for tools/call only), and the Mcp-Param-* headers of a tools/call
// (paramHeadersMatch). A mismatch is answered with HTTP 400 and -32020.
func (h *Handler) headersMatch(w http.ResponseWriter, r *http.Request, body []byte) bool {
	refuse := func(id json.RawMessage, code int64, why string) bool { return refuseBadRequest(w, id, code, why) }
	// Read the members as go-sdk will: exact, case-sensitive names. A
	// name that only differs in case from one that matters, or a repeated
	// one, would let this check and go-sdk read different requests.
	msg, err := members(body, "method", "params", "id")
	if err != nil {
		if errors.Is(err, rpcmsg.ErrNotObject) {
			return true // a batch, or not a request: go-sdk answers it
		}
		return refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil {
		return true
	}
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	case "tools/call":
		return h.paramHeadersMatch(w, r, msg)
	default:
		return true
	}
	params, err := members(msg["params"], "taskId")
	if err != nil && !errors.Is(err, rpcmsg.ErrNotObject) {
		return refuse(msg["id"], jsonrpc.CodeInvalidRequest, "invalid request: params: "+err.Error())
	}
	var taskID string
	_ = json.Unmarshal(params["taskId"], &taskID)
	name, ok := r.Header[nameHeader]
	switch {
	case !ok || len(name) == 0:
		return refuse(msg["id"], mcp.CodeHeaderMismatch, fmt.Sprintf("missing required %s header for method %q", nameHeader, method))
	case strings.TrimSpace(name[0]) != taskID:
		return refuse(msg["id"], mcp.CodeHeaderMismatch, fmt.Sprintf("header mismatch: %s header value %q does not match the body's params.taskId %q", nameHeader, name[0], taskID))
	}
	return true
}

// members returns the members of the JSON object raw by their exact
// names. It refuses an object that repeats a name, or that has a name
// differing only in case from one of watched (decoders that fold case
// would read that one instead).
func members(raw json.RawMessage, watched ...string) (map[string]json.RawMessage, error) {
	return rpcmsg.Members(raw, func(name string) error {
		for _, w := range watched {
			if name != w && strings.EqualFold(name, w) {
				return fmt.Errorf("member %q is not %q", name, w)
			}
		}
		return nil
	})
}

// errorRewriter passes the JSON-RPC errors go-sdk's stateless handler
// writes through the MCP layer's wording (go-sdk words the errors of
// params it cannot decode with Go types). go-sdk writes each answer in
// one Write: a JSON body, or one event ("data: {…}\n\n"); only a write
// that holds an error object is decoded. Sessions of the 2025-11-25 era
// need none of this: their errors are reworded as jsonrpc.Message values
// on the connection.
type errorRewriter struct {
	http.ResponseWriter
	reword func(string) string
}

func (w *errorRewriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var errorMember = []byte(`"error":{`)

func (w *errorRewriter) Write(b []byte) (int, error) {
	if !bytes.Contains(b, errorMember) {
		return w.ResponseWriter.Write(b)
	}
	prefix, payload, suffix := b[:0], b, []byte(nil)
	if i := bytes.Index(b, []byte("data: ")); i >= 0 && bytes.HasSuffix(b, []byte("\n\n")) {
		prefix, payload, suffix = b[:i+len("data: ")], b[i+len("data: "):len(b)-2], b[len(b)-2:]
	}
	out, ok := w.rewrite(payload)
	if !ok {
		return w.ResponseWriter.Write(b)
	}
	msg := append(append(append([]byte(nil), prefix...), out...), suffix...)
	if _, err := w.ResponseWriter.Write(msg); err != nil {
		return 0, err
	}
	return len(b), nil
}

// rewrite rewords the error message of one JSON-RPC message; ok is false
// when nothing changed.
func (w *errorRewriter) rewrite(payload []byte) ([]byte, bool) {
	var one struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if json.Unmarshal(payload, &one) != nil || one.Error == nil {
		return nil, false
	}
	clean := w.reword(one.Error.Message)
	if clean == one.Error.Message {
		return nil, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(payload, &fields) != nil {
		return nil, false
	}
	e := *one.Error
	e.Message = clean
	b, err := json.Marshal(e)
	if err != nil {
		return nil, false
	}
	fields["error"] = b
	out, err := json.Marshal(fields)
	return out, err == nil
}

// paramHeadersMatch checks the Mcp-Param-* headers of a 2026-07-28
// tools/call, msg, against its arguments (SEP-2243), as the MCP room
// words it (MCP.CheckParamHeaders): a mismatch is answered with HTTP 400
// and -32020, before go-sdk reads the request.
func (h *Handler) paramHeadersMatch(w http.ResponseWriter, r *http.Request, msg map[string]json.RawMessage) bool {
	params, err := members(msg["params"], "name", "arguments")
	if err != nil && !errors.Is(err, rpcmsg.ErrNotObject) {
		// A repeated or case-twin "arguments": the header check and
		// go-sdk could read different ones.
		return refuseBadRequest(w, msg["id"], jsonrpc.CodeInvalidRequest, "invalid request: params: "+err.Error())
	}
	var name string
	if json.Unmarshal(params["name"], &name) != nil {
		return true
	}
	if err := h.cfg.MCP.CheckParamHeaders(r.Context(), tenantOf(r), name, params["arguments"], r.Header.Values); err != nil {
		return refuseBadRequest(w, msg["id"], mcp.CodeHeaderMismatch, err.Error())
	}
	return true
}

// refuseBadRequest answers request id with HTTP 400 and a JSON-RPC error.
func refuseBadRequest(w http.ResponseWriter, id json.RawMessage, code int64, why string) bool {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": jsonrpc.Error{Code: code, Message: why}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(out)
	return false
}
