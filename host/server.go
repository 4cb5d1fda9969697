package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/defaulttools"
	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/mcphttp"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/natsstore"
	"github.com/wasmtask/wasmtask/host/internal/policy"
	"github.com/wasmtask/wasmtask/host/internal/resultcache"
	"github.com/wasmtask/wasmtask/host/internal/tenancy"
	"github.com/wasmtask/wasmtask/host/internal/wasmrt"
	"github.com/wasmtask/wasmtask/plugins"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Config configures a [Server]. The zero value serves the embedded default
// tools with the default sandbox policy and task limits.
type Config struct {
	// ToolsDir is a directory of "<name>.wasm" modules, watched and reloaded
	// while the server runs. It must exist and be readable.
	ToolsDir string
	// ToolsFS is a fixed set of "<name>.wasm" modules at the root of an
	// fs.FS, loaded once and not watched (used when ToolsDir is ""). When
	// both are unset the server serves the embedded default tools, built
	// from examples/.
	ToolsFS fs.FS
	// Policy is the operator's sandbox policy. nil means the defaults
	// documented on [ToolPolicy].
	Policy *Policy
	// CacheDir keeps compiled code on disk so the next start is fast. ""
	// compiles in memory only. It must be private to the server's user
	// (created with mode 0700; one that others may write is refused: it
	// holds native code the server runs). Servers may share it.
	CacheDir string
	// CacheMaxMiB bounds CacheDir: past it, the entries of the least
	// recently used modules are removed. Default 1024.
	CacheMaxMiB int
	// CacheKeyFile holds the key that authenticates CacheDir's entries: an
	// entry it does not vouch for (planted, copied from another module,
	// altered, truncated) is ignored, logged, and the module compiled
	// again. It must not be inside CacheDir, and only the server's user
	// may access it (mode 0600). It is created, with a random key, when it
	// does not exist; servers that share CacheDir should share it. Default
	// wasmtask/compile-cache.key under the user's configuration directory
	// (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config on Linux).
	CacheKeyFile string
	// ResultCacheMaxTTL is the longest a cached result lives; a tool that
	// declares "cache": {"cacheable": true} keeps its results for its ttlMs
	// (none: this), at most this. Zero takes the default (10 min);
	// negative disables the result cache.
	ResultCacheMaxTTL time.Duration
	// ResultCacheEntries and ResultCacheMiB bound the result cache, all
	// tenants together; each tenant may hold at most half. Defaults 10 000
	// and 64 MiB.
	ResultCacheEntries int
	ResultCacheMiB     int
	// Interpreter runs guests in wazero's interpreter instead of its
	// compiler (slower; for platforms the compiler does not support).
	Interpreter bool
	// Tasks sets the task limits: retained tasks and result bytes, running
	// tasks per requestor, default and maximum TTL. Zero fields take the
	// taskengine defaults.
	Tasks taskengine.Config
	// Store, if its URL or Dir is set, keeps every task in a NATS
	// JetStream store instead of this process alone: replicas that share
	// it answer for each other's tasks, and finished results survive a
	// restart (README, "Running several replicas").
	Store StoreConfig
	// LocalOwner, when set, owns the tasks of stdio sessions, so that with
	// a Store their finished results are read back after a restart by the
	// same local user; the command sets it to "local:" and the user's
	// name when it has a store. Empty: each stdio session owns its own
	// tasks, which no later session can read. HTTP sessions without
	// authentication always own their own.
	LocalOwner string
	// ReloadDebounce is the quiet time after a change of ToolsDir before it
	// is reloaded. Default 250ms.
	ReloadDebounce time.Duration
	// CancelRemoved, when set, cancels the calls and tasks still running on
	// a module that was removed from ToolsDir or replaced by a new version.
	// Default: they run to their end on the old version.
	CancelRemoved bool
	// Logger receives the operator log: reloads, load problems, task audit
	// events, and the full text of every failure a client is told about.
	// Default: discard.
	Logger *slog.Logger
	// Name and Version are the serverInfo sent to clients. Defaults
	// "wasmtask" and "dev".
	Name, Version string
	// MaxMessageBytes bounds one incoming JSON-RPC message (a stdio line or
	// an HTTP POST body). Default 4 MiB.
	MaxMessageBytes int
	// MaxArgumentBytes bounds a tools/call's arguments; larger ones get
	// -32602. Default 1 MiB.
	MaxArgumentBytes int
	// SessionTimeout closes idle Streamable HTTP sessions. Default 30 min;
	// negative: never.
	SessionTimeout time.Duration
	// TenantsFile is the operator's tenant file (see [Tenants]). With one,
	// every HTTP request must carry a bearer token of a tenant, and each
	// tenant sees the tools the file gives it. The file is watched and
	// reloaded when it changes (and by [Server.ReloadTenants]): a new
	// version that does not parse is logged and the previous one stays in
	// force. "": HTTP requests are not authenticated.
	TenantsFile string
	// PublicURL is the MCP endpoint's URL as clients reach it (behind a
	// proxy, say), named by the OAuth Protected Resource Metadata document.
	// "": the URL each request was sent to.
	PublicURL string
	// AllowedHosts and AllowedOrigins: HTTP requests with another Host
	// header, or a browser Origin other than the endpoint's own or one of
	// these, get 403. No AllowedHosts: any Host, except that a loopback
	// listener refuses non-loopback names.
	AllowedHosts, AllowedOrigins []string
	// MaxConnections bounds the HTTP connections open at once on each
	// listener of [Server.Serve] (default 1024): at the bound, the idle
	// keep-alive connection unused the longest is closed to admit a new
	// one, and a new one waits only while every connection is busy.
	// MaxConnectionsPerAddress bounds those of one client address (an IPv4
	// address, an IPv6 /64); past it the address's own idle connection
	// unused the longest is closed, or, when all of them are busy, the new
	// connection is closed unanswered. Default an eighth of
	// MaxConnections, at least 8 (at most MaxConnections); negative: no
	// per-address bound (behind a proxy, whose connections all come from
	// one address). MaxSessions and
	// MaxSessionsPerTenant the HTTP sessions in total and per tenant
	// (defaults 1024 and 64); MaxRequestsPerSession and
	// MaxRequestsPerTenant the requests in flight of one session and of
	// one tenant over all its sessions (defaults 64 and 256).
	MaxConnections, MaxConnectionsPerAddress, MaxSessions, MaxSessionsPerTenant, MaxRequestsPerSession, MaxRequestsPerTenant int
	// ReadTimeout bounds reading a request's headers and body on the
	// listeners of [Server.Serve] (default 30s; headers alone 10s at
	// most); IdleTimeout closes a keep-alive connection idle that long
	// (default 2m). Neither ends a response stream.
	ReadTimeout, IdleTimeout time.Duration

	// wrapLoader, set by tests of this package, wraps the loader that
	// compiles modules, to hold a load back.
	wrapLoader func(plugins.Loader[*wasmrt.Module]) plugins.Loader[*wasmrt.Module]
	// connState, set by tests of this package, is told of each state
	// change of a connection of Serve's, after the connection limit is.
	connState func(net.Conn, http.ConnState)
}

