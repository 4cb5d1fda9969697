package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPPath is where HTTPHandler serves MCP.
const HTTPPath = "/mcp"

const sessionIDHeader = "Mcp-Session-Id"

// HTTPHandler returns the Streamable HTTP handler, serving MCP at /mcp (other
// paths get 404). Sessions are stateful (Mcp-Session-Id). It wraps go-sdk's
// handler to lift params.task out of tools/call POST bodies and to release a
// session's blocked requests when the client deletes the session.
// notifications/tasks/status is not sent over HTTP (go-sdk offers no way to
// write a custom notification); clients poll with tasks/get.
func (s *Server) HTTPHandler() http.Handler {
	s.httpOnce.Do(func() {
		timeout := s.cfg.SessionTimeout
		if timeout < 0 {
			timeout = 0
		}
		opts := mcp.StreamableHTTPOptions{
			Logger:         s.log,
			SessionTimeout: timeout,
			// serveHTTP enforces MaxMessageBytes on what the client sent;
			// lifting params.task into _meta then adds a few bytes per
			// message, which must not turn an accepted body into a 413.
			MaxRequestBodyBytes: 2*int64(s.cfg.MaxMessageBytes) + 4096,
			// With AllowedHosts the front checks the Host header itself,
			// and a proxy on a loopback address may send a public name.
			DisableLocalhostProtection: len(s.cfg.AllowedHosts) > 0,
		}
		s.http = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &opts)
		// 2026-07-28 requests are stateless: each is served on its own,
		// by the same server, and its handler ends when its POST does.
		opts.Stateless = true
		opts.PropagateRequestCancellation = true
		s.modernHTTP = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &opts)
		// A 2026-07-28 request sends nothing before its answer unless it
		// asks for progress (no logs, no server requests in that era):
		// such a request is answered as plain JSON rather than an SSE
		// stream of one event.
		opts.JSONResponse = true
		s.modernJSON = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &opts)
	})
	mux := http.NewServeMux()
	var endpoint http.Handler = http.HandlerFunc(s.serveHTTP)
	if s.cfg.Auth != nil {
		endpoint = s.authenticate(endpoint)
	}
	checked := endpoint
	endpoint = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			http.Error(w, "the server is closed", http.StatusServiceUnavailable)
			return
		}
		if s.screen(w, r) {
			checked.ServeHTTP(w, r)
		}
	})
	if s.cfg.Auth != nil {
		mux.Handle(ResourceMetadataPath, s.resourceMetadata())
		mux.Handle(rootMetadataPath, s.resourceMetadata()) // for clients that look at the root first
	}
	mux.Handle(HTTPPath, endpoint)
	return mux
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.admitRate(w, r) {
		return
	}
	id := r.Header.Get(sessionIDHeader)
	// A POST that speaks 2026-07-28 (its header says so; go-sdk holds the
	// body's _meta to the same version) opens no session: the stateless
	// handler serves it. Everything else is a 2025-11-25 session's.
	modern := r.Method == http.MethodPost && r.Header.Get(protocolVersionHeader) >= modernVersion
	if id == "" && r.Method == http.MethodPost && !modern {
		release, ok := s.admitSession(w, r)
		if !ok {
			return
		}
		// The place is given back when the answer starts (by then the
		// session it opened is counted: a client's next request must not
		// find it counted twice) or when the request ends without one.
		rw := &releaseOnAnswer{ResponseWriter: w, release: sync.OnceFunc(release)}
		defer rw.release()
		w = rw
	}
	if modern {
		id = "" // no session to count it against: its tenant's bound applies
	}
	done, ok := s.enterRequest(w, r, id)
	if !ok {
		return
	}
	defer done()
	// The server's ReadTimeout bounds reading the body; net/http clears
	// the read deadline once the body is read, so it never ends the
	// answer's stream (TestHTTPTimeouts holds it to that).
	w = newDeadlineWriter(w, s.cfg.WriteTimeout)
	var body []byte
	switch r.Method {
	case http.MethodPost:
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxMessageBytes)))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		// The body is rewritten below with encoding/json, which (unlike
		// go-sdk's decoder) refuses trailing data: a body it cannot read
		// whole would reach go-sdk unrewritten, detached from this POST.
		if !json.Valid(body) {
			http.Error(w, "request body is not one JSON value", http.StatusBadRequest)
			return
		}
		if modern && !taskNameMatches(w, r, body) {
			return
		}
		if !modern && id != "" {
			if s.answerDirect(w, r, id, body) {
				return
			}
			s.cancelDirect(id, r, body)
		}
		token := rand.Text()
		s.bindPost(token, r.Context())
		defer s.unbindPost(token)
		body = liftBody(body, token)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		w = &errorRewriter{ResponseWriter: w}
	case http.MethodDelete:
		// go-sdk closes the session while holding the DELETE, and closing
		// waits for in-flight requests: release our blocked ones first —
		// only for the user the session belongs to, and only when go-sdk
		// will accept the DELETE, so that a refused one changes nothing.
		if id != "" && s.sessionUserMatches(id, r) && s.sdkAccepts(r) {
			s.releaseSession(id)
		}
	}
	if modern {
		if r.Method == http.MethodPost && (!bytes.Contains(body, progressTokenMember) || !s.mayReportProgress(r)) {
			s.modernJSON.ServeHTTP(w, r)
			return
		}
		s.modernHTTP.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	s.http.ServeHTTP(sw, r)
	if id != "" {
		s.sdkAnswered(id, r.Method, sw.status)
	}
}

