package mcphttp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the Handler serves MCP.
const Path = "/mcp"

// Headers of the Streamable HTTP transport.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	nameHeader            = "Mcp-Name"
	methodHeader          = "Mcp-Method"
)

// modernVersion is the first protocol version served without sessions.
const modernVersion = "2026-07-28"

// MCP is the protocol layer behind the edge (the MCP room's Server).
type MCP interface {
	// Connect serves one session over conn for tenant user ("" without
	// authentication) until conn's Read fails or end is called. end
	// releases the session's requests in flight (they are answered) and
	// closes it; it may be called more than once.
	Connect(conn mcp.Connection, user string) (end func(), err error)
	// Stateless is the go-sdk server that answers 2026-07-28 requests.
	Stateless() *mcp.Server
	// MayReportProgress reports whether a tools/call of tool can send
	// progress notifications before its result.
	MayReportProgress(ctx context.Context, tool string) bool
	// CheckParamHeaders checks the Mcp-Param-* headers of a 2026-07-28
	// tools/call of tool by tenant user with args (SEP-2243); the error
	// is the client's text for a -32020 refusal.
	CheckParamHeaders(ctx context.Context, user, tool string, args json.RawMessage, header func(name string) []string) error
	// ClientMessage is the text a client reads for an error message
	// go-sdk wrote (it may quote Go types).
	ClientMessage(msg string) string
}

// Config configures a [Handler]. MCP is required; every other field has a
// default given in its comment.
type Config struct {
	MCP MCP
	// Logger receives the edge's own log lines (go-sdk's handler log for
	// 2026-07-28 requests included). Default: discard.
	Logger *slog.Logger
	// Denied is told of each request refused before MCP: its method and
	// path, who asked (when known), the status and why. It writes the audit line and counts the
	// refusal; it must be quick. Nil: nobody.
	Denied func(method, path, tenant string, status int, reason string)
	// Auth, when set, requires a bearer token on every request and binds
	// sessions and tasks to the tenant it names. Nil: requests carry no
	// identity.
	Auth *Auth
	// AllowedHosts are the Host header values requests may carry (a name
	// matches with any port, "name:port" that port only); others get 403.
	// Empty: any, except that a loopback listener takes loopback names
	// only.
	AllowedHosts []string
	// AllowedOrigins are the browser origins ("https://app.example.com")
	// allowed besides the endpoint's own; a request with another Origin
	// gets 403 (the transport spec's DNS-rebinding defence).
	AllowedOrigins []string
	// MaxSessions bounds the open sessions, MaxSessionsPerTenant those of
	// one authenticated tenant; a request that would open one more gets
	// 503 or 429. MaxRequestsPerSession and MaxRequestsPerTenant bound the
	// requests in flight of one session and of one tenant over all its
	// sessions (429 past them). Defaults 1024, 64, 64 and 256.
	MaxSessions, MaxSessionsPerTenant, MaxRequestsPerSession, MaxRequestsPerTenant int
	// RequestRate is an authenticated tenant's request rate: perSecond
	// requests a second on average, bursts of burst; past it a request
	// gets 429 with Retry-After. perSecond 0: no limit. Nil: none.
	RequestRate func(tenant string) (perSecond float64, burst int)
	// WriteTimeout cuts off a client that does not read a response for
	// this long; each write has its own deadline, so a stream the client
	// keeps reading lasts as long as it needs. Default 30s.
	WriteTimeout time.Duration
	// MaxMessageBytes bounds one POST body. Default 4 MiB.
	MaxMessageBytes int
	// SessionTimeout ends a session with no request in flight for this
	// long. Default 30 min; negative: never.
	SessionTimeout time.Duration
}

// errClosed refuses a session opened as the Handler closes.
var errClosed = errors.New("the server is closed")

// Defaults of [Config].
const (
	DefaultMaxMessageBytes = 4 << 20
	DefaultSessionTimeout  = 30 * time.Minute
)

// Handler is the Streamable HTTP edge: the front checks, then the
// sessions of the 2025-11-25 era (its own table) and the stateless
// requests of 2026-07-28 (go-sdk's handler). It is safe for concurrent use.
type Handler struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session // by session ID
	perUser  map[string]int      // open sessions by authenticated tenant
	inFlight map[string]int      // requests in flight, by session ("s:") and tenant ("t:", "a:")
	opening  map[string]int      // requests that may open a session, in flight: "" all, else by tenant

	rates rateLimits

	modern     *mcp.StreamableHTTPHandler // 2026-07-28 requests, answered on an event stream
	modernJSON *mcp.StreamableHTTPHandler // the same, answered as one JSON body
}

