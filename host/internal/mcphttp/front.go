package mcphttp

import (
	"fmt"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// The HTTP front: the cheap checks every request passes before anything
// reads its body or touches a session. A refused request changes nothing,
// is answered with a status and a short reason, and is audited.

// Defaults of the front's bounds ([Config]).
const (
	DefaultMaxSessions           = 1024
	DefaultMaxSessionsPerTenant  = 64
	DefaultMaxRequestsPerSession = 64
	DefaultMaxRequestsPerTenant  = 256
	DefaultWriteTimeout          = 30 * time.Second
)

// refuse answers a request the front does not let through.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	var tenant string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		tenant = ti.UserID
	}
	h.denied(r, tenant, status, reason)
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	http.Error(w, reason, status)
}

// denied reports a refusal to Config.Denied.
func (h *Handler) denied(r *http.Request, tenant string, status int, reason string) {
	if h.cfg.Denied != nil {
		h.cfg.Denied(r.Method, r.URL.Path, tenant, status, reason)
	}
}

// screen is the first check of every request: method, Host, Origin and,
// for a POST, its content type. It returns false when it refused it.
func (h *Handler) screen(w http.ResponseWriter, r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		h.refuse(w, r, http.StatusMethodNotAllowed, "method not allowed")
		return false
	}
	if !h.hostAllowed(r.Host) || h.loopbackOnly(r) {
		h.refuse(w, r, http.StatusForbidden, fmt.Sprintf("forbidden: host %q is not allowed", r.Host))
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o, r.Host) {
		h.refuse(w, r, http.StatusForbidden, fmt.Sprintf("forbidden: origin %q is not allowed", o))
		return false
	}
	if r.Method == http.MethodPost {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			h.refuse(w, r, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
			return false
		}
	}
	return true
}

// hostAllowed checks the Host header against Config.AllowedHosts (a name
// matches with any port; "name:port" only that port). An empty list
// allows any host, except that a loopback listener takes loopback names
// only (see loopbackOnly).
func (h *Handler) hostAllowed(host string) bool {
	if len(h.cfg.AllowedHosts) == 0 {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.Trim(name, "[]")
	return slices.ContainsFunc(h.cfg.AllowedHosts, func(a string) bool {
		return strings.EqualFold(a, host) || strings.EqualFold(strings.Trim(a, "[]"), name)
	})
}

// loopbackOnly reports a request to a loopback listener that names a
// host other than a loopback address or localhost, when no AllowedHosts
// are set: a DNS-rebinding page reaches a local server under its own
// name (the MCP security best practices' "local server compromise").
func (h *Handler) loopbackOnly(r *http.Request) bool {
	if len(h.cfg.AllowedHosts) > 0 {
		return false
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && la != nil && isLoopback(la.String()) && !isLoopback(r.Host)
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

// originAllowed: a browser's Origin must be the endpoint's own origin or
// one of Config.AllowedOrigins (the MCP transport spec's DNS-rebinding
// defence: a foreign Origin gets 403).
func (h *Handler) originAllowed(origin, host string) bool {
	if slices.ContainsFunc(h.cfg.AllowedOrigins, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) }) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

// admitSession checks, for a request that would open a session (a POST
// without a session ID), the caps on sessions in total and per tenant. A
// request let through holds a place until it ends (release), by which time
// the session it opened, if any, is counted among the sessions: parallel
// requests cannot pass the caps together. It returns false when it refused
// the request.
func (h *Handler) admitSession(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	h.mu.Lock()
	total, mine := h.sessionCountsLocked(user)
	refuse := ""
	switch {
	case total >= h.cfg.MaxSessions:
		refuse = "total"
	case user != "" && mine >= h.cfg.MaxSessionsPerTenant:
		refuse = "tenant"
	default:
		h.opening[""]++
		if user != "" {
			h.opening[user]++
		}
	}
	h.mu.Unlock()
	switch refuse {
	case "total":
		h.refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("too many sessions: the server holds its maximum of %d; try again later", h.cfg.MaxSessions))
		return nil, false
	case "tenant":
		h.refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many sessions: this tenant holds its maximum of %d; close one (DELETE) or let one expire", h.cfg.MaxSessionsPerTenant))
		return nil, false
	}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		dec := func(k string) {
			if h.opening[k]--; h.opening[k] <= 0 {
				delete(h.opening, k)
			}
		}
		dec("")
		if user != "" {
			dec(user)
		}
	}, true
}

