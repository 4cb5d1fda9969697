package mcphttp

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Auth makes every HTTP request to the MCP endpoint prove who it is with a
// bearer token (the MCP authorization spec's resource-server side).
type Auth struct {
	// Verify checks the bearer token of one request and returns the tenant
	// it belongs to. Any error refuses the request with 401; the client is
	// told only "invalid token" and the error goes to the audit log. It is
	// called on every request, tasks/* included, so a token the operator
	// removes, or one that expires, loses access at once.
	Verify func(ctx context.Context, token string) (tenant string, err error)
	// Resource is the MCP endpoint's public URL, the protected resource's
	// identifier; its origin is where clients find the metadata document.
	// Empty: the URL the request was sent to (scheme, Host header and
	// [Path]).
	Resource string
	// AuthorizationServers are the issuers clients may get tokens from,
	// and Scopes the scopes they may ask for, as the Protected Resource
	// Metadata document (RFC 9728) lists them.
	AuthorizationServers []string
	Scopes               []string
}

// ResourceMetadataPath is where the Protected Resource Metadata document
// of [Path] is served (RFC 9728 §3.1: the well-known prefix, then the
// resource's path).
const ResourceMetadataPath = rootMetadataPath + Path

const rootMetadataPath = "/.well-known/oauth-protected-resource"

// resource is the protected resource's identifier for a request to it.
func (a *Auth) resource(r *http.Request) string {
	if a.Resource != "" {
		return a.Resource
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return (&url.URL{Scheme: scheme, Host: r.Host, Path: Path}).String()
}

// metadataURL is the absolute URL of the metadata document, named in the
// WWW-Authenticate challenge of a refused request.
func (a *Auth) metadataURL(r *http.Request) string {
	u, err := url.Parse(a.resource(r))
	if err != nil || u.Host == "" {
		return ResourceMetadataPath
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: ResourceMetadataPath}).String()
}

// deniedKey carries a request's *denial from the authentication wrapper
// to the verifier and back.
type deniedKey struct{}

type denial struct{ reason string }

// authenticate puts go-sdk's bearer-token middleware in front of next: a
// request without a valid token is answered 401 with a WWW-Authenticate
// challenge naming the metadata document, audited, and goes no further;
// one with a valid token carries its tenant as the TokenInfo's UserID,
// which sessions and tasks are bound to.
func (h *Handler) authenticate(next http.Handler) http.Handler {
	a := h.cfg.Auth
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tenant, err := a.Verify(ctx, token)
		if err != nil || tenant == "" {
			if d, _ := ctx.Value(deniedKey{}).(*denial); d != nil {
				d.reason = "token refused"
				if err != nil {
					d.reason += ": " + err.Error()
				}
			}
			return nil, auth.ErrInvalidToken
		}
		// Verify has checked any expiry; go-sdk's own check needs none.
		return &auth.TokenInfo{UserID: tenant}, nil
	}
	guard := func(r *http.Request) http.Handler {
		return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL:    a.metadataURL(r),
			AllowMissingExpiration: true,
		})(next)
	}
	var fixed http.Handler // the same for every request when Resource is set
	if a.Resource != "" {
		fixed = guard(nil)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guarded := fixed
		if guarded == nil {
			guarded = guard(r)
		}
		d := &denial{}
		if f := strings.Fields(r.Header.Get("Authorization")); len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
			d.reason = "no bearer token"
		}
		guarded.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), deniedKey{}, d)))
		if d.reason != "" {
			h.denied(r, "", http.StatusUnauthorized, d.reason)
		}
	})
}

// resourceMetadata serves the Protected Resource Metadata document.
func (h *Handler) resourceMetadata() http.Handler {
	a := h.cfg.Auth
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               a.resource(r),
			AuthorizationServers:   a.AuthorizationServers,
			ScopesSupported:        a.Scopes,
			BearerMethodsSupported: []string{"header"},
		}).ServeHTTP(w, r)
	})
}