// Server is a wasmtask MCP server: Wasm tools, run as plain calls or as
// tasks, over stdio or Streamable HTTP, and directly through [Server.Call]
// (resources and prompts through [Server.ReadResource], [Server.GetPrompt]
// and [Server.Complete]).
// It is safe for concurrent use.
//
// Its lifecycle follows net/http's: [Server.Serve] and [Server.ServeStdio]
// serve until the server is shut down; [Server.Shutdown] stops accepting
// work and waits for the work in flight; [Server.Close] stops at once. After
// either, the Serve methods return [ErrServerClosed], and when Close returns
// every goroutine the server started is gone.
type Server struct {
	cfg       Config
	log       *slog.Logger
	rt        *wasmrt.Runtime
	warmCache bool // the compile cache held entries at New: not a first run
	engine    *taskengine.Engine
	store     *natsstore.Store // nil: tasks live in this process only
	mcp       *mcpserver.Server
	edge      *mcphttp.Handler // the Streamable HTTP edge in front of mcp
	catalog   atomic.Pointer[catalog]
	adm       *admission.Controller // the one admission controller of every call
	results   *resultcache.Cache
	metrics   *metrics
	budgetSrc string // where the memory budget comes from, for Limits
	// loadPolicy is the policy in force for the loads (cfg.Policy, which
	// SetPolicy replaces under reloadMu, read by the load workers).
	loadPolicy *atomic.Pointer[Policy]

	swapMu  sync.Mutex
	swapped chan struct{} // closed and replaced by every catalog swap
	holdMu  sync.Mutex    // the catalogs' holds and their chain (catalog)

	tenants     atomic.Pointer[tenancy.Auth] // nil without a tenant file
	tenantsMu   sync.Mutex                   // one tenant reload at a time
	tenantWatch *plugins.FileWatch

	watcher  *plugins.Watcher               // nil when serving a fixed set of modules
	loads    *plugins.Loads[*wasmrt.Module] // compiles in the background; reload takes what has loaded
	started  chan struct{}                  // closed once the start is over (startDone)
	loaded   chan struct{}                  // closed once the first modules have all loaded or failed
	begun    time.Time                      // when New began, for the start-up log line
	reloadMu sync.Mutex                     // one reload at a time
	stop     context.CancelFunc
	wg       sync.WaitGroup

	mu     sync.Mutex
	closed bool
	// direct counts the library's requests in flight (directly); idle is made
	// by Shutdown while some run, and closed when the last returns.
	direct    int
	idle      chan struct{}
	listeners map[*http.Server]net.Listener

	startOnce  sync.Once
	loadedOnce sync.Once
	closeOnce  sync.Once
	closeErr   error
}

// DefaultMaxConnections is [Config.MaxConnections]'s default.
const DefaultMaxConnections = 1024

// connectionLimits are the bounds of Config's MaxConnections and
// MaxConnectionsPerAddress in force (perAddr 0: none).
func (c *Config) connectionLimits() (total, perAddr int) {
	total = c.MaxConnections
	if total <= 0 {
		total = DefaultMaxConnections
	}
	switch {
	case c.MaxConnectionsPerAddress < 0:
		return total, 0
	case c.MaxConnectionsPerAddress > 0:
		return total, min(c.MaxConnectionsPerAddress, total)
	}
	return total, max(total/8, min(8, total))
}

