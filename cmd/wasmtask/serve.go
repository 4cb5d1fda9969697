package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

const serveUsage = `usage: wasmtask serve [flags]

Serves MCP on stdio (default) or Streamable HTTP (--http), with the tools of
--tools DIR (watched and reloaded) or the embedded default tools.

Flags:
`

// serveSetup is what serve's flags ask for, checked.
type serveSetup struct {
	cfg                     host.Config // Logger writes to the stderr given to parseServe
	logger                  *slog.Logger
	stderr                  io.Writer
	jsonLog                 bool // --log-format json: every stderr line is a JSON object
	httpAddr, metricsAddr   string
	policyFile, tenantsFile string
	drain                   time.Duration
}

// parseServe parses and checks serve's flags: their values, that an HTTP
// address off loopback has authentication and the Host names clients use,
// and the policy file. It listens on nothing and creates no directory.
func parseServe(args []string, stderr io.Writer) (*serveSetup, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), serveUsage); fs.PrintDefaults() }
	httpAddr := fs.String("http", "", "serve Streamable HTTP on `ADDR` (endpoint "+host.HTTPPath+`); a bare ":PORT" binds 127.0.0.1`)
	toolsDir := fs.String("tools", "", "serve the `DIR`ectory of .wasm tool modules, reloading on change (default: the embedded tools)")
	policyFile := fs.String("policy", "", "operator sandbox policy `FILE` (JSON: instance and memory bounds, limits, and grants by module file name; see README)")
	cacheDir := fs.String("cache-dir", defaultCacheDir(), "compiled-code cache `DIR`, private to this user (it holds native code); empty disables")
	cacheMax := fs.Int("cache-max-mib", host.DefaultCacheMaxMiB, "bound on the compiled-code cache, in `MiB`; least recently used modules are evicted past it")
	cacheKey := fs.String("cache-key", "", "key `FILE` that authenticates the compiled-code cache's entries, outside --cache-dir and private to this user (mode 0600); created when absent (default wasmtask/compile-cache.key in the user's config directory)")
	resultTTL := fs.Duration("result-cache-max-ttl", host.DefaultResultCacheMaxTTL, "longest a cacheable tool's result is reused; 0 or negative turns the result cache off")
	resultEntries := fs.Int("result-cache-entries", host.DefaultResultCacheEntries, "bound on cached results, all clients together (each may hold half)")
	resultMiB := fs.Int("result-cache-mib", host.DefaultResultCacheMiB, "bound on cached results, in `MiB`, all clients together (each may hold half)")
	interp := fs.Bool("interpreter", false, "run guests in wazero's interpreter instead of its compiler")
	maxTTL := fs.Duration("max-ttl", 0, "maximum task TTL (default 24h)")
	defTTL := fs.Duration("default-ttl", 0, "task TTL when the client asks none (default 1h)")
	perClient := fs.Int("max-tasks-per-client", 0, "tasks running or queued per session or tenant; past it tools/call with a task is refused (default 32)")
	retained := fs.Int("retained-tasks", 0, "tasks kept, running and finished, all clients together (default 10000)")
	retainedPerClient := fs.Int("retained-tasks-per-client", 0, "tasks one session or tenant keeps; past it its own oldest finished results go, never another's (default a quarter of --retained-tasks)")
	retainedMiB := fs.Int("retained-result-mib", 0, "bytes of finished task results kept, in `MiB`, all clients together (default 256)")
	retainedMiBPerClient := fs.Int("retained-result-mib-per-client", 0, "bytes of results one session or tenant keeps, in `MiB` (default a quarter of --retained-result-mib)")
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGINT or SIGTERM, how long running calls and tasks may take to finish before they are cancelled (a second signal cancels them at once)")
	cancelRemoved := fs.Bool("cancel-removed", false, "cancel calls and tasks running on a module that is removed or replaced")
	verbose := fs.Bool("v", false, "log debug messages")
	tenantsFile := fs.String("tenants", "", "tenant `FILE` (JSON or YAML; watched): every HTTP request needs a bearer token of a tenant, static or JWT; see README")
	publicURL := fs.String("public-url", "", "the MCP endpoint's `URL` as clients reach it, for the OAuth metadata document (default: the URL each request was sent to)")
	allowedHosts := fs.String("allowed-hosts", "", "comma-separated Host header `NAMES` HTTP requests may carry (\"name\" any port, \"name:port\" that port); required on a non-loopback --http unless --public-url names the host")
	allowedOrigins := fs.String("allowed-origins", "", "comma-separated browser `ORIGINS` allowed besides the endpoint's own (a foreign Origin gets 403)")
	maxConns := fs.Int("max-connections", host.DefaultMaxConnections, "bound on open HTTP connections; at it, the idle keep-alive connection unused the longest is closed for a new one")
	maxConnsPerAddr := fs.Int("max-connections-per-address", 0, "bound on open HTTP connections from one client address (IPv4 address, IPv6 /64); past it the address's own idle connection goes, or the new one is refused (default an eighth of --max-connections, at least 8; -1: none, e.g. behind a proxy)")
	maxSessions := fs.Int("max-sessions", 0, "bound on open HTTP sessions (default 1024)")
	maxTenantSessions := fs.Int("max-sessions-per-tenant", 0, "bound on one tenant's open HTTP sessions (default 64)")
	insecure := fs.Bool("insecure-no-auth", false, "allow --http on a non-loopback address without --tenants: anyone who reaches it may use every tool")
	logFormat := fs.String("log-format", "text", "log `FORMAT` on stderr: text or json")
	store := fs.String("store", "", "keep tasks in NATS JetStream: a `URL` (nats://host:4222) that replicas share, or a directory for an embedded store in this process; finished results survive restarts (default: in memory)")
	storeKeys := fs.String("store-keys", "", "the task store's key `FILE` (the same on every replica; `wasmtask store-keys` writes one)")
	storeReplicas := fs.Int("store-replicas", 0, "how many NATS servers keep each of the task store's buckets (default: the cluster's size, at most 3; 1 without a cluster); a bucket that has more keeps them")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at /metrics on `ADDR`, apart from the MCP endpoint; a bare \":PORT\" binds 127.0.0.1 (default: no metrics endpoint)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	// stdout carries the protocol on stdio: the log goes to stderr.
	var logger *slog.Logger
	switch opts := (&slog.HandlerOptions{Level: level}); *logFormat {
	case "text":
		logger = slog.New(slog.NewTextHandler(stderr, opts))
	case "json":
		opts.ReplaceAttr = durationsInMilliseconds
		logger = slog.New(slog.NewJSONHandler(stderr, opts))
	default:
		return nil, fmt.Errorf("serve: --log-format is text or json, not %q", *logFormat)
	}

	cfg := host.Config{
		ToolsDir:                 *toolsDir,
		CacheDir:                 *cacheDir,
		CacheMaxMiB:              *cacheMax,
		CacheKeyFile:             *cacheKey,
		ResultCacheMaxTTL:        cmp.Or(*resultTTL, -1),
		ResultCacheEntries:       *resultEntries,
		ResultCacheMiB:           *resultMiB,
		Interpreter:              *interp,
		CancelRemoved:            *cancelRemoved,
		Logger:                   logger,
		Version:                  version,
		TenantsFile:              *tenantsFile,
		PublicURL:                *publicURL,
		AllowedHosts:             splitList(*allowedHosts),
		AllowedOrigins:           splitList(*allowedOrigins),
		MaxConnections:           *maxConns,
		MaxConnectionsPerAddress: *maxConnsPerAddr,
		MaxSessions:              *maxSessions,
		MaxSessionsPerTenant:     *maxTenantSessions,
	}
	if *tenantsFile != "" && *httpAddr == "" {
		// Tenants authenticate HTTP requests; a stdio session belongs to
		// whoever started the process, so the file would guard nothing.
		return nil, errors.New("serve: --tenants authenticates HTTP requests and needs --http ADDR; on stdio the session is the local user's (drop --tenants, or add --http)")
	}
	if *httpAddr != "" {
		hosts, err := checkHTTPExposure(loopbackDefault(*httpAddr), *tenantsFile != "", *insecure, cfg.AllowedHosts, *publicURL)
		if err != nil {
			return nil, err
		}
		cfg.AllowedHosts = hosts
	}
	if *store != "" {
		if strings.Contains(*store, "://") {
			cfg.Store.URL = *store
		} else {
			cfg.Store.Dir = *store
		}
		cfg.Store.KeysFile = *storeKeys
		cfg.Store.Replicas = *storeReplicas
		// A stdio session's tasks are the local user's: after a restart
		// the same user reads their stored results back.
		cfg.LocalOwner = localOwner()
	} else if *storeKeys != "" {
		return nil, errors.New("serve: --store-keys needs --store")
	} else if *storeReplicas != 0 {
		return nil, errors.New("serve: --store-replicas needs --store")
	}
	if *storeReplicas < 0 || *storeReplicas > 5 {
		return nil, fmt.Errorf("serve: --store-replicas %d: want 1 to 5 (JetStream's bound), or 0 for the cluster's size", *storeReplicas)
	}
	cfg.Tasks.MaxTTL = *maxTTL
	cfg.Tasks.DefaultTTL = *defTTL
	cfg.Tasks.MaxRunningPerOwner = *perClient
	cfg.Tasks.MaxTasks = *retained
	cfg.Tasks.MaxTasksPerOwner = *retainedPerClient
	cfg.Tasks.MaxResultBytes = int64(*retainedMiB) << 20
	cfg.Tasks.MaxResultBytesPerOwner = int64(*retainedMiBPerClient) << 20
	if *policyFile != "" {
		p, err := host.LoadPolicy(*policyFile)
		if err != nil {
			return nil, err
		}
		cfg.Policy = p
	}
	return &serveSetup{cfg: cfg, logger: logger, stderr: stderr, jsonLog: *logFormat == "json", httpAddr: *httpAddr, metricsAddr: *metricsAddr,
		policyFile: *policyFile, tenantsFile: *tenantsFile, drain: *drain}, nil
}

