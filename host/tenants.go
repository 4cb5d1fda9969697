package host

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"go.yaml.in/yaml/v3"

	"github.com/wasmtask/wasmtask/host/internal/mcphttp"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/strictjson"
	"github.com/wasmtask/wasmtask/plugins"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Tenants is the operator's tenant file: who may use the server over HTTP,
// how each request proves it, and what each tenant sees. With one, every
// HTTP request needs a bearer token — a static token of a tenant, or a JWT
// whose tenant claim names one — and a tenant's sessions share its tasks
// and its result-cache entries. Stdio is never authenticated.
//
// The file is JSON, or YAML when its name ends in .yaml or .yml; unknown
// fields are errors. Example (YAML):
//
//	tenants:
//	  acme:
//	    tokens: ["sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]
//	    tools: ["add", "word_*"]
//	  globex:
//	    modules: ["demo"]
//	jwt:
//	  issuer: https://login.example.com
//	  audience: wasmtask
//	  jwksURL: https://login.example.com/.well-known/jwks.json
type Tenants struct {
	// AuthorizationServers are the OAuth issuers clients may get tokens
	// from, named by the Protected Resource Metadata document; default:
	// the JWT issuer, when there is one.
	AuthorizationServers []string `json:"authorizationServers,omitempty"`
	// Tenants by name: letters, digits, '.', '_' and '-', at most 64.
	Tenants map[string]Tenant `json:"tenants"`
	// JWT, when set, also admits JSON Web Tokens.
	JWT *JWTAuth `json:"jwt,omitempty"`
}

// Tenant is what one tenant may do.
type Tenant struct {
	// Tokens are the SHA-256 digests of the tenant's static bearer tokens,
	// each "sha256:" and 64 hex digits (`wasmtask hash-token` prints one):
	// the file never holds a token itself.
	Tokens []string `json:"tokens,omitempty"`
	// Tools and Modules say which tools the tenant sees: a tool is visible
	// when its name matches a pattern of Tools or its module's name one of
	// Modules (path.Match patterns). Both empty: every tool. A tool the
	// tenant does not see is absent from its tools/list and unknown to its
	// tools/call.
	Tools   []string `json:"tools,omitempty"`
	Modules []string `json:"modules,omitempty"`
	// MaxInstances is the tenant's share of the server's instances: at
	// most this many of its calls run at once, whatever room the server
	// has. 0: the default share, half of the server's MaxInstances (at
	// least 1), so that one tenant always leaves half the server to the
	// others.
	MaxInstances int `json:"maxInstances,omitempty"`
	// MaxMemoryMiB is the tenant's share of the server's memory budget:
	// its running calls together reserve at most this much (a call of a
	// tool whose reservation alone passes it fails at once). 0: the
	// default share, half of the budget (a call that reserves more may
	// still run while the tenant runs nothing else).
	MaxMemoryMiB int `json:"maxMemoryMiB,omitempty"`
	// RequestsPerSecond bounds the tenant's HTTP requests, all its
	// sessions together, on average, with bursts of Burst (default twice
	// the rate, at least 1); past it a request gets 429 with Retry-After.
	// 0: no bound.
	RequestsPerSecond float64 `json:"requestsPerSecond,omitempty"`
	Burst             int     `json:"burst,omitempty"`
	// MaxTasks bounds the tenant's tasks running or queued, all its
	// sessions together; past it tools/call with a task is refused.
	// RetainedTasks and RetainedResultMiB bound what it keeps, running
	// and finished: past them its own least recently used finished
	// results are dropped, never another tenant's. 0: the server's
	// per-client settings.
	MaxTasks          int `json:"maxTasks,omitempty"`
	RetainedTasks     int `json:"retainedTasks,omitempty"`
	RetainedResultMiB int `json:"retainedResultMiB,omitempty"`
}

// JWTAuth verifies JSON Web Tokens: signed by a key of the JWKS (a file,
// or a URL fetched and refreshed hourly, and at once for an unknown key
// ID, at most every 5 minutes), issued by Issuer for Audience, not
// expired (an "exp" claim is required), with TenantClaim naming a tenant
// of the file.
type JWTAuth struct {
	Issuer   string `json:"issuer"`
	Audience string `json:"audience"`
	JWKSFile string `json:"jwksFile,omitempty"`
	JWKSURL  string `json:"jwksURL,omitempty"`
	// TenantClaim is the claim that names the tenant; default "tenant".
	TenantClaim string `json:"tenantClaim,omitempty"`
	// Algorithms accepted; default RS256, PS256, ES256 and EdDSA. "none"
	// and the HMAC algorithms are refused: a JWKS holds public keys.
	Algorithms []string `json:"algorithms,omitempty"`
	// Leeway tolerated on exp, nbf and iat; default 30s.
	Leeway Duration `json:"leeway,omitempty"`
}