// ErrServerClosed is returned by the Serve methods after Shutdown or Close.
var ErrServerClosed = errors.New("host: server closed")

// HTTPPath is the MCP endpoint of [Server.Handler] and [Server.Serve].
const HTTPPath = mcphttp.Path

// New starts loading the tools and returns a Server ready to serve: the
// modules load in the background (two at a time, those the policy names
// first, then smallest first, each within the policy's LoadTimeout), so
// initialize is answered at once; a call waits until its tool has loaded
// (or every module found at start has loaded or failed), and tools/list,
// [Server.Tools] and [Server.Problems] until the modules found at start
// have loaded or failed — or, once one of them hit a load limit, until
// those the policy names have. Modules that fail to load are logged and skipped (see
// [Server.Problems]); New fails when the server itself cannot start,
// including a ToolsDir that does not exist or cannot be read.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ResultCacheMaxTTL == 0 {
		cfg.ResultCacheMaxTTL = DefaultResultCacheMaxTTL
	}
	if cfg.Policy != nil {
		if err := cfg.Policy.Validate(); err != nil {
			return nil, err
		}
	}
	keyFile, err := cacheKeyFile(cfg)
	if err != nil {
		return nil, err
	}
	bounds := cfg.Policy.Bounds()
	budget, budgetSrc := cfg.Policy.MemoryBudget(admission.MachineMemory)
	rt, err := wasmrt.New(ctx, wasmrt.Config{
		CacheDir:       cfg.CacheDir,
		MaxCacheMiB:    cmp.Or(cfg.CacheMaxMiB, DefaultCacheMaxMiB),
		CacheKeyFile:   keyFile,
		Logger:         cfg.Logger,
		Interpreter:    cfg.Interpreter,
		MaxMemoryMiB:   MaxMemoryMiB,
		MaxCodeMiB:     bounds.MaxCodeMiB,
		MaxSnapshotMiB: policy.SnapshotBudgetMiB(budget),
	})
	if err != nil {
		return nil, fmt.Errorf("host: starting the Wasm runtime: %w", err)
	}
	var s *Server
	tasks := cfg.Tasks
	if cfg.TenantsFile != "" && tasks.Limits == nil {
		// Each tenant's task quotas, from the tenant file in force. The
		// engine calls this only once s is made (at the first Submit).
		tasks.Limits = func(owner string) taskengine.OwnerLimits { return s.ownerLimits(owner) }
	}
	store, err := openStore(ctx, cfg.Store, &tasks, cfg.Logger)
	if err != nil {
		rt.Close(ctx)
		return nil, err
	}
	engine, err := taskengine.New(tasks)
	if err != nil {
		rt.Close(ctx)
		if store != nil {
			store.Close()
		}
		return nil, fmt.Errorf("host: %w", err)
	}
	loadPolicy := new(atomic.Pointer[Policy])
	loadPolicy.Store(cfg.Policy)
	s = &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		rt:         rt,
		warmCache:  rt.CachedModules() > 0,
		engine:     engine,
		store:      store,
		adm:        admission.New(bounds.MaxInstances, budget),
		results:    newResultCache(cfg),
		budgetSrc:  budgetSrc,
		stop:       func() {},
		listeners:  make(map[*http.Server]net.Listener),
		swapped:    make(chan struct{}),
		loadPolicy: loadPolicy,
		loads:      plugins.NewLoads(cfg.loader(rt, loadPolicy), plugins.LoadConfig{Timeout: bounds.LoadTimeout}),
		started:    make(chan struct{}),
		loaded:     make(chan struct{}),
		begun:      time.Now(),
	}
	s.metrics = newMetrics(s)
	var auth *mcphttp.Auth
	if cfg.TenantsFile != "" {
		if auth, err = s.startTenants(); err != nil {
			s.closeParts()
			return nil, err
		}
	}
	if err := s.loadFirst(ctx); err != nil {
		s.closeParts()
		return nil, err
	}
	s.mcp, err = mcpserver.New(mcpserver.Config{
		Catalog: func(ctx context.Context, tool string) (mcpserver.Catalog, func(), error) {
			if err := s.ready(ctx, tool); err != nil {
				return nil, nil, err
			}
			c, release := s.acquire()
			return c, release, nil
		},
		Engine:           engine,
		Logger:           cfg.Logger,
		Name:             cfg.Name,
		Version:          cfg.Version,
		MaxMessageBytes:  cfg.MaxMessageBytes,
		MaxArgumentBytes: cfg.MaxArgumentBytes,
		LocalOwner:       cfg.LocalOwner,
		Visible:          s.visibleFunc(),
		OnDenied:         func(status int) { s.metrics.denied.WithLabelValues(strconv.Itoa(status)).Inc() },
		StateKey:         roundStateKey(tasks.SharedKey),
	})
	if err != nil {
		s.closeParts()
		return nil, fmt.Errorf("host: %w", err)
	}
	s.edge, err = mcphttp.New(mcphttp.Config{
		MCP:                   s.mcp,
		Logger:                cfg.Logger,
		Denied:                s.mcp.AuditDenied,
		Auth:                  auth,
		AllowedHosts:          cfg.AllowedHosts,
		AllowedOrigins:        cfg.AllowedOrigins,
		MaxSessions:           cfg.MaxSessions,
		MaxSessionsPerTenant:  cfg.MaxSessionsPerTenant,
		MaxRequestsPerSession: cfg.MaxRequestsPerSession,
		MaxRequestsPerTenant:  cfg.MaxRequestsPerTenant,
		RequestRate:           s.requestRateFunc(),
		MaxMessageBytes:       cfg.MaxMessageBytes,
		SessionTimeout:        cfg.SessionTimeout,
	})
	if err != nil {
		s.closeParts()
		return nil, fmt.Errorf("host: %w", err)
	}
	loopCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.wg.Add(1)
	go s.watch(loopCtx)
	return s, nil
}

