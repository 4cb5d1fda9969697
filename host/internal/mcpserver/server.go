package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmtask/wasmtask/host/internal/mcpconn"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
	"github.com/wasmtask/wasmtask/host/internal/mcpevents"
	"github.com/wasmtask/wasmtask/host/internal/mcpstdio"
	"github.com/wasmtask/wasmtask/host/internal/mcpwire"
	"github.com/wasmtask/wasmtask/host/internal/roundstate"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Errors shared with the [Catalog] implementation.
var (
	// ErrUnknownTool is wrapped by Catalog.Call when name is not (or no
	// longer) a tool; the client gets -32602.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrClosed is returned by ServeStdio after Close.
	ErrClosed = errors.New("server closed")
)

// Config configures a [Server]. Catalog and Engine are required; every
// other field has a default given in its comment.
type Config struct {
	// Catalog returns the tool set served now, held until release is
	// called: a request releases it when it is answered, a task when its
	// work returns. It is called once per request that needs it, with the
	// tool a tools/call names ("" for tools/list): while the server is
	// still loading its first tools it may wait for them (for a call, only
	// until the named tool is served), and it returns an error only when
	// ctx ends first.
	Catalog func(ctx context.Context, tool string) (c Catalog, release func(), err error)
	// Engine runs and stores tasks. The caller owns it: Close the Server
	// first, then the Engine. Its Config sets the task limits (maximum TTL,
	// running tasks per requestor, store size).
	Engine *taskengine.Engine
	// LocalOwner, when set, owns the tasks of every stdio session without
	// an auth user, so that a store that outlives the process gives them
	// back to the same local user after a restart. Empty: each stdio
	// session owns its own tasks.
	LocalOwner string
	// Logger receives the audit log — one "audit" line per tenant action:
	// session opened, plain call, task created or refused, finished,
	// cancelled, result retrieved, request denied; with the tenant, tool,
	// module, digest and outcome, never argument values — and go-sdk's own
	// log. Default: discard.
	Logger *slog.Logger
	// Visible says whether the requestor authenticated as user ("" when
	// the transport carried no auth) may see and use the declaration of
	// kind called name (a tool or prompt name, a resource's URI, a
	// template's URI template), served from module (the module file's
	// name, ToolInfo.Module). What it may not see is absent from its lists
	// and unknown to its requests, with the same error as what nobody
	// serves. Nil: everything is visible to everyone.
	Visible func(user string, kind Kind, name, module string) bool
	// OnDenied is told the status of each request refused before MCP (for
	// metrics), by AuditDenied; it must be quick. Nil: nobody.
	OnDenied func(status int)
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
	// StateKey seals the requestState of 2026-07-28 input rounds
	// (roundstate.KeyBytes or more). Replicas behind one address share
	// it: a round may reach any of them. Nil: a key of this process.
	StateKey []byte
}

// Defaults of [Config].
const (
	DefaultMaxMessageBytes  = 4 << 20
	DefaultMaxArgumentBytes = 1 << 20
)

// Server serves MCP, with 2025-11-25 tasks, over stdio and Streamable HTTP.
// It is safe for concurrent use. Close ends every session and releases every
// blocked request; it does not close the Engine.
type Server struct {
	cfg   Config
	log   *slog.Logger
	mcp   *mcp.Server
	state *roundstate.Sealer // input rounds' requestState

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session // by session ID

	waiters mcpevents.Waiters // tasks/result requests waiting, for the tasks' messages

	subs    subscriptions // resources followed, by session and open listen request
	listens atomic.Uint64 // names the open listen requests in subs

	waitHook func(began bool) // tests: called as each tasks/result starts and stops waiting

	wg sync.WaitGroup // status notifiers, and the watchers of HTTP sessions

	// Tool calls and tasks in flight, and tasks/result requests waiting,
	// for Drain. Once draining, no new call is accepted; tasks/result still
	// is (it is how a client gets what is being drained).
	workMu   sync.Mutex
	draining bool
	work     int           // tool calls and tasks
	waiting  int           // tasks/result requests
	idle     chan struct{} // closed when both drop to 0 while draining
}