// statusWriter records the status of the answer written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

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
func (s *Server) mayReportProgress(r *http.Request) bool {
	name := r.Header.Get(nameHeader)
	if r.Header.Get(methodHeader) != methodCallTool || name == "" {
		return true
	}
	cat, release, err := s.cfg.Catalog(r.Context(), name)
	if err != nil {
		return true
	}
	defer release()
	info, ok := cat.Tool(name)
	return !ok || info.Progress
}

const (
	protocolVersionHeader = "Mcp-Protocol-Version"
	nameHeader            = "Mcp-Name"
	methodHeader          = "Mcp-Method"
)

// taskNameMatches checks the Mcp-Name header of a 2026-07-28 tasks/get,
// tasks/update or tasks/cancel against the body's params.taskId, as the
// transport requires for routing (go-sdk checks it for tools/call only).
// A missing or different name is answered with HTTP 400 and -32020.
func taskNameMatches(w http.ResponseWriter, r *http.Request, body []byte) bool {
	refuse := func(id json.RawMessage, code int64, why string) bool {
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		out, _ := marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": jsonrpc.Error{Code: code, Message: why}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(out)
		return false
	}
	// Read the members as go-sdk will: exact, case-sensitive names. A
	// name that only differs in case from one that matters, or a repeated
	// one, would let this check and go-sdk read different requests.
	msg, err := members(body, "method", "params", "id")
	if err != nil {
		if errors.Is(err, errNotObject) {
			return true // a batch, or not a request: go-sdk answers it
		}
		return refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil {
		return true
	}
	switch method {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
	default:
		return true
	}
	params, err := members(msg["params"], "taskId")
	if err != nil && !errors.Is(err, errNotObject) {
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

var errNotObject = errors.New("not a JSON object")

// members returns the members of the JSON object raw by their exact
// names. It refuses an object that repeats a name, or that has a name
// differing only in case from one of watched (decoders that fold case
// would read that one instead).
func members(raw json.RawMessage, watched ...string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	out := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errNotObject
		}
		name, _ := tok.(string)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", name)
		}
		for _, w := range watched {
			if name != w && strings.EqualFold(name, w) {
				return nil, fmt.Errorf("member %q is not %q", name, w)
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errNotObject
		}
		out[name] = v
	}
	return out, nil
}

// knownVersions are the protocol versions go-sdk's handler accepts in the
// Mcp-Protocol-Version header (it refuses others below 2026-07-28).
var knownVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// sdkAccepts reports whether go-sdk's handler lets a request (a DELETE,
// say) through its checks before the session lookup: the loopback Host
// rule (DNS rebinding protection, off when AllowedHosts is set: see
// HTTPHandler) and the protocol version header.
func (s *Server) sdkAccepts(r *http.Request) bool {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil &&
		len(s.cfg.AllowedHosts) == 0 && isLoopback(la.String()) && !isLoopback(r.Host) {
		return false
	}
	v := r.Header.Get(protocolVersionHeader)
	return v == "" || slices.Contains(knownVersions, v) || v >= "2026-07-28"
}

// isLoopback reports whether addr ("host" or "host:port") names a loopback
// address or localhost.
func isLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (s *Server) sessionUserMatches(id string, r *http.Request) bool {
	s.mu.Lock()
	sess, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		return false
	}
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	return sess.user == user
}

// errorRewriter passes the JSON-RPC errors of a POST's answer through
// clientRPCError, as the stdio connection does. go-sdk writes each answer
// in one Write: a JSON body, or one SSE event ("data: {…}\n\n"). Only a
// write that holds an error object is decoded.
type errorRewriter struct {
	http.ResponseWriter
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
	out, ok := rewriteErrors(payload)
	if !ok {
		return w.ResponseWriter.Write(b)
	}
	msg := append(append(append([]byte(nil), prefix...), out...), suffix...)
	if _, err := w.ResponseWriter.Write(msg); err != nil {
		return 0, err
	}
	return len(b), nil
}

// rewriteErrors rewrites the error messages of one JSON-RPC message or a
// batch of them; ok is false when nothing changed.
func rewriteErrors(payload []byte) ([]byte, bool) {
	var one struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(payload), []byte("[")) {
		var batch []json.RawMessage
		if json.Unmarshal(payload, &batch) != nil {
			return nil, false
		}
		changed := false
		for i, m := range batch {
			if out, ok := rewriteErrors(m); ok {
				batch[i], changed = out, true
			}
		}
		if !changed {
			return nil, false
		}
		out, err := json.Marshal(batch)
		return out, err == nil
	}
	if json.Unmarshal(payload, &one) != nil || one.Error == nil {
		return nil, false
	}
	clean := clientRPCMessage(one.Error.Message)
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

// bindPost records the context of the POST that carries requests tied to
// it by token (httpRequestKey), until unbindPost.
func (s *Server) bindPost(token string, ctx context.Context) {
	s.mu.Lock()
	s.posts[token] = ctx
	s.mu.Unlock()
}

func (s *Server) unbindPost(token string) {
	s.mu.Lock()
	delete(s.posts, token)
	s.mu.Unlock()
}

// postContext takes the POST binding out of a request's _meta and returns
// the POST's context, or nil for a request not received over HTTP (or
// whose POST has already ended: then a done context).
func (s *Server) postContext(meta map[string]any) context.Context {
	token, ok := meta[httpRequestKey].(string)
	if !ok {
		return nil
	}
	delete(meta, httpRequestKey)
	s.mu.Lock()
	ctx := s.posts[token]
	s.mu.Unlock()
	if ctx == nil {
		done, cancel := context.WithCancel(context.Background())
		cancel()
		return done
	}
	return ctx
}