// loadFirst loads the first catalog: the watched directory's first
// snapshot (which waits, bounded, for files still being written), a fixed
// fs.FS, or the embedded tools.
func (s *Server) loadFirst(ctx context.Context) error {
	switch {
	case s.cfg.ToolsDir != "":
		w, err := plugins.NewWatcher(plugins.Config{Dir: s.cfg.ToolsDir, Debounce: s.cfg.ReloadDebounce, Logger: s.cfg.Logger})
		if err != nil {
			return fmt.Errorf("host: tool directory: %w", err)
		}
		s.watcher = w
		s.reload(ctx, <-w.Changes())
		return nil
	case s.cfg.ToolsFS != nil:
		snap, err := plugins.ScanFS(s.cfg.ToolsFS, plugins.Config{})
		if err != nil {
			return fmt.Errorf("host: reading the tools: %w", err)
		}
		s.reload(ctx, snap)
		return nil
	}
	// The embedded tools are built from examples/; that they all load is
	// tested there and in defaulttools.
	snap, err := plugins.ScanFS(defaulttools.FS, plugins.Config{})
	if err != nil {
		return fmt.Errorf("host: reading the embedded tools: %w", err)
	}
	s.reload(ctx, snap)
	return nil
}

// ToolInfo is a served tool as [Server.Tools] reports it.
type ToolInfo struct {
	abi.Tool                     // the declaration, normalised
	Module            string     // name of the module that declares it
	Digest            string     // the module's content digest, "sha256:<hex>"
	Policy            ToolPolicy // the effective limits: every default filled in
	Grants            Grants     // the module's grants (its policy entry, when it applies to this file)
	ModuleInstances   int        // calls of the module's tools that may run at once
	ModuleMemoryMiB   int        // memory those calls may reserve together (one call alone may pass it)
	ReservedMemoryMiB int        // what one call reserves of the server's memory budget
	// ResultCacheTTL is how long a result of the tool is reused: the least
	// of its ttlMs, its policy's resultCacheTtl and the server's maximum;
	// 0 when it is not cached.
	ResultCacheTTL time.Duration
}

// Tools returns the tools served now, sorted by name, with the limits and
// grants each gets: the same numbers tools/call applies. Right after New
// it first waits for the modules found at start to load or fail.
func (s *Server) Tools() []ToolInfo {
	_ = s.ready(context.Background(), "")
	c := s.catalog.Load()
	out := make([]ToolInfo, 0, len(c.list))
	for _, t := range c.list {
		st := c.tools[t.Name]
		modSlots, modMemory := s.adm.ModuleShare(st.slot.Module())
		out = append(out, ToolInfo{Tool: st.decl, Module: st.module.Name, Digest: st.module.Digest, Policy: st.policy,
			Grants: st.grants, ModuleInstances: modSlots, ModuleMemoryMiB: int(modMemory >> 20), ReservedMemoryMiB: ceilMiB(st.need), ResultCacheTTL: st.cache.ttl})
	}
	return out
}

// ceilMiB is b bytes in MiB, rounded up: what a reservation of b shows.
func ceilMiB(b uint64) int { return int((b + 1<<20 - 1) >> 20) }

// Limits are the server-wide bounds of admission, as [Server.Limits]
// reports them.
type Limits struct {
	MaxInstances    int    // Wasm instances (running calls) at once
	MemoryBudgetMiB int    // memory all running calls may reserve together
	MemoryBudgetSrc string // where MemoryBudgetMiB comes from: the policy, or what it was derived from
	// SnapshotBudgetMiB bounds the memory the snapshots of all loaded
	// pre-initialised modules hold together (a quarter of the memory
	// budget); SnapshotBytes is what they hold now.
	SnapshotBudgetMiB int
	SnapshotBytes     uint64
}

// Limits returns the server-wide admission bounds in force.
func (s *Server) Limits() Limits {
	return Limits{MaxInstances: s.adm.Slots(), MemoryBudgetMiB: int(s.adm.Budget() >> 20), MemoryBudgetSrc: s.budgetSrc,
		SnapshotBudgetMiB: policy.SnapshotBudgetMiB(s.adm.Budget()), SnapshotBytes: s.rt.SnapshotBytes()}
}