// ErrTenants wraps every problem of a tenant file.
var ErrTenants = errors.New("host: tenant file")

const (
	maxQuotaMiB        = 1 << 20
	maxTenantFileBytes = 4 << 20
	maxTokenBytes      = 16 << 10 // a bearer token longer than this is refused unread
)

var defaultAlgorithms = []string{"RS256", "PS256", "ES256", "EdDSA"}

// LoadTenants reads and checks a tenant file (see [Tenants]).
func LoadTenants(file string) (*Tenants, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTenants, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTenantFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTenants, file, err)
	}
	if len(b) > maxTenantFileBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrTenants, file, maxTenantFileBytes)
	}
	yamlFile := strings.HasSuffix(file, ".yaml") || strings.HasSuffix(file, ".yml")
	t, err := ParseTenants(b, yamlFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if t.JWT != nil && t.JWT.JWKSFile != "" && !filepath.IsAbs(t.JWT.JWKSFile) {
		t.JWT.JWKSFile = filepath.Join(filepath.Dir(file), t.JWT.JWKSFile)
	}
	return t, nil
}

// ParseTenants decodes and checks a tenant document, JSON or (yamlDoc)
// YAML. A YAML document is turned into JSON first, so both are decoded and
// checked by the same strict rules.
func ParseTenants(b []byte, yamlDoc bool) (*Tenants, error) {
	var src []byte
	if yamlDoc {
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			// "yaml: line 3: …": the line is the operator's; the package
			// name is not.
			return nil, fmt.Errorf("%w: %s", ErrTenants, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		src = b
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTenants, err)
		}
	}
	var t Tenants
	if err := strictjson.Decode(b, src, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTenants, err)
	}
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTenants, err)
	}
	return &t, nil
}

func (t *Tenants) validate() error {
	if len(t.Tenants) == 0 {
		return errors.New("no tenants: a tenant file names at least one")
	}
	owner := map[string]string{} // token digest → tenant
	for name, tn := range t.Tenants {
		if !validTenantName(name) {
			return fmt.Errorf("tenant name %q: use at most 64 letters, digits, '.', '_' or '-'", name)
		}
		for _, d := range tn.Tokens {
			if !validTokenDigest(d) {
				return fmt.Errorf("tenants.%s.tokens: %q is not \"sha256:\" and 64 hex digits (store the digest, never the token)", name, d)
			}
			d = strings.ToLower(d)
			if o, dup := owner[d]; dup && o != name {
				return fmt.Errorf("tenants.%s.tokens: a token of tenant %s too: a token names one tenant", name, o)
			}
			owner[d] = name
		}
		if tn.MaxMemoryMiB > maxQuotaMiB || tn.RetainedResultMiB > maxQuotaMiB {
			return fmt.Errorf("tenants.%s: a MiB quota over %d (1 TiB) is not a quota", name, maxQuotaMiB)
		}
		if tn.MaxInstances < 0 || tn.MaxMemoryMiB < 0 || tn.RequestsPerSecond < 0 || tn.Burst < 0 || tn.MaxTasks < 0 || tn.RetainedTasks < 0 || tn.RetainedResultMiB < 0 {
			return fmt.Errorf("tenants.%s: quotas may not be negative", name)
		}
		for _, p := range slices.Concat(tn.Tools, tn.Modules) {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("tenants.%s: pattern %q: %v", name, p, err)
			}
		}
	}
	if j := t.JWT; j != nil {
		switch {
		case j.Issuer == "" || j.Audience == "":
			return errors.New("jwt: issuer and audience are required")
		case (j.JWKSFile == "") == (j.JWKSURL == ""):
			return errors.New("jwt: give exactly one of jwksFile and jwksURL")
		}
		if j.JWKSURL != "" {
			// Keys fetched in the clear could be swapped on the way and any
			// tenant forged: https, except to this machine.
			u, err := url.Parse(j.JWKSURL)
			if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
				return fmt.Errorf("jwt: jwksURL %q must be an https URL (http only to a loopback address)", j.JWKSURL)
			}
		}
		for _, a := range j.Algorithms {
			if a == "none" || strings.HasPrefix(a, "HS") {
				return fmt.Errorf("jwt: algorithm %q is refused: keys come from a public JWKS", a)
			}
		}
	}
	return nil
}