// durationsInMilliseconds writes a duration attribute x of a JSON log as
// xMs, a number of milliseconds, as MCP and the audit schema count time
// (slog's JSON handler would write integer nanoseconds).
func durationsInMilliseconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key+"Ms", float64(a.Value.Duration().Microseconds())/1000)
	}
	return a
}

// errLogged makes serve exit 1 after its JSON log recorded the error.
var errLogged = errors.New("serve failed (logged)")

// announce tells scripts an address serve chose (they may pass port 0):
// "wasmtask: listening on URL" in a text log, {"msg":"listening","url":…}
// in a JSON one.
func (set *serveSetup) announce(what, url string) {
	if set.jsonLog {
		set.logger.Info(what, "url", url)
		return
	}
	fmt.Fprintf(set.stderr, "wasmtask: %s on %s\n", what, url)
}

// runServe is `wasmtask serve`.
func runServe(args []string) error {
	set, err := parseServe(args, os.Stderr)
	if err != nil {
		return err
	}
	if err := serve(set); err != nil {
		if set.jsonLog {
			// The process's last line is JSON like every other.
			set.logger.Error("serve failed", "err", err)
			return errLogged
		}
		return err
	}
	return nil
}

// serve runs the server set describes until it is shut down.
func serve(set *serveSetup) error {
	cfg, logger := set.cfg, set.logger
	cfg.CacheDir = usableCacheDir(cfg.CacheDir, func(err error) { logger.Warn("compile cache disabled", "err", err) })

	srv, err := host.New(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	// Load problems are logged by the server as the tools load, in the
	// background: it answers clients meanwhile.
	logger.Info("serving", "version", version, "dir", cfg.ToolsDir, "http", set.httpAddr, "store", storeName(cfg.Store)) // "tools reloaded" lines count the tools as they load

	stopSignals := shutdownOnSignal(srv, logger, set.drain)
	defer stopSignals()
	stopHangup := reloadOnHangup(srv, logger, set.policyFile, set.tenantsFile)
	defer stopHangup()
	if set.metricsAddr != "" {
		stopMetrics, err := serveMetrics(srv, set, set.metricsAddr)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	if set.httpAddr == "" {
		err := srv.ServeStdio(context.Background(), os.Stdin, os.Stdout)
		if errors.Is(err, host.ErrServerClosed) {
			return nil
		}
		return err
	}
	l, err := net.Listen("tcp", loopbackDefault(set.httpAddr))
	if err != nil {
		return err
	}
	set.announce("listening", fmt.Sprintf("http://%s%s", l.Addr(), host.HTTPPath))
	err = srv.Serve(l)
	if errors.Is(err, host.ErrServerClosed) {
		return nil // stopSignals waits for the drain to end
	}
	return err
}

// shutdownOnSignal drains the server on the first SIGINT or SIGTERM: no new
// connections or tool calls, running calls and tasks get up to drain to
// finish, then the server closes. A second signal closes it at once. The
// returned func stops listening for signals and waits for the drain.
func shutdownOnSignal(srv *host.Server, logger *slog.Logger, drain time.Duration) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case sig := <-sigs:
			logger.Info("shutting down: draining calls and tasks", "signal", sig.String(), "timeout", drain)
			ctx, cancel := context.WithTimeout(context.Background(), drain)
			go func() {
				select {
				case <-sigs:
					logger.Warn("second signal: closing at once")
					cancel()
				case <-ctx.Done():
				}
			}()
			if err := srv.Shutdown(ctx); err != nil {
				logger.Warn("drain ended before the work did; the rest was cancelled", "err", err)
			}
			cancel()
		case <-quit:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(quit)
		<-done
	}
}

