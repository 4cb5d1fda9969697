package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/wasmtask/wasmtask/host"
)

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// authServer serves the embedded tools over httptest, behind a tenant file
// with one static token when auth is set, and returns a client (carrying
// the token) and the endpoint.
func authServer(b *testing.B, auth bool) (*http.Client, string) {
	cfg := host.Config{CacheDir: host.CompileCacheDir()}
	if auth {
		file := filepath.Join(b.TempDir(), "tenants.json")
		doc := fmt.Sprintf(`{"tenants":{"bench":{"tokens":[%q]}}}`, host.HashToken("bench-token"))
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			b.Fatal(err)
		}
		cfg.TenantsFile = file
	}
	srv, err := host.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	var rt http.RoundTripper = &http.Transport{MaxIdleConnsPerHost: 4 * e2eClients}
	if auth {
		rt = bearer{token: "bench-token", next: rt}
	}
	hc := &http.Client{Transport: rt}
	b.Cleanup(func() {
		srv.Close()
		ts.Close()
		hc.CloseIdleConnections()
	})
	return hc, ts.URL + host.HTTPPath
}

// BenchmarkHTTPAuth is tools/call of add over Streamable HTTP from
// e2eClients sessions, without authentication and with a tenant file's
// static bearer token checked on every request, side by side.
//
//	go test -run '^$' -bench HTTPAuth -count 6 ./host/
func BenchmarkHTTPAuth(b *testing.B) {
	for _, auth := range []bool{false, true} {
		name := "none"
		if auth {
			name = "static-token"
		}
		b.Run(name, func(b *testing.B) {
			hc, url := authServer(b, auth)
			sessions := make([]*e2eSession, e2eClients)
			for i := range sessions {
				var err error
				if sessions[i], err = newE2ESession(hc, url); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(sessions[i].close)
			}
			args := map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}
			e2eRun(b, sessions, func(s *e2eSession, _ int64) error {
				_, err := s.call("tools/call", args)
				return err
			})
		})
	}
}

// BenchmarkIdleSession is the heap an open, idle Streamable HTTP session
// holds on the server (and the client's end of it, which is small: one
// struct and a session ID), measured over 512 sessions.
//
//	go test -run '^$' -bench IdleSession -count 6 ./host/
func BenchmarkIdleSession(b *testing.B) {
	hc, url := authServer(b, false)
	const n = 512
	for range b.N {
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		before := heap()
		sessions := make([]*e2eSession, n)
		for i := range sessions {
			var err error
			if sessions[i], err = newE2ESession(hc, url); err != nil {
				b.Fatal(err)
			}
		}
		after := heap()
		b.ReportMetric(float64(after-before)/n, "heap-bytes/session")
		for _, s := range sessions {
			s.close()
		}
	}
}