func validTenantName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func validTokenDigest(d string) bool {
	h, ok := strings.CutPrefix(strings.ToLower(d), "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// HashToken is the digest a tenant file stores for a static token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// tenantAuth is a tenant file made ready to answer requests: tokens by
// digest, the JWT verifier, visibility. It is immutable once built; a
// reload builds a new one and swaps it in.
type tenantAuth struct {
	file    *Tenants
	tokens  map[string]string // token digest → tenant
	jwt     *jwtVerifier      // nil: static tokens only
	release func()            // stops the JWKS refresher, if any
}

// newTenantAuth builds what verifies requests for t. A JWKS URL is fetched
// by a refresher that lives until release; the first fetch failing is not
// an error (the refresher keeps trying, and tokens fail meanwhile).
func newTenantAuth(t *Tenants) (*tenantAuth, error) {
	a := &tenantAuth{file: t, tokens: map[string]string{}, release: func() {}}
	for name, tn := range t.Tenants {
		for _, d := range tn.Tokens {
			a.tokens[strings.ToLower(d)] = name
		}
	}
	if t.JWT != nil {
		v, release, err := newJWTVerifier(t.JWT)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTenants, err)
		}
		a.jwt, a.release = v, release
	}
	return a, nil
}

// verify names the tenant token belongs to, or says why it belongs to
// none (for the audit log; the client hears only "invalid token").
func (a *tenantAuth) verify(token string) (string, error) {
	if len(token) > maxTokenBytes {
		return "", fmt.Errorf("token longer than %d bytes", maxTokenBytes)
	}
	if tenant, ok := a.tokens[HashToken(token)]; ok {
		return tenant, nil
	}
	if a.jwt == nil || strings.Count(token, ".") != 2 {
		return "", errors.New("not a token of any tenant")
	}
	tenant, err := a.jwt.verify(token)
	if err != nil {
		return "", err
	}
	if _, ok := a.file.Tenants[tenant]; !ok {
		return "", fmt.Errorf("JWT names tenant %q, which the tenant file does not define", tenant)
	}
	return tenant, nil
}

// visible says whether tenant sees tool, served from module. An unknown
// tenant (one removed by a reload while its session lives) sees nothing.
func (a *tenantAuth) visible(tenant, tool, module string) bool {
	tn, ok := a.file.Tenants[tenant]
	if !ok {
		return false
	}
	if len(tn.Tools) == 0 && len(tn.Modules) == 0 {
		return true
	}
	match := func(patterns []string, s string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool { ok, _ := path.Match(p, s); return ok })
	}
	return match(tn.Tools, tool) || (module != "" && match(tn.Modules, module))
}

// jwtVerifier checks JWTs against one JWTAuth.
type jwtVerifier struct {
	cfg    *JWTAuth
	keys   keyfunc.Keyfunc
	parser *jwt.Parser
}