// loopbackDefault binds a bare ":PORT" to 127.0.0.1: listening on every
// interface is something an operator asks for by name.
func loopbackDefault(addr string) string {
	if h, port, err := net.SplitHostPort(addr); err == nil && h == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// serveMetrics serves srv's Prometheus metrics at /metrics on addr until
// the returned func, which closes the listener and waits for the serving
// goroutine.
func serveMetrics(srv *host.Server, set *serveSetup, addr string) (stop func(), err error) {
	l, err := net.Listen("tcp", loopbackDefault(addr))
	if err != nil {
		return nil, fmt.Errorf("serve: metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", srv.MetricsHandler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	set.announce("metrics", fmt.Sprintf("http://%s/metrics", l.Addr()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			set.logger.Error("metrics endpoint stopped", "err", err)
		}
	}()
	return func() { hs.Close(); <-done }, nil
}

// checkHTTPExposure decides whether the server may listen on addr, and
// returns the Host names its requests may carry. A loopback address needs
// nothing. Any other needs a tenant file (or --insecure-no-auth: whoever
// reaches it may use every tool) and the Host names clients use
// (--allowed-hosts, or the host of --public-url), so that the Host check
// holds whatever address is bound.
func checkHTTPExposure(addr string, auth, insecure bool, hosts []string, publicURL string) ([]string, error) {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("serve: --http %q: %v", addr, err)
	}
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("serve: --public-url %q is not an absolute URL", publicURL)
		}
		hosts = append(hosts, u.Host)
	}
	if ip := net.ParseIP(h); h == "localhost" || ip != nil && ip.IsLoopback() {
		if len(hosts) > 0 { // local clients still reach it by its own names
			hosts = append(hosts, "localhost", "127.0.0.1", "::1")
		}
		return hosts, nil
	}
	if !auth && !insecure {
		return nil, fmt.Errorf("serve: refusing to serve HTTP on %s without authentication: pass --tenants FILE, bind a loopback address, or pass --insecure-no-auth to let anyone who reaches it use every tool", addr)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("serve: --http on %s needs the Host names clients use: pass --allowed-hosts (or --public-url), so that requests for other names are refused", addr)
	}
	return hosts, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// reloadOnHangup makes SIGHUP rescan the tool directory, read the tenant
// file again, and, when the server runs with a policy file, read it again
// and apply it (an invalid file is logged and changes nothing). The
// returned func stops listening and waits for the goroutine.
func reloadOnHangup(srv *host.Server, logger *slog.Logger, policyFile, tenantsFile string) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-hup:
			case <-quit:
				return
			}
			logger.Info("SIGHUP: rescanning the tool directory", "policy", policyFile)
			srv.Rescan()
			if tenantsFile != "" {
				if err := srv.ReloadTenants(); err != nil {
					logger.Error("SIGHUP: tenant file not reloaded; the previous one stays in force", "err", err)
				}
			}
			if policyFile == "" {
				continue
			}
			p, err := host.LoadPolicy(policyFile)
			if err != nil {
				logger.Error("SIGHUP: policy not reloaded; the previous one stays in force", "err", err)
				continue
			}
			warnings, err := srv.SetPolicy(p)
			if err != nil {
				logger.Error("SIGHUP: policy not reloaded; the previous one stays in force", "err", err)
				continue
			}
			for _, w := range warnings {
				logger.Warn("SIGHUP: policy reloaded, but " + w)
			}
			logger.Info("SIGHUP: policy reloaded", "file", policyFile)
		}
	}()
	return func() {
		signal.Stop(hup)
		close(quit)
		<-done
	}
}

// usableCacheDir creates dir if needed and returns it, or "" (no disk
// cache) when it cannot be created: a cache is an optimisation, never a
// reason to fail.
func usableCacheDir(dir string, warn func(error)) string {
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		warn(err)
		return ""
	}
	return dir
}

// defaultCacheDir is wasmtask/ under the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache on Linux).
func defaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "wasmtask")
}

// localOwner names the local user who owns stdio sessions' tasks.
func localOwner() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "local:" + u.Username
	}
	return "local:uid-" + strconv.Itoa(os.Getuid())
}

// storeName says where tasks are kept, for the serving line.
func storeName(st host.StoreConfig) string {
	switch {
	case st.URL != "":
		return "nats " + st.URL
	case st.Dir != "":
		return "embedded, in " + st.Dir
	}
	return "memory"
}
