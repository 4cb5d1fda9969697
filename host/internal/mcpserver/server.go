package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Tools is the tool set the server exposes. The host implements it over its
// Wasm runtime; it must be safe for concurrent use.
type Tools interface {
	// List returns the current tool set. Names are unique.
	List() []abi.Tool
	// Call runs tool name with args (a JSON object). A non-nil error is a
	// tool failure and becomes a CallToolResult with isError set and the
	// error's text, except an error wrapping [ErrUnknownTool], which becomes
	// a JSON-RPC -32602 error. Call must return promptly once ctx is done.
	Call(ctx context.Context, name string, args json.RawMessage, ev Events) (*abi.Result, error)
}

// Events is what a running tool may report or ask while it runs. Its methods
// are safe for concurrent use and never block for long, except Elicit.
type Events interface {
	// Progress reports progress; it reaches the client when the call carried
	// a progress token.
	Progress(progress, total float64, msg string)
	// Status sets the task's status message (task calls only).
	Status(msg string)
	// Log sends a log message (abi.Log* level) to the client.
	Log(level int32, msg string)
	// Elicit asks the user for input and waits for the answer. It returns an
	// error wrapping [ErrElicitUnsupported] when the client cannot answer,
	// and ctx's error when ctx ends first.
	Elicit(ctx context.Context, req abi.ElicitRequest) (abi.ElicitReply, error)
}

// Errors shared with the [Tools] implementation.
var (
	// ErrUnknownTool is wrapped by Tools.Call when name is not (or no longer)
	// a tool; the client gets -32602.
	ErrUnknownTool = errors.New("mcpserver: unknown tool")
	// ErrElicitUnsupported is returned by Events.Elicit when the client did
	// not declare the elicitation capability (abi.ElicitUnsupported).
	ErrElicitUnsupported = errors.New("mcpserver: the client cannot answer input requests")
	// ErrClosed is returned by ServeStdio after Close.
	ErrClosed = errors.New("mcpserver: server closed")
)

// Config configures a [Server]. Tools and Engine are required; every other
// field has a default given in its comment.
type Config struct {
	Tools Tools
	// Engine runs and stores tasks. The caller owns it: Close the Server
	// first, then the Engine. Its Config sets the task limits (maximum TTL,
	// running tasks per requestor, store size).
	Engine *taskengine.Engine
	// Logger receives the audit log of task creation, completion and
	// retrieval, and go-sdk's own log. Default: discard.
	Logger *slog.Logger
	// Name and Version are the serverInfo; defaults "wasmtask" and "dev".
	Name, Version string
	// Instructions for the client, optional.
	Instructions string
	// MaxMessageBytes bounds one incoming JSON-RPC message (a stdio line or
	// an HTTP POST body). Default 4 MiB.
	MaxMessageBytes int
	// MaxArgumentBytes bounds a tools/call's arguments; larger ones get
	// -32602. Default 1 MiB.
	MaxArgumentBytes int
	// SessionTimeout closes idle Streamable HTTP sessions (no request for
	// this long; a pending tasks/result counts as activity). Default 30 min;
	// negative = never.
	SessionTimeout time.Duration
}

// Defaults of [Config].
const (
	DefaultMaxMessageBytes  = 4 << 20
	DefaultMaxArgumentBytes = 1 << 20
	DefaultSessionTimeout   = 30 * time.Minute
)

// Server serves MCP, with 2025-11-25 tasks, over stdio and Streamable HTTP.
// It is safe for concurrent use. Close ends every session and releases every
// blocked request; it does not close the Engine.
type Server struct {
	cfg   Config
	log   *slog.Logger
	mcp   *mcp.Server
	tools atomic.Pointer[toolSet]

	syncMu sync.Mutex // serialises SyncTools

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session // by go-sdk session ID
	swept    int                 // len(sessions) after the last sweep
	attached map[string]*attachment
	inflight map[string]bool // task ID + input ID being delivered

	httpOnce sync.Once
	http     *mcp.StreamableHTTPHandler

	wg sync.WaitGroup // status notifiers
}

// toolSet is an immutable snapshot of the tools.
type toolSet struct {
	byName map[string]*toolEntry
	sorted []*toolEntry
}

type toolEntry struct {
	tool   abi.Tool
	schema *jsonschema.Resolved // nil: arguments are not validated
	print  []byte               // JSON of tool, to detect changes
}