// errDraining answers a tools/call that arrives while the server drains.
var errDraining = mcperr.RPC(-32603, "the server is shutting down and accepts no new tool calls")

// beginWork counts a tool call or task in; it fails once draining.
func (s *Server) beginWork() error {
	s.workMu.Lock()
	defer s.workMu.Unlock()
	if s.draining {
		return errDraining
	}
	s.work++
	return nil
}

func (s *Server) endWork() { s.countWork(&s.work, -1) }

// beginWait and endWait count a tasks/result request in and out.
func (s *Server) beginWait() {
	s.countWork(&s.waiting, +1)
	if s.waitHook != nil {
		s.waitHook(true)
	}
}

func (s *Server) endWait() {
	s.countWork(&s.waiting, -1)
	if s.waitHook != nil {
		s.waitHook(false)
	}
}

func (s *Server) countWork(n *int, delta int) {
	s.workMu.Lock()
	defer s.workMu.Unlock()
	*n += delta
	if s.work+s.waiting == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// BeginDrain stops accepting tool calls: from now on they get an error
// saying the server is shutting down. Other requests (tasks/get,
// tasks/result, …) are still answered.
func (s *Server) BeginDrain() {
	s.workMu.Lock()
	s.draining = true
	s.workMu.Unlock()
}

// Drain stops accepting tool calls (BeginDrain) and waits until the calls
// and tasks in flight have ended and the tasks/result requests waiting for
// them have their answers, or ctx is done. Close the Server afterwards.
func (s *Server) Drain(ctx context.Context) error {
	s.BeginDrain()
	s.workMu.Lock()
	if s.work+s.waiting == 0 {
		s.workMu.Unlock()
		return nil
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	s.workMu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Catalog == nil {
		return nil, errors.New("Config.Catalog is nil")
	}
	if cfg.Engine == nil {
		return nil, errors.New("Config.Engine is nil")
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
		return nil, errors.New("negative Config.MaxMessageBytes or MaxArgumentBytes")
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.MaxArgumentBytes == 0 {
		cfg.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	state, err := roundstate.New(cfg.StateKey)
	if err != nil {
		return nil, fmt.Errorf("Config.StateKey: %w", err)
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		state:    state,
		sessions: make(map[string]*session),
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: cfg.Instructions,
		Logger:       cfg.Logger,
		// go-sdk keeps the subscriptions and delivers resources/updated;
		// these admit and record them.
		SubscribeHandler:   func(ctx context.Context, r *mcp.SubscribeRequest) error { return s.subscribe(ctx, r) },
		UnsubscribeHandler: func(ctx context.Context, r *mcp.UnsubscribeRequest) error { return s.unsubscribe(ctx, r) },
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
			//lint:ignore SA1019 logging is deprecated only for protocol 2026-07-28 (SEP-2577); 2025-11-25 clients get tool logs.
			Logging: &mcp.LoggingCapabilities{},
		},
	})
	s.mcp.AddReceivingMiddleware(s.middleware)
	if err := s.registerTaskMethods(); err != nil {
		return nil, err
	}
	return s, nil
}

// ServeStdio serves one session over newline-delimited JSON-RPC on in and
// out until in ends, ctx is done, or the Server is closed. in is closed on
// return when it is an io.Closer.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	line := mcpstdio.New("stdio-"+rand.Text(), in, out, s.cfg.MaxMessageBytes, func(m string) bool { return m == methodTasksResult })
	sess, ss, err := s.startSession(line, "", "stdio")
	if err != nil {
		line.Close()
		return err
	}
	sess.line = line
	defer func() {
		s.releaseSession(sess.id)
		<-sess.relayDone // it writes to out no more
	}()
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
		line.Flush() // the requests it released get their answers
		ss.Close()
		<-done
		err = ErrClosed
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// Connect serves one Streamable HTTP session over conn, for tenant user
// ("" without authentication), until conn's Read fails or end is called:
// end releases the session's blocked requests (they are answered on
// their streams), then closes it. The HTTP edge (mcphttp) owns conn and
// the session table.
func (s *Server) Connect(conn mcp.Connection, user string) (end func(), err error) {
	sess, ss, err := s.startSession(conn, user, "http")
	if err != nil {
		return nil, err
	}
	s.wg.Go(func() {
		_ = ss.Wait()
		s.releaseSession(sess.id)
	})
	return func() {
		sess.cancel()
		ss.Close()
	}, nil
}

// startSession records a session over conn (behind an mcpconn.Conn),
// starts the writer of its task status notifications, and connects go-sdk
// to it.
func (s *Server) startSession(conn mcp.Connection, user, transport string) (*session, *mcp.ServerSession, error) {
	var sess *session // set before go-sdk reads a request
	tc := mcpconn.New(conn, mcpconn.Options{
		Word:   mcperr.Conn,
		Answer: func(req *jsonrpc.Request) bool { return s.answerOwn(sess, req) },
	})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, ErrClosed
	}
	sess = s.newSessionLocked(conn.SessionID(), user, tc)
	if transport == "stdio" && s.cfg.LocalOwner != "" {
		sess.owner = s.cfg.LocalOwner
	}
	s.mu.Unlock()
	s.wg.Go(func() {
		defer close(sess.relayDone)
		sess.relay.Run(sess.ctx, tc.NotifyTaskStatus)
	})
	s.audit(auditSessionOpen, requestor{sess: sess, user: user}.owner(), slog.String("transport", transport))
	ss, err := s.mcp.Connect(context.Background(), tc.Transport(), nil)
	if err != nil {
		s.releaseSession(sess.id)
		return nil, nil, fmt.Errorf("connecting a %s session: %w", transport, err)
	}
	s.mu.Lock()
	sess.ss = ss
	s.mu.Unlock()
	return sess, ss, nil
}

// Stateless is the go-sdk server that the HTTP edge hands 2026-07-28
// requests to (its stateless handler): the same middleware and methods.
func (s *Server) Stateless() *mcp.Server { return s.mcp }

// MayReportProgress reports whether a tools/call of tool can send
// progress before its result (ToolInfo.Progress); an unknown tool may.
func (s *Server) MayReportProgress(ctx context.Context, tool string) bool {
	cat, release, err := s.cfg.Catalog(ctx, tool)
	if err != nil {
		return true
	}
	defer release()
	info, ok := cat.Tool(tool)
	return !ok || info.Progress
}

// CheckParamHeaders checks the Mcp-Param-* headers of a 2026-07-28
// tools/call of tool by tenant user over HTTP against its arguments, for
// the tool's x-mcp-header parameters (mcpwire.CheckParamHeaders). A tool
// not served, or hidden from user, has none: its call is refused as
// unknown, as any call of it is.
func (s *Server) CheckParamHeaders(ctx context.Context, user, tool string, args json.RawMessage, header func(name string) []string) error {
	cat, release, err := s.cfg.Catalog(ctx, tool)
	if err != nil {
		return nil
	}
	defer release()
	info, ok := cat.Tool(tool)
	if !ok || !s.visible(user, cat)(tool) {
		return nil
	}
	return mcpwire.CheckParamHeaders(info.Decl.HeaderParams, args, header)
}

// ClientMessage is the text a client reads for an error message go-sdk
// wrote (mcperr.ClientMessage).
func (s *Server) ClientMessage(msg string) string { return mcperr.ClientMessage(msg) }

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
	// The requests the cancel released are answered before the stdio
	// connections close (each bounded by eofGrace).
	var flushed sync.WaitGroup
	for _, sess := range sessions {
		if sess.line != nil {
			flushed.Go(sess.line.Flush)
		}
	}
	flushed.Wait()
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
	s.wg.Wait()
	return nil
}