// sessionCountsLocked counts the sessions, open and being opened, in
// total and of user ("" counts none). mu is held.
func (h *Handler) sessionCountsLocked(user string) (total, mine int) {
	total, mine = len(h.sessions)+h.opening[""], h.opening[user]
	if user == "" {
		return total, 0
	}
	return total, mine + h.perUser[user]
}

// enterRequest counts a request in flight — of session id (when it names
// one) and of its tenant (when authenticated) — refusing it past
// Config.MaxRequestsPerSession or MaxRequestsPerTenant; the returned func
// counts it out. The tenant's bound keeps one tenant's long-polls, over
// all its sessions, from holding every connection. Requests with neither
// a session nor a tenant (2026-07-28 requests without authentication, and
// session openings) share the tenant bound as one anonymous tenant.
func (h *Handler) enterRequest(w http.ResponseWriter, r *http.Request, id string) (func(), bool) {
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	sessionKey, tenantKey := "s:"+id, "t:"+user
	anonymous := user == "" && id == ""
	if anonymous {
		tenantKey = "a:"
	}
	h.mu.Lock()
	switch {
	case anonymous && h.inFlight[tenantKey] >= h.cfg.MaxRequestsPerTenant:
		h.mu.Unlock()
		h.refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many requests in flight without a session or a tenant (at most %d)", h.cfg.MaxRequestsPerTenant))
		return nil, false
	case id != "" && h.inFlight[sessionKey] >= h.cfg.MaxRequestsPerSession:
		h.mu.Unlock()
		h.refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many requests in flight on this session (at most %d)", h.cfg.MaxRequestsPerSession))
		return nil, false
	case user != "" && h.inFlight[tenantKey] >= h.cfg.MaxRequestsPerTenant:
		h.mu.Unlock()
		h.refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many requests in flight for this tenant (at most %d)", h.cfg.MaxRequestsPerTenant))
		return nil, false
	}
	var keys []string
	if id != "" {
		keys = append(keys, sessionKey)
	}
	if user != "" || anonymous {
		keys = append(keys, tenantKey)
	}
	for _, k := range keys {
		h.inFlight[k]++
	}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		for _, k := range keys {
			if h.inFlight[k]--; h.inFlight[k] == 0 {
				delete(h.inFlight, k)
			}
		}
		h.mu.Unlock()
	}, true
}

// deadlineWriter gives every write of a response its own deadline: a
// client that stops reading is cut off after WriteTimeout, while a stream
// the client keeps reading (an SSE answer, a tasks/result that waits for
// hours) lives as long as it needs.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func newDeadlineWriter(w http.ResponseWriter, timeout time.Duration) *deadlineWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *deadlineWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(b)
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Flush() {
	w.arm()
	_ = w.rc.Flush()
}

// rateLimits keeps a token bucket per tenant for Config.RequestRate.
type rateLimits struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

// bucket is a token bucket: rate tokens a second, at most burst.
type bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// maxBuckets bounds the buckets kept: tenants come from the operator's
// file, but a reload may rename them; past this, the map starts over.
const maxBuckets = 4096

// take spends one token of tenant's bucket, (re)made for rate and burst;
// when none is left it says how long until one is.
func (l *rateLimits) take(tenant string, rate float64, burst int, now time.Time) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[tenant]
	if b == nil || b.rate != rate || b.burst != float64(burst) {
		if l.buckets == nil || len(l.buckets) >= maxBuckets {
			l.buckets = map[string]*bucket{}
		}
		b = &bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
		l.buckets[tenant] = b
	}
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// admitRate applies the tenant's request rate; it returns false when it
// refused the request with 429 and Retry-After.
func (h *Handler) admitRate(w http.ResponseWriter, r *http.Request) bool {
	if h.cfg.RequestRate == nil {
		return true
	}
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil || ti.UserID == "" {
		return true
	}
	rate, burst := h.cfg.RequestRate(ti.UserID)
	if rate <= 0 {
		return true
	}
	ok, wait := h.rates.take(ti.UserID, rate, max(burst, 1), time.Now())
	if ok {
		return true
	}
	secs := int(math.Ceil(wait.Seconds()))
	h.denied(r, ti.UserID, http.StatusTooManyRequests, "request rate")
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	http.Error(w, fmt.Sprintf("too many requests: this tenant may send %g a second; retry after %d s", rate, max(secs, 1)), http.StatusTooManyRequests)
	return false
}