// New returns the edge for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.MCP == nil {
		return nil, errors.New("Config.MCP is nil")
	}
	if cfg.MaxMessageBytes < 0 {
		return nil, errors.New("negative Config.MaxMessageBytes")
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.MaxMessageBytes = cmp.Or(cfg.MaxMessageBytes, DefaultMaxMessageBytes)
	cfg.SessionTimeout = cmp.Or(cfg.SessionTimeout, DefaultSessionTimeout)
	cfg.MaxSessions = cmp.Or(cfg.MaxSessions, DefaultMaxSessions)
	cfg.MaxSessionsPerTenant = cmp.Or(cfg.MaxSessionsPerTenant, DefaultMaxSessionsPerTenant)
	cfg.MaxRequestsPerSession = cmp.Or(cfg.MaxRequestsPerSession, DefaultMaxRequestsPerSession)
	cfg.MaxRequestsPerTenant = cmp.Or(cfg.MaxRequestsPerTenant, DefaultMaxRequestsPerTenant)
	cfg.WriteTimeout = cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout)
	h := &Handler{
		cfg:      cfg,
		log:      cfg.Logger,
		sessions: make(map[string]*session),
		perUser:  make(map[string]int),
		inFlight: make(map[string]int),
		opening:  make(map[string]int),
	}
	// 2026-07-28 requests are stateless: go-sdk's handler serves each on
	// its own and ends its handler when its POST ends (RATIONALE: "Why
	// does go-sdk still serve 2026-07-28 requests?").
	server := func(*http.Request) *mcp.Server { return cfg.MCP.Stateless() }
	opts := mcp.StreamableHTTPOptions{
		Logger:                       cfg.Logger,
		Stateless:                    true,
		PropagateRequestCancellation: true,
		// The front has read the body under MaxMessageBytes already, and
		// checked Host against the loopback rule (loopbackOnly).
		DisableLocalhostProtection: true,
	}
	h.modern = mcp.NewStreamableHTTPHandler(server, &opts)
	opts.JSONResponse = true
	h.modernJSON = mcp.NewStreamableHTTPHandler(server, &opts)

	var endpoint http.Handler = http.HandlerFunc(h.serve)
	if cfg.Auth != nil {
		endpoint = h.authenticate(endpoint)
	}
	checked := endpoint
	h.mux = http.NewServeMux()
	h.mux.Handle(Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		closed := h.closed
		h.mu.Unlock()
		if closed {
			http.Error(w, "the server is closed", http.StatusServiceUnavailable)
			return
		}
		if h.screen(w, r) {
			checked.ServeHTTP(w, r)
		}
	}))
	if cfg.Auth != nil {
		h.mux.Handle(ResourceMetadataPath, h.resourceMetadata())
		h.mux.Handle(rootMetadataPath, h.resourceMetadata()) // for clients that look at the root first
	}
	return h, nil
}

// ServeHTTP serves MCP at [Path] (other paths get 404) and, with Auth, the
// Protected Resource Metadata document.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Close refuses new requests and ends every session; the requests those
// sessions had in flight are answered first (the MCP layer releases
// them). It is idempotent.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	open := make([]*session, 0, len(h.sessions))
	for _, sess := range h.sessions {
		open = append(open, sess)
	}
	h.mu.Unlock()
	var ended sync.WaitGroup
	for _, sess := range open {
		ended.Go(sess.end)
	}
	ended.Wait()
}

// serve is a request that passed the front's first checks (and
// authentication): its rate, then the era it speaks.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	if !h.admitRate(w, r) {
		return
	}
	version := r.Header.Get(protocolVersionHeader)
	if version != "" && version < modernVersion && !slices.Contains(mcp.SupportedProtocolVersions(), version) {
		h.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("unsupported protocol version %q (supported: %s)", version, strings.Join(mcp.SupportedProtocolVersions(), ", ")))
		return
	}
	// A request that speaks 2026-07-28 (its header says so; go-sdk holds
	// the body's _meta to the same version) opens no session.
	if version >= modernVersion {
		h.serveModern(w, r)
		return
	}
	h.serveSession(w, r)
}

// readBody reads a POST body under MaxMessageBytes, answering 413 or 400
// when it cannot.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(h.cfg.MaxMessageBytes)))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return nil, false
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

// tenantOf is the authenticated tenant of r, "" without authentication.
func tenantOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// accepts reports whether the Accept header values admit JSON and an
// event stream (a POST must take both; a GET an event stream).
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, v := range values {
		for raw := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}
