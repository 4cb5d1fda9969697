package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wasmtask/wasmtask/host/internal/mcphttp"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/tenancy"
	"github.com/wasmtask/wasmtask/plugins"
	"github.com/wasmtask/wasmtask/taskengine"
)

// Tenants is the operator's tenant file: who may use the server over
// HTTP, how each request proves it, and what each tenant sees (see
// tenancy.File for every member and an example).
type Tenants = tenancy.File

// Tenant is what one tenant of a [Tenants] file may do.
type Tenant = tenancy.Tenant

// JWTAuth verifies JSON Web Tokens for a [Tenants] file.
type JWTAuth = tenancy.JWTAuth

// ErrTenants wraps every problem of a tenant file.
var ErrTenants = tenancy.ErrFile

// LoadTenants reads and checks a tenant file.
func LoadTenants(file string) (*Tenants, error) { return tenancy.Load(file) }

// ParseTenants decodes and checks a tenant document, JSON or (yamlDoc)
// YAML.
func ParseTenants(b []byte, yamlDoc bool) (*Tenants, error) { return tenancy.Parse(b, yamlDoc) }

// HashToken is the digest a tenant file stores for a static token.
func HashToken(token string) string { return tenancy.HashToken(token) }

// startTenants loads the tenant file, starts watching it, and returns the
// MCP layer's authentication, which reads the tenants in force on every
// request.
func (s *Server) startTenants() (*mcphttp.Auth, error) {
	t, err := LoadTenants(s.cfg.TenantsFile)
	if err != nil {
		return nil, err
	}
	a, err := tenancy.NewAuth(t)
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
			return a.Verify(token)
		},
		Resource:             s.cfg.PublicURL,
		AuthorizationServers: t.AuthorizationServersOrIssuer(),
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
	a, err := tenancy.NewAuth(t)
	if err != nil {
		return err
	}
	if old := s.tenants.Swap(a); old != nil {
		old.Release()
	} else {
		s.tenants.Store(nil) // closed meanwhile
		a.Release()
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
	tn := a.Tenant(tenant)
	burst := tn.Burst
	if burst == 0 {
		burst = max(1, int(math.Ceil(2*tn.RequestsPerSecond)))
	}
	return tn.RequestsPerSecond, burst
}

// visibleFunc is the MCP layer's Visible: with a tenant file, what each
// tenant's entry gives it; without one, everything. Stdio (no tenant)
// sees everything.
func (s *Server) visibleFunc() func(tenant string, kind mcpserver.Kind, name, module string) bool {
	if s.cfg.TenantsFile == "" {
		return nil
	}
	return func(tenant string, kind mcpserver.Kind, name, module string) bool {
		if tenant == "" {
			return true
		}
		a := s.tenants.Load()
		return a != nil && a.Visible(tenant, tenantKinds[kind], name, module)
	}
}

// tenantKinds names the MCP layer's kinds in the tenant file's terms.
var tenantKinds = [...]string{
	mcpserver.KindTool:     tenancy.Tool,
	mcpserver.KindResource: tenancy.Resource,
	mcpserver.KindTemplate: tenancy.Resource,
	mcpserver.KindPrompt:   tenancy.Prompt,
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
	tn := a.Tenant(tenant)
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
	tn := a.Tenant(tenant)
	return taskengine.OwnerLimits{MaxRunning: tn.MaxTasks, MaxTasks: tn.RetainedTasks, MaxResultBytes: int64(tn.RetainedResultMiB) << 20}
}
