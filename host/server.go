package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/defaulttools"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Config configures a [Server]. The zero value serves the embedded default
// tools with the default sandbox policy and task limits.
type Config struct {
	// ToolsDir is a directory of "<name>.wasm" modules, watched and reloaded
	// while the server runs. "" serves the embedded default tools (built from
	// examples/) and watches nothing.
	ToolsDir string
	// Policy is the operator's sandbox policy. nil means the defaults
	// documented on [ToolPolicy].
	Policy *Policy
	// CacheDir keeps compiled code on disk so the next start is fast. ""
	// compiles in memory only.
	CacheDir string
	// Interpreter runs guests in wazero's interpreter instead of its
	// compiler (slower; for platforms the compiler does not support).
	Interpreter bool
	// Tasks sets the task limits: retained tasks and result bytes, running
	// tasks per requestor, default and maximum TTL. Zero fields take the
	// taskengine defaults.
	Tasks taskengine.Config
	// ReloadDebounce is the quiet time after a change of ToolsDir before it
	// is reloaded. Default 250ms.
	ReloadDebounce time.Duration
	// CancelRemoved, when set, cancels the calls and tasks still running on
	// a module that was removed from ToolsDir or replaced by a new version.
	// Default: they run to their end on the old version.
	CancelRemoved bool
	// Logger receives the operator log: reloads, load problems, task audit
	// events. Default: discard.
	Logger *slog.Logger
	// Name and Version are the serverInfo sent to clients. Defaults
	// "wasmtask" and "dev".
	Name, Version string
}

// Server is a wasmtask MCP server: Wasm tools, run as plain calls or as
// tasks, over stdio or Streamable HTTP. It is safe for concurrent use. Close
// stops it: sessions end, running tasks are cancelled, and every goroutine
// it started is gone when Close returns.
type Server struct {
	cfg    Config
	log    *slog.Logger
	rt     *wasmrt.Runtime
	engine *taskengine.Engine
	reg    *registry
	mcp    *mcpserver.Server

	watcher *plugins.Watcher // nil when serving the embedded tools
	stop    context.CancelFunc
	wg      sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// New loads the tools and returns a Server ready to serve. With a ToolsDir,
// modules that fail to load are logged and skipped; New fails only when the
// server itself cannot start.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Policy != nil {
		if err := cfg.Policy.validate(); err != nil {
			return nil, err
		}
	}
	rt, err := wasmrt.New(ctx, wasmrt.Config{CacheDir: cfg.CacheDir, Interpreter: cfg.Interpreter, MaxMemoryPages: MaxMemoryMiB * 16})
	if err != nil {
		return nil, fmt.Errorf("host: starting the Wasm runtime: %w", err)
	}
	engine, err := taskengine.New(cfg.Tasks)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("host: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, rt: rt, engine: engine, stop: func() {}}
	s.reg = newRegistry(rt, cfg.Policy, cfg.Logger)

	if cfg.ToolsDir == "" {
		g, err := s.loadEmbedded(ctx)
		if err != nil {
			s.closeParts()
			return nil, err
		}
		s.reg.swap(g)
	} else {
		w, err := plugins.NewWatcher(plugins.Config{Dir: cfg.ToolsDir, Debounce: cfg.ReloadDebounce, Logger: cfg.Logger})
		if err != nil {
			s.closeParts()
			return nil, fmt.Errorf("host: watching %s: %w", cfg.ToolsDir, err)
		}
		s.watcher = w
		// The first snapshot is loaded before New returns, so the first
		// tools/list holds every module that was settled on disk. A file
		// modified less than ReloadDebounce ago is taken as still being
		// written and arrives with the next reload (and list_changed).
		s.reload(ctx, <-w.Changes())
	}

	s.mcp, err = mcpserver.New(mcpserver.Config{
		Tools:   s.reg,
		Engine:  engine,
		Logger:  cfg.Logger,
		Name:    cfg.Name,
		Version: cfg.Version,
	})
	if err != nil {
		s.closeParts()
		return nil, fmt.Errorf("host: %w", err)
	}
	if s.watcher != nil {
		loopCtx, stop := context.WithCancel(context.Background())
		s.stop = stop
		s.wg.Add(1)
		go s.watch(loopCtx)
	}
	return s, nil
}

// Tools returns the tools served now.
func (s *Server) Tools() []abi.Tool { return s.reg.List() }

// Problems returns why modules of ToolsDir are not served (or are served in
// an older version), one line each. Empty when all loaded.
func (s *Server) Problems() []string {
	var out []string
	for _, p := range s.reg.gen.Load().Problems() {
		out = append(out, p.String())
	}
	return out
}

