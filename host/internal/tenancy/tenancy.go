package tenancy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/wasmtask/wasmtask/host/internal/strictjson"
)

// File is the operator's tenant file: who may use the server over HTTP,
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
type File struct {
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
	// Tools, Resources, Prompts and Modules say what the tenant sees
	// (path.Match patterns): a tool when its name matches a pattern of
	// Tools, a resource when its URI matches one of Resources (a resource
	// template when its URI template does, a read through it when the URI
	// read does), a prompt when its name matches one of Prompts, and all
	// three when their module's name matches one of Modules. All four
	// empty: everything. What the tenant does not see is absent from its
	// lists and unknown to its requests.
	Tools     []string `json:"tools,omitempty"`
	Resources []string `json:"resources,omitempty"`
	Prompts   []string `json:"prompts,omitempty"`
	Modules   []string `json:"modules,omitempty"`
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
	Leeway strictjson.Duration `json:"leeway,omitempty"`
}

// ErrFile wraps every problem of a tenant file. Its text is the
// server's (host.ErrFile is this error).
var ErrFile = errors.New("host: tenant file")

const (
	// MaxQuotaMiB bounds a MiB quota of the operator's files (1 TiB).
	MaxQuotaMiB        = 1 << 20
	maxTenantFileBytes = 4 << 20
	maxTokenBytes      = 16 << 10 // a bearer token longer than this is refused unread
)

var defaultAlgorithms = []string{"RS256", "PS256", "ES256", "EdDSA"}

// Load reads and checks a tenant file (see [File]).
func Load(file string) (*File, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTenantFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFile, file, err)
	}
	if len(b) > maxTenantFileBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrFile, file, maxTenantFileBytes)
	}
	yamlFile := strings.HasSuffix(file, ".yaml") || strings.HasSuffix(file, ".yml")
	t, err := Parse(b, yamlFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if t.JWT != nil && t.JWT.JWKSFile != "" && !filepath.IsAbs(t.JWT.JWKSFile) {
		t.JWT.JWKSFile = filepath.Join(filepath.Dir(file), t.JWT.JWKSFile)
	}
	return t, nil
}

// Parse decodes and checks a tenant document, JSON or (yamlDoc)
// YAML. A YAML document is turned into JSON first, so both are decoded and
// checked by the same strict rules.
func Parse(b []byte, yamlDoc bool) (*File, error) {
	var src []byte
	if yamlDoc {
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			// "yaml: line 3: …": the line is the operator's; the package
			// name is not.
			return nil, fmt.Errorf("%w: %s", ErrFile, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		src = b
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFile, err)
		}
	}
	var t File
	if err := strictjson.Decode(b, src, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	if err := t.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	return &t, nil
}

func (t *File) validate() error {
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
		if tn.MaxMemoryMiB > MaxQuotaMiB || tn.RetainedResultMiB > MaxQuotaMiB {
			return fmt.Errorf("tenants.%s: a MiB quota over %d (1 TiB) is not a quota", name, MaxQuotaMiB)
		}
		if tn.MaxInstances < 0 || tn.MaxMemoryMiB < 0 || tn.RequestsPerSecond < 0 || tn.Burst < 0 || tn.MaxTasks < 0 || tn.RetainedTasks < 0 || tn.RetainedResultMiB < 0 {
			return fmt.Errorf("tenants.%s: quotas may not be negative", name)
		}
		for _, p := range slices.Concat(tn.Tools, tn.Resources, tn.Prompts, tn.Modules) {
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
			if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && IsLoopbackHost(u.Hostname()))) {
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

// Auth is a tenant file made ready to answer requests: tokens by
// digest, the JWT verifier, visibility. It is immutable once built; a
// reload builds a new one and swaps it in.
type Auth struct {
	file    *File
	tokens  map[string]string // token digest → tenant
	jwt     *jwtVerifier      // nil: static tokens only
	release func()            // stops the JWKS refresher, if any
}

// NewAuth builds what verifies requests for t. A JWKS URL is fetched
// by a refresher that lives until release; the first fetch failing is not
// an error (the refresher keeps trying, and tokens fail meanwhile).
func NewAuth(t *File) (*Auth, error) {
	a := &Auth{file: t, tokens: map[string]string{}, release: func() {}}
	for name, tn := range t.Tenants {
		for _, d := range tn.Tokens {
			a.tokens[strings.ToLower(d)] = name
		}
	}
	if t.JWT != nil {
		v, release, err := newJWTVerifier(t.JWT)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFile, err)
		}
		a.jwt, a.release = v, release
	}
	return a, nil
}

// Verify names the tenant token belongs to, or says why it belongs to
// none (for the audit log; the client hears only "invalid token").
func (a *Auth) Verify(token string) (string, error) {
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

// What a tenant may be shown, for [Auth.Visible].
const (
	Tool     = "tool"
	Resource = "resource" // a resource's URI, a template's URI template
	Prompt   = "prompt"
)

// Visible says whether tenant sees the declaration of kind (Tool,
// Resource or Prompt) called name, served from module. An unknown tenant
// (one removed by a reload while its session lives) sees nothing.
func (a *Auth) Visible(tenant, kind, name, module string) bool {
	tn, ok := a.file.Tenants[tenant]
	if !ok {
		return false
	}
	if len(tn.Tools) == 0 && len(tn.Resources) == 0 && len(tn.Prompts) == 0 && len(tn.Modules) == 0 {
		return true
	}
	match := func(patterns []string, s string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool { ok, _ := path.Match(p, s); return ok })
	}
	if module != "" && match(tn.Modules, module) {
		return true
	}
	switch kind {
	case Tool:
		return match(tn.Tools, name)
	case Resource:
		return match(tn.Resources, name)
	case Prompt:
		return match(tn.Prompts, name)
	}
	return false
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

// IsLoopbackHost reports whether host names this machine.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// AuthorizationServersOrIssuer is what the metadata document names: the file's
// list, else the JWT issuer.
func (t *File) AuthorizationServersOrIssuer() []string {
	if len(t.AuthorizationServers) > 0 || t.JWT == nil {
		return t.AuthorizationServers
	}
	return []string{t.JWT.Issuer}
}

// Tenant returns the entry of tenant name (the zero Tenant when the file
// has none).
func (a *Auth) Tenant(name string) Tenant { return a.file.Tenants[name] }

// Release stops what the Auth started (a JWKS refresher). It is called
// once the Auth is no longer in force.
func (a *Auth) Release() { a.release() }