// Problem is a module that is not served (or is served in an older
// version), or a policy entry that does not apply as written: one that
// matches no module or tool, a digest pin the file does not match, a tool
// whose calls cannot fit the memory budget.
type Problem struct {
	Module string // module name (for a policy entry that matches no module: the entry's)
	Path   string // file, when known
	Err    error  // wraps ErrNotWasm, ErrCompile, ErrModuleABI, ErrSchema, ErrLoadLimit, an abi error, …
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Err.Error()
	}
	return p.Path + ": " + p.Err.Error()
}

// Problems returns what is wrong with the tools served now, in name order.
// Empty when all is well. The operator log has each problem too. Right
// after New it first waits for the modules found at start to load or fail.
func (s *Server) Problems() []Problem {
	_ = s.ready(context.Background(), "")
	return append([]Problem(nil), s.catalog.Load().problems...)
}

// Call runs tool with args (a JSON object; empty means {}) on the path
// tools/call takes: the result cache for a cacheable tool, admission, then
// a fresh instance under the tool's policy. Task support
// (execution.taskSupport) is a rule of MCP's tools/call, not of a direct
// call: Call runs any tool to its result. ev receives progress, status and
// logs and answers elicitation; it may be nil (elicitation is then
// unsupported, and the result is neither taken from nor put in the result
// cache). Direct calls share one tenant of the result cache. A guest that
// fails gives a *[GuestError], refused arguments an *[ArgumentsError]; see
// also [ErrUnknownTool] and [ErrBusy]. A Result with IsError set is the
// tool's own error answer.
func (s *Server) Call(ctx context.Context, tool string, args json.RawMessage, ev abi.Events) (*abi.Result, error) {
	res, _, err := s.CallAs(ctx, Caller{}, tool, args, ev)
	return res, err
}

// Caller is who makes a direct call ([Server.CallAs]), as tools/call
// names its caller from the request's authentication.
type Caller struct {
	// Tenant owns the call: results of a cacheable tool are shared within
	// it only. "" is the tenant of [Server.Call].
	Tenant string
	// User names a tenant of Config.TenantsFile, whose share of the instances
	// and the memory budget the call counts against; "" for none.
	User string
}

// CallAs is [Server.Call] for who: its result cache and quotas are
// who's. cacheHit reports that the result came from the result cache.
func (s *Server) CallAs(ctx context.Context, who Caller, tool string, args json.RawMessage, ev abi.Events) (res *abi.Result, cacheHit bool, err error) {
	err = s.directly(ctx, tool, func(c *catalog) (err error) {
		res, cacheHit, err = s.call(ctx, c, mcpserver.Caller{Tenant: who.Tenant, User: who.User}, tool, args, ev)
		return err
	})
	return res, cacheHit, err
}

// directly runs fn, a request of the library's own (a call, a read, a
// prompt, a completion), on the served catalog: counted in for Shutdown,
// once ready(ctx, tool) returns, with the catalog held until fn returns.
func (s *Server) directly(ctx context.Context, tool string, fn func(*catalog) error) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.direct++
	s.mu.Unlock()
	defer s.directDone()
	if err := s.ready(ctx, tool); err != nil {
		return err
	}
	c, release := s.acquire()
	defer release()
	return fn(c)
}

// ready returns, when tool is "", once the start is over (startDone); when
// tool is not "", as soon as a module serving tool has loaded, or once the
// modules found at start have all loaded or failed (each within the load
// timeout): a call of a tool whose module is still queued behind slow ones
// waits for it rather than be told the tool is unknown. Or it returns with
// ctx's error. Afterwards it returns at once: a later reload never makes a
// request wait.
func (s *Server) ready(ctx context.Context, tool string) error {
	done := s.started
	if tool != "" {
		done = s.loaded
	}
	for {
		select {
		case <-done:
			return nil
		default:
		}
		s.swapMu.Lock()
		c, swapped := s.catalog.Load(), s.swapped
		s.swapMu.Unlock()
		if _, ok := c.tool(tool); ok && tool != "" {
			return nil
		}
		select {
		case <-done:
			return nil
		case <-swapped:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// acquire returns the served catalog with a reference held; the caller
// releases it when the work that uses it has ended.
func (s *Server) acquire() (*catalog, func()) {
	for {
		// A catalog is retired only after its successor is stored, so a
		// failed hold finds the successor on the next load.
		if c := s.catalog.Load(); c.hold() {
			return c, c.drop
		}
	}
}

// ServeStdio serves one MCP session of newline-delimited JSON-RPC on in and
// out until in ends, ctx is done or the Server is shut down.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := s.mcp.ServeStdio(ctx, in, out)
	if errors.Is(err, mcpserver.ErrClosed) {
		return ErrServerClosed
	}
	return err
}

// Handler returns the Streamable HTTP handler; it serves the MCP endpoint
// at [HTTPPath], and the probes [HealthPath] (200 while the process
// serves) and [ReadyPath] (200 once the modules found at start have loaded
// or failed; 503 before, while the task store is unreachable, and once
// shutting down). Use it to mount the
// server in an http.Server of your own; [Server.Serve] does that for you
// and is stopped by Shutdown and Close.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", s.edge) // the MCP endpoint, and its metadata document with auth
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET "+ReadyPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if why := s.notReady(); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, why+"\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	return mux
}

// Probe paths of [Server.Handler].
const (
	HealthPath = "/healthz"
	ReadyPath  = "/readyz"
)

// notReady says why the server should not be sent traffic, or "".
func (s *Server) notReady() string {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return "shutting down"
	}
	select {
	case <-s.started:
	default:
		return "loading tools"
	}
	if s.store != nil && s.store.Unavailable() != nil {
		return "task store unreachable"
	}
	return ""
}