// New returns a Server for cfg. It reads the tool set once (see SyncTools).
func New(cfg Config) (*Server, error) {
	if cfg.Tools == nil {
		return nil, errors.New("mcpserver: Config.Tools is nil")
	}
	if cfg.Engine == nil {
		return nil, errors.New("mcpserver: Config.Engine is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		cfg.Name = "wasmtask"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.MaxMessageBytes < 0 || cfg.MaxArgumentBytes < 0 {
		return nil, errors.New("mcpserver: negative Config.MaxMessageBytes or MaxArgumentBytes")
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.MaxArgumentBytes == 0 {
		cfg.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		sessions: make(map[string]*session),
		attached: make(map[string]*attachment),
		inflight: make(map[string]bool),
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: cfg.Instructions,
		Logger:       cfg.Logger,
		Capabilities: &mcp.ServerCapabilities{
			Tools:   &mcp.ToolCapabilities{ListChanged: true},
			Logging: &mcp.LoggingCapabilities{},
		},
	})
	s.mcp.AddReceivingMiddleware(s.middleware)
	if err := s.registerTaskMethods(); err != nil {
		return nil, err
	}
	s.tools.Store(&toolSet{byName: map[string]*toolEntry{}})
	s.SyncTools()
	return s, nil
}

// SyncTools re-reads Tools.List and updates what clients see; connected
// clients get notifications/tools/list_changed (debounced) when anything
// changed. Call it after every change of the tool set (hot reload). Calls
// already running keep the tool they started with.
func (s *Server) SyncTools() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	old := s.tools.Load()
	next := &toolSet{byName: make(map[string]*toolEntry)}
	for _, t := range s.cfg.Tools.List() {
		if _, dup := next.byName[t.Name]; dup {
			s.log.Warn("duplicate tool name; keeping the first", "tool", t.Name)
			continue
		}
		if t.TaskSupport == "" {
			t.TaskSupport = abi.TaskForbidden
		}
		if len(t.InputSchema) == 0 {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		print, _ := json.Marshal(t)
		e := &toolEntry{tool: t, print: print}
		if o, ok := old.byName[t.Name]; ok && bytes.Equal(o.print, print) {
			e = o
		} else {
			e.schema = s.compileSchema(t)
		}
		next.byName[t.Name] = e
	}
	next.sorted = slices.SortedFunc(maps.Values(next.byName), func(a, b *toolEntry) int {
		return strings.Compare(a.tool.Name, b.tool.Name)
	})
	var gone []string
	for name := range old.byName {
		if _, ok := next.byName[name]; !ok {
			gone = append(gone, name)
		}
	}
	s.tools.Store(next)
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for _, e := range next.sorted {
		if old.byName[e.tool.Name] != e {
			s.addSDKTool(e.tool)
		}
	}
}

// addSDKTool registers a stub with go-sdk. Our middleware answers tools/list
// and tools/call itself; the registration exists so that go-sdk sends
// notifications/tools/list_changed and knows the names for its HTTP header
// checks. go-sdk panics on schemas it dislikes; such a tool is still served.
func (s *Server) addSDKTool(t abi.Tool) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Warn("go-sdk refused tool registration; list_changed may lag", "tool", t.Name, "panic", r)
		}
	}()
	s.mcp.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("mcpserver: tools/call bypassed the middleware")
		})
}

// compileSchema resolves a tool's input schema for argument validation. A
// schema that does not resolve (remote $ref, unsupported draft) is logged and
// the tool's arguments are then only checked to be a JSON object.
func (s *Server) compileSchema(t abi.Tool) *jsonschema.Resolved {
	var sch jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &sch); err != nil {
		s.log.Warn("input schema does not parse; arguments not validated", "tool", t.Name, "err", err)
		return nil
	}
	r, err := sch.Resolve(nil)
	if err != nil {
		s.log.Warn("input schema does not resolve; arguments not validated", "tool", t.Name, "err", err)
		return nil
	}
	return r
}

// session is the server's state for one MCP session.
type session struct {
	id     string
	owner  string // taskengine owner when no auth user is known
	user   string // auth user ID seen at creation, "" if none
	ctx    context.Context
	cancel context.CancelFunc
	// notify writes a raw notification; nil where the transport gives no
	// way to (Streamable HTTP).
	notify func(method string, params any) error
}

// newSessionLocked records a session. s.mu must be held.
func (s *Server) newSessionLocked(id string, notify func(string, any) error) *session {
	ctx, cancel := context.WithCancel(context.Background())
	sess := &session{id: id, owner: "session:" + rand.Text(), ctx: ctx, cancel: cancel, notify: notify}
	if s.closed {
		cancel()
	}
	s.sessions[id] = sess
	return sess
}

// sessionFor returns the state of ss, creating it on first use (Streamable
// HTTP sessions are created by go-sdk; we learn of them here).
func (s *Server) sessionFor(ss *mcp.ServerSession, user string) *session {
	id := ss.ID()
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[id]; ok {
		return sess
	}
	if len(s.sessions) >= 2*max(s.swept, 8) {
		s.sweepLocked()
	}
	sess := s.newSessionLocked(id, nil)
	sess.user = user
	return sess
}

// sweepLocked forgets sessions go-sdk no longer has. It runs when the map
// has doubled since the last sweep, so its cost is amortised O(1) per
// session and the map stays within twice the live sessions.
func (s *Server) sweepLocked() {
	live := make(map[string]bool)
	for ss := range s.mcp.Sessions() {
		live[ss.ID()] = true
	}
	for id, sess := range s.sessions {
		if !live[id] {
			sess.cancel()
			delete(s.sessions, id)
		}
	}
	s.swept = len(s.sessions)
}

// releaseSession ends our state for a session: blocked tasks/result calls
// and plain tool calls of that session return. Its tasks live on until
// their TTL.
func (s *Server) releaseSession(id string) {
	s.mu.Lock()
	sess, ok := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if ok {
		sess.cancel()
	}
}

// ServeStdio serves one session over newline-delimited JSON-RPC on in and
// out until in ends, ctx is done, or the Server is closed. in is closed on
// return when it is an io.Closer.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	conn := newLineConn("stdio-"+rand.Text(), in, out, s.cfg.MaxMessageBytes)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return ErrClosed
	}
	sess := s.newSessionLocked(conn.id, conn.notify)
	s.mu.Unlock()
	defer s.releaseSession(conn.id)

	ss, err := s.mcp.Connect(ctx, lineTransport{conn}, nil)
	if err != nil {
		conn.Close()
		return fmt.Errorf("mcpserver: connecting stdio session: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		sess.cancel()
		ss.Close()
		<-done
		err = ctx.Err()
	case <-sess.ctx.Done(): // Server.Close
		ss.Close()
		<-done
		err = ErrClosed
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// Close ends every session: blocked tasks/result and tool calls return,
// stdio sessions end, Streamable HTTP sessions are closed. Tasks keep
// running in the Engine until it is closed. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	sessions := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()
	for _, sess := range sessions {
		sess.cancel()
	}
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
	s.wg.Wait()
	return nil
}