// ServeStdio serves one MCP session of newline-delimited JSON-RPC on in and
// out until in ends, ctx is done or the Server is closed.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := s.mcp.ServeStdio(ctx, in, out)
	if errors.Is(err, mcpserver.ErrClosed) {
		return ErrServerClosed
	}
	return err
}

// Handler returns the Streamable HTTP handler; it serves the MCP endpoint
// at [HTTPPath].
func (s *Server) Handler() http.Handler { return s.mcp.HTTPHandler() }

// HTTPPath is the MCP endpoint of [Server.Handler].
const HTTPPath = mcpserver.HTTPPath

// ErrServerClosed is returned by the Serve methods after Close.
var ErrServerClosed = errors.New("host: server closed")

// ServeHTTP serves Streamable HTTP on l until ctx is done or the Server is
// closed, then shuts the listener down gracefully.
func (s *Server) ServeHTTP(ctx context.Context, l net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Release blocked requests first, so Shutdown does not wait for them.
	s.mcp.Close()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shutCtx)
	<-errc
	return nil
}

// Close stops the server: sessions end, blocked requests return, running
// tasks are cancelled, the watcher stops and compiled modules are freed.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		s.wg.Wait()
		if s.mcp != nil {
			s.mcp.Close()
		}
		s.closeErr = s.closeParts()
	})
	return s.closeErr
}

func (s *Server) closeParts() error {
	var errs []error
	if s.watcher != nil {
		errs = append(errs, s.watcher.Close())
	}
	errs = append(errs, s.engine.Close())
	errs = append(errs, s.rt.Close(context.Background()))
	return errors.Join(errs...)
}

// watch is the reload loop, owned by the Server: each new snapshot of the
// directory becomes a generation, which replaces the served one in one
// pointer swap.
func (s *Server) watch(ctx context.Context) {
	defer s.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case snap, ok := <-s.watcher.Changes():
			if !ok {
				return
			}
			if s.reload(ctx, snap) {
				s.mcp.SyncTools()
			}
		}
	}
}

// reload builds the next generation from snap, validates it, swaps it in and
// releases the modules the old one no longer uses. It reports whether the
// served generation changed.
func (s *Server) reload(ctx context.Context, snap *plugins.Snapshot) bool {
	if snap == nil {
		return false
	}
	start := time.Now()
	prev := s.reg.gen.Load()
	next, released := plugins.Build(ctx, prev, snap, loader{s.rt})
	s.reg.swap(next)
	for _, m := range released {
		// Close does not wait: calls in flight finish on this version and
		// the compiled code is freed after the last of them. It comes
		// before cancelCalls: a call that registers after the cancel then
		// finds the module closed and retries on the new generation.
		m.Close(ctx)
		if s.cfg.CancelRemoved {
			s.reg.cancelCalls(m)
		}
	}
	for _, p := range next.Problems() {
		s.log.Warn("tool module not served", "problem", p.String())
	}
	s.log.Info("tools reloaded", "generation", next.Seq(), "modules", len(next.Modules()),
		"tools", len(next.ToolNames()), "released", len(released), "took", time.Since(start))
	return true
}

// loader compiles modules for plugins.Build.
type loader struct{ rt *wasmrt.Runtime }

func (l loader) Load(ctx context.Context, m plugins.Module, wasm []byte) (*wasmrt.Module, []byte, error) {
	mod, err := l.rt.Load(ctx, m.Name, wasm)
	if err != nil {
		return nil, nil, err
	}
	manifest, err := json.Marshal(mod.Manifest())
	if err != nil {
		mod.Close(ctx)
		return nil, nil, err
	}
	return mod, manifest, nil
}

func (l loader) Release(m *wasmrt.Module) {
	if m != nil {
		m.Close(context.Background())
	}
}

// loadEmbedded loads the default tools compiled into the binary. They are
// built from examples/ and must all load: a failure is a bug of the build.
func (s *Server) loadEmbedded(ctx context.Context) (*generation, error) {
	snap, err := plugins.ScanFS(defaulttools.FS, plugins.Config{})
	if err != nil {
		return nil, fmt.Errorf("host: reading the embedded tools: %w", err)
	}
	g, _ := plugins.Build(ctx, nil, snap, loader{s.rt})
	if ps := g.Problems(); len(ps) > 0 {
		for _, m := range g.Modules() {
			m.Compiled.Close(ctx)
		}
		return nil, fmt.Errorf("host: embedded tool module: %s", ps[0])
	}
	return g, nil
}