// Serve accepts Streamable HTTP connections on l until the Server is shut
// down or closed; it then returns ErrServerClosed. Serve closes l.
//
// Each connection must send its request headers within 10 s and its body
// within ReadTimeout, and is closed after IdleTimeout idle; a response
// stream has no time limit as long as the client reads it (each write must
// complete within 30 s). At most MaxConnections are open at once, and
// MaxConnectionsPerAddress from one client address; at either bound an
// idle keep-alive connection is closed to admit a new one (see
// [Config.MaxConnections]).
func (s *Server) Serve(l net.Listener) error {
	total, perAddr := s.cfg.connectionLimits()
	lim := mcphttp.LimitConnections(l, total, perAddr)
	lim.Refused = func(addr net.Addr) {
		s.log.Debug("connection refused: its address has as many busy connections as it may", "addr", addr.String(), "max", perAddr)
	}
	connState := lim.ConnState
	if hook := s.cfg.connState; hook != nil {
		connState = func(c net.Conn, st http.ConnState) { lim.ConnState(c, st); hook(c, st) }
	}
	l = lim
	read := cmp.Or(s.cfg.ReadTimeout, 30*time.Second)
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: min(read, 10*time.Second),
		ReadTimeout:       read, // net/http clears it once the body is read: streams outlive it
		IdleTimeout:       cmp.Or(s.cfg.IdleTimeout, 2*time.Minute),
		MaxHeaderBytes:    64 << 10,
		ConnState:         connState, // the limit learns from it which connections are idle
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[hs] = l
	s.mu.Unlock()
	err := hs.Serve(l)
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || errors.Is(err, http.ErrServerClosed) {
		return ErrServerClosed
	}
	return err
}

// directDone counts a direct call out, and tells a waiting Shutdown when it
// was the last.
func (s *Server) directDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.direct--
	if s.direct == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// Shutdown stops the server gracefully: it stops accepting connections and
// new tool calls (they get a clear "shutting down" error, and Server.Call
// [ErrServerClosed]), lets the calls and tasks in flight finish — MCP's
// and the library's own — answers blocked tasks/result requests as their
// tasks end, and then closes the server. When ctx ends first, the work
// still running is cancelled (its clients are told the server shut down)
// and Shutdown returns ctx's error after closing.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mcp.BeginDrain()
	s.mu.Lock()
	s.closed = true
	for _, l := range s.listeners {
		l.Close() // stop accepting; connections already open keep being served
	}
	var idle <-chan struct{}
	if s.direct > 0 {
		s.idle = make(chan struct{})
		idle = s.idle
	}
	s.mu.Unlock()
	s.stop() // no more reloads
	err := s.mcp.Drain(ctx)
	if idle != nil && err == nil {
		select {
		case <-idle:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	return errors.Join(err, s.Close())
}

// Close stops the server at once: listeners and sessions close, blocked
// requests return, running calls and tasks are cancelled, the watcher stops
// and compiled modules are freed. Every goroutine the server started is
// gone when Close returns.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.stop()
		s.wg.Wait()
		s.startOnce.Do(func() { close(s.started) }) // nothing waits for loads any more
		s.loadedOnce.Do(func() { close(s.loaded) })
		// Release blocked requests first, so closing connections does not
		// wait for them.
		if s.edge != nil {
			s.edge.Close()
		}
		if s.mcp != nil {
			s.mcp.Close()
		}
		s.mu.Lock()
		for hs := range s.listeners {
			hs.Close()
		}
		clear(s.listeners)
		s.mu.Unlock()
		s.logResultCache("close")
		s.closeErr = s.closeParts()
	})
	return s.closeErr
}

func (s *Server) closeParts() error {
	var errs []error
	if s.tenantWatch != nil {
		errs = append(errs, s.tenantWatch.Close())
	}
	if a := s.tenants.Swap(nil); a != nil {
		a.Release()
	}
	if s.watcher != nil {
		errs = append(errs, s.watcher.Close())
	}
	s.loads.Close()
	errs = append(errs, s.engine.Close()) // writes its last records through the store
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	errs = append(errs, s.rt.Close(context.Background()))
	return errors.Join(errs...)
}

// watch is the reload loop, owned by the Server: each new snapshot of the
// directory, and each batch of modules that finished loading in the
// background, becomes a catalog, which replaces the served one in one
// pointer swap.
//
// It also rebuilds when the reservation of a removed module's tool names
// ends (Policy.NameGrace), so that a module refused for such a name serves
// it from then on without waiting for another change.
func (s *Server) watch(ctx context.Context) {
	defer s.wg.Done()
	var changes <-chan *plugins.Snapshot
	if s.watcher != nil {
		changes = s.watcher.Changes()
	}
	reserved := time.NewTimer(time.Hour)
	defer reserved.Stop()
	for {
		var expired <-chan time.Time
		if until, ok := s.catalog.Load().gen.ReservedUntil(); ok {
			reserved.Reset(time.Until(until))
			expired = reserved.C
		}
		select {
		case <-ctx.Done():
			return
		case snap, ok := <-changes:
			if !ok {
				changes = nil
				continue
			}
			s.reload(ctx, snap)
		case <-s.loads.Finished():
			s.refresh(ctx)
		case <-expired:
			s.refresh(ctx)
		}
	}
}