func newJWTVerifier(c *JWTAuth) (*jwtVerifier, func(), error) {
	algs := c.Algorithms
	if len(algs) == 0 {
		algs = defaultAlgorithms
	}
	leeway := time.Duration(c.Leeway)
	if leeway == 0 {
		leeway = 30 * time.Second
	}
	v := &jwtVerifier{cfg: c, parser: jwt.NewParser(
		jwt.WithValidMethods(algs),
		jwt.WithIssuer(c.Issuer),
		jwt.WithAudience(c.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(leeway),
	)}
	if c.JWKSFile != "" {
		b, err := os.ReadFile(c.JWKSFile)
		if err != nil {
			return nil, nil, fmt.Errorf("jwt: %v", err)
		}
		if v.keys, err = keyfunc.NewJWKSetJSON(b); err != nil {
			return nil, nil, fmt.Errorf("jwt: %s: %v", c.JWKSFile, err)
		}
		return v, func() {}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	keys, err := keyfunc.NewDefaultCtx(ctx, []string{c.JWKSURL})
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("jwt: %s: %v", c.JWKSURL, err)
	}
	v.keys = keys
	return v, cancel, nil
}

// verify checks token and returns its tenant claim.
func (v *jwtVerifier) verify(token string) (string, error) {
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(token, claims, v.keys.Keyfunc); err != nil {
		return "", fmt.Errorf("JWT refused: %w", err)
	}
	claim := v.cfg.TenantClaim
	if claim == "" {
		claim = "tenant"
	}
	tenant, _ := claims[claim].(string)
	if tenant == "" {
		return "", fmt.Errorf("JWT has no string claim %q naming its tenant", claim)
	}
	return tenant, nil
}

// startTenants loads the tenant file, starts watching it, and returns the
// MCP layer's authentication, which reads the tenants in force on every
// request.
func (s *Server) startTenants() (*mcphttp.Auth, error) {
	t, err := LoadTenants(s.cfg.TenantsFile)
	if err != nil {
		return nil, err
	}
	a, err := newTenantAuth(t)
	if err != nil {
		return nil, err
	}
	s.tenants.Store(a)
	w, err := plugins.WatchFile(s.cfg.TenantsFile, cmp.Or(s.cfg.ReloadDebounce, 250*time.Millisecond), func() {
		if err := s.ReloadTenants(); err != nil {
			s.log.Error("tenant file not reloaded; the previous one stays in force", "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTenants, err)
	}
	s.tenantWatch = w
	return &mcphttp.Auth{
		Verify: func(_ context.Context, token string) (string, error) {
			a := s.tenants.Load()
			if a == nil {
				return "", errors.New("the server is closed")
			}
			return a.verify(token)
		},
		Resource:             s.cfg.PublicURL,
		AuthorizationServers: t.authorizationServers(),
	}, nil
}

// ReloadTenants reads the tenant file again and, when it is valid, puts it
// in force for every request from now on, sessions already open included:
// a token removed from the file is refused at its next request. An invalid
// file is an error and changes nothing. Without a tenant file it does
// nothing.
func (s *Server) ReloadTenants() error {
	if s.cfg.TenantsFile == "" {
		return nil
	}
	s.tenantsMu.Lock()
	defer s.tenantsMu.Unlock()
	t, err := LoadTenants(s.cfg.TenantsFile)
	if err != nil {
		return err
	}
	a, err := newTenantAuth(t)
	if err != nil {
		return err
	}
	if old := s.tenants.Swap(a); old != nil {
		old.release()
	} else {
		s.tenants.Store(nil) // closed meanwhile
		a.release()
		return ErrServerClosed
	}
	s.log.Info("tenants reloaded", "file", s.cfg.TenantsFile, "tenants", len(t.Tenants), "jwt", t.JWT != nil)
	return nil
}

// requestRate is the MCP layer's RequestRate: what the tenant file in
// force gives tenant.
func (s *Server) requestRate(tenant string) (float64, int) {
	a := s.tenants.Load()
	if a == nil {
		return 0, 0
	}
	tn := a.file.Tenants[tenant]
	burst := tn.Burst
	if burst == 0 {
		burst = max(1, int(math.Ceil(2*tn.RequestsPerSecond)))
	}
	return tn.RequestsPerSecond, burst
}

// visibleFunc is the MCP layer's Visible: with a tenant file, what each
// tenant's entry gives it; without one, everything. Stdio (no tenant)
// sees every tool.
func (s *Server) visibleFunc() func(tenant, tool, module string) bool {
	if s.cfg.TenantsFile == "" {
		return nil
	}
	return func(tenant, tool, module string) bool {
		if tenant == "" {
			return true
		}
		a := s.tenants.Load()
		return a != nil && a.visible(tenant, tool, module)
	}
}

// tenantShare is the share of the instances and of the memory budget
// (bytes) of the calls of an authenticated tenant: the tenant file's
// maxInstances and maxMemoryMiB, each by default the admission's default
// share (half the server's); strict when the memory share is the file's.
// Calls of no tenant ("": a session, the stdio client) have none (0, 0).
func (s *Server) tenantShare(tenant string) (slots int, memory uint64, strict bool) {
	if tenant == "" {
		return 0, 0, false
	}
	a := s.tenants.Load()
	if a == nil {
		return 0, 0, false
	}
	tn := a.file.Tenants[tenant]
	slots, memory = s.adm.DefaultTenantShare()
	if tn.MaxInstances > 0 {
		slots = tn.MaxInstances
	}
	if tn.MaxMemoryMiB > 0 {
		memory, strict = uint64(tn.MaxMemoryMiB)<<20, true
	}
	return slots, memory, strict
}

// requestRateFunc is requestRate with a tenant file, nil without one.
func (s *Server) requestRateFunc() func(string) (float64, int) {
	if s.cfg.TenantsFile == "" {
		return nil
	}
	return s.requestRate
}

// ownerLimits is the task engine's Limits: the task quotas the tenant
// file in force gives the tenant an owner stands for; zero (the engine's
// defaults) for anyone else. The engine calls it under its lock: one
// atomic load and a map lookup.
func (s *Server) ownerLimits(owner string) taskengine.OwnerLimits {
	tenant, ok := mcpserver.TenantOf(owner)
	if !ok {
		return taskengine.OwnerLimits{}
	}
	a := s.tenants.Load()
	if a == nil {
		return taskengine.OwnerLimits{}
	}
	tn := a.file.Tenants[tenant]
	return taskengine.OwnerLimits{MaxRunning: tn.MaxTasks, MaxTasks: tn.RetainedTasks, MaxResultBytes: int64(tn.RetainedResultMiB) << 20}
}

// isLoopbackHost reports whether host names this machine.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorizationServers is what the metadata document names: the file's
// list, else the JWT issuer.
func (t *Tenants) authorizationServers() []string {
	if len(t.AuthorizationServers) > 0 || t.JWT == nil {
		return t.AuthorizationServers
	}
	return []string{t.JWT.Issuer}
}