// reload is a reload's four steps: build the next generation from snap
// (loading only what changed) and its catalog, swap the catalog in, tell
// clients when the tool list changed, and release the modules nothing
// serves any more.
func (s *Server) reload(ctx context.Context, snap *plugins.Snapshot) {
	if snap == nil {
		return
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.rebuild(ctx, snap)
}

// refresh rebuilds the served snapshot, to take the loads that finished.
// It reads the snapshot under reloadMu: read before it, a reload of a
// newer snapshot running meanwhile would be undone.
func (s *Server) refresh(ctx context.Context) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.rebuild(ctx, s.catalog.Load().gen.Snapshot())
}

// Rescan asks for a rescan of the tool directory now (after the quiet
// time), for a change the file-system watcher cannot see, such as on a
// network file system; the CLI calls it on SIGHUP. It does nothing for a
// server on a fixed set of modules.
func (s *Server) Rescan() {
	if s.watcher != nil {
		s.watcher.Rescan()
	}
}

// SetPolicy replaces the operator's policy while the server runs (nil:
// the defaults). Its per-module and per-tool parts — limits, grants,
// concurrency, the result cache — apply to calls dispatched from now on,
// through a new catalog built at once from the modules already loaded;
// calls and tasks running keep the policy they started with. The
// server-wide bounds (maxInstances, memoryBudgetMiB, maxCodeMiB,
// loadTimeout) are fixed when the server starts: a change to them is
// returned as a warning and takes effect at the next start. A module is
// loaded, once per content, within the load limits of the policy in force
// then (its tools' largest memoryMiB): a module refused at load for its
// memory stays refused until its file changes or the server restarts. An
// invalid policy is an error and changes nothing.
func (s *Server) SetPolicy(p *Policy) (warnings []string, err error) {
	if p != nil {
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	old, now := s.cfg.Policy.Bounds(), p.Bounds()
	for _, f := range []struct {
		name     string
		old, new any
	}{
		{"maxInstances", old.MaxInstances, now.MaxInstances},
		{"memoryBudgetMiB", old.MemoryBudgetMiB, now.MemoryBudgetMiB},
		{"maxCodeMiB", old.MaxCodeMiB, now.MaxCodeMiB},
		{"loadTimeout", old.LoadTimeout, now.LoadTimeout},
	} {
		if f.old != f.new {
			warnings = append(warnings, fmt.Sprintf("%s changed from %v to %v: it takes effect when the server restarts", f.name, f.old, f.new))
		}
	}
	s.cfg.Policy = p
	s.loadPolicy.Store(p)
	s.rebuild(context.Background(), s.catalog.Load().gen.Snapshot())
	return warnings, nil
}

// rebuild is reload's work; reloadMu is held.
func (s *Server) rebuild(ctx context.Context, snap *plugins.Snapshot) {
	start := time.Now()
	prev := s.catalog.Load()
	var prevGen *generation
	if prev != nil {
		prevGen = prev.gen
	}
	gen, released := plugins.Build(ctx, prevGen, snap, s.loads, s.cfg.Policy.Rules(snap))
	s.loads.Keep(snap)
	next := s.buildCatalog(gen, prev)
	if prev != nil {
		prev.succeed(next)
	}
	// Before the swap: whoever sees the new catalog finds its problems
	// warned about.
	known := map[string]bool{} // problems the last catalog had: warned about already
	if prev != nil {
		for _, p := range prev.problems {
			known[p.String()] = true
		}
	}
	for _, p := range next.problems {
		var ce *plugins.ConflictError
		switch {
		case errors.Is(p.Err, plugins.ErrLoading):
		case known[p.String()]:
			s.log.Debug("tool problem, as before", "problem", p.String())
		case errors.As(p.Err, &ce):
			// Both files, as fields of their own.
			s.log.Warn("tool problem", "problem", p.String(), "tool", ce.Tool, "file", p.Path, "ownerFile", ce.OwnerPath, "owner", ce.Owner, "why", ce.Why)
		default:
			s.log.Warn("tool problem", "problem", p.String())
		}
	}
	// Before the swap: whoever sees the new catalog finds the results of
	// the versions it no longer serves gone.
	s.dropCachedResults(prev, next)
	s.publish(next)
	s.logResultCache("reload")
	if prev == nil && gen.Loading() > 0 {
		s.logLoading(gen.Loading())
	}
	if startDone(gen) {
		s.startOnce.Do(func() {
			// Before the close: whoever waited for the start finds the
			// line written.
			msg := fmt.Sprintf("loaded %s from %s in %v", plural(len(next.list), "tool"), plural(len(gen.Modules()), "module"), time.Since(s.begun).Round(time.Millisecond))
			attrs := []any{"tools", len(next.list), "modules", len(gen.Modules()), "problems", len(next.problems)}
			if n := gen.Loading(); n > 0 {
				msg += fmt.Sprintf(" (%s still loading after %s hit a load limit: served when loaded)", plural(n, "module"), plural(gen.Limited(), "module"))
				attrs = append(attrs, "loading", n)
			}
			s.log.Info(msg, append(attrs, "duration", time.Since(s.begun))...)
			if len(gen.Modules()) == 0 && len(next.problems) == 0 && s.cfg.ToolsDir != "" {
				s.log.Warn("the tool directory holds no .wasm modules: nothing is served until one is added (it is watched)", "dir", s.cfg.ToolsDir)
			}
			close(s.started)
		})
	}
	if gen.Loading() == 0 {
		s.loadedOnce.Do(func() { close(s.loaded) })
	}
	if s.mcp != nil && prev != nil {
		s.notifyChanges(prev, next)
	}
	switch {
	case prev == nil:
		closeModules(released) // none: there was no generation before
	case s.cfg.CancelRemoved:
		// The calls and tasks running on a removed or replaced module end
		// now; requests holding the old catalog get a clear error.
		for _, m := range released {
			m.Abort()
		}
		prev.retire(nil)
	default:
		// Requests and tasks holding the old catalog finish on it; its
		// modules that the new one does not use close after the last.
		prev.retire(released)
	}
	s.log.Info("tools reloaded", "generation", gen.Seq(), "modules", len(gen.Modules()),
		"tools", len(next.list), "loading", gen.Loading(), "released", len(released), "duration", time.Since(start))
}

// startDone reports whether the start is over for those who wait for it
// (tools/list, Tools, Problems, /readyz): every module found at start has
// loaded or failed; or every module the policy names has, and a module
// has hit a load limit, so that the rest may be queued behind slow or
// failing modules: they are served, and announced, as they load.
func startDone(gen *generation) bool {
	return gen.Loading() == 0 || (gen.LoadingKnown() == 0 && gen.Limited() > 0)
}

// logLoading says, once at start, that n modules are loading and why that
// may take a while: a module compiles to native code before it serves (a
// large Go module about a second), unless the compile cache holds it.
// Together with the "loaded" line written when they are done, it is what
// an operator sees of a slow first start.
func (s *Server) logLoading(n int) {
	msg := fmt.Sprintf("compiling %s in the background (no compile cache: every start compiles them)", plural(n, "module"))
	switch {
	case s.cfg.CacheDir != "" && s.warmCache:
		msg = fmt.Sprintf("loading %s in the background (from the compile cache at %s; a module not in it compiles)", plural(n, "module"), s.cfg.CacheDir)
	case s.cfg.CacheDir != "":
		msg = fmt.Sprintf("compiling %s in the background (a first run fills the compile cache at %s; later starts read it)", plural(n, "module"), s.cfg.CacheDir)
	}
	s.log.Info(msg, "modules", n, "cacheDir", s.cfg.CacheDir)
}

// plural is "1 module", "2 modules".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// publish swaps c in and wakes those waiting for a swap.
func (s *Server) publish(c *catalog) {
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	s.metrics.served(c)
	s.catalog.Store(c)
	close(s.swapped)
	s.swapped = make(chan struct{})
}

// awaitCatalog blocks until cond holds for the served catalog or ctx is
// done; it wakes on each swap, never polls.
func (s *Server) awaitCatalog(ctx context.Context, cond func(*catalog) bool) error {
	for {
		s.swapMu.Lock()
		c, swapped := s.catalog.Load(), s.swapped
		s.swapMu.Unlock()
		if cond(c) {
			return nil
		}
		select {
		case <-swapped:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// cacheKeyFile is the compile cache's key file: Config.CacheKeyFile, or
// its default when the compile cache is on ("" when it is off).
func cacheKeyFile(cfg Config) (string, error) {
	if cfg.CacheDir == "" || cfg.Interpreter || cfg.CacheKeyFile != "" {
		return cfg.CacheKeyFile, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("host: the compile cache needs a key file, and there is no default place for one (%v): name one, or turn the compile cache off", err)
	}
	return filepath.Join(dir, "wasmtask", "compile-cache.key"), nil
}

func (c *Config) loader(rt *wasmrt.Runtime, pol *atomic.Pointer[Policy]) plugins.Loader[*wasmrt.Module] {
	var l plugins.Loader[*wasmrt.Module] = loader{rt, pol}
	if c.wrapLoader != nil {
		l = c.wrapLoader(l)
	}
	return l
}

// loader compiles modules for plugins.Build, each within the load limits
// the policy in force gives it (Policy.LoadLimits).
type loader struct {
	rt  *wasmrt.Runtime
	pol *atomic.Pointer[Policy]
}

func (l loader) Load(ctx context.Context, m plugins.Module, wasm []byte) (*wasmrt.Module, *abi.Manifest, error) {
	mod, err := l.rt.Load(ctx, m.Name, wasm, l.pol.Load().LoadLimits(m))
	if err != nil {
		return nil, nil, err
	}
	return mod, mod.Manifest(), nil
}

func (l loader) Release(m *wasmrt.Module) {
	if m != nil {
		m.Close(context.Background())
	}
}
