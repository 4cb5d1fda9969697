package host

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// Server.Serve wires the limits to net/http's ConnState: at
// MaxConnections, or at MaxConnectionsPerAddress from one address, idle
// keep-alive connections make room for a new client, the connection idle
// the longest first.
func TestServeClosesIdleConnectionsForNewClients(t *testing.T) {
	for _, tc := range []struct {
		name           string
		total, perAddr int
	}{
		{"total", 3, -1},
		{"per address", 100, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			idle := map[string]chan struct{}{}
			idleCh := func(addr string) chan struct{} {
				mu.Lock()
				defer mu.Unlock()
				if idle[addr] == nil {
					idle[addr] = make(chan struct{})
				}
				return idle[addr]
			}
			cfg := Config{ToolsFS: fstest.MapFS{}, CacheDir: testCacheDir, MaxConnections: tc.total, MaxConnectionsPerAddress: tc.perAddr}
			cfg.connState = func(c net.Conn, st http.ConnState) {
				if st == http.StateIdle {
					ch := idleCh(c.RemoteAddr().String())
					select {
					case <-ch:
					default:
						close(ch)
					}
				}
			}
			s, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			addr := serveOn(t, s)
			dial := func() *hosttest.RawConn {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return hosttest.NewRawConn(t, c)
			}
			var conns []*hosttest.RawConn
			for range 3 {
				c := dial()
				if got := c.Fetch(t, HealthPath); !strings.HasPrefix(got, "200") {
					t.Fatalf("GET %s: %q", HealthPath, got)
				}
				<-idleCh(c.LocalAddr().String())
				conns = append(conns, c)
			}
			if got := dial().Fetch(t, HealthPath); !strings.HasPrefix(got, "200") {
				t.Fatalf("a fourth client with three idle connections open: %q", got)
			}
			if err := conns[0].ClosedByServer(); err != nil {
				t.Errorf("the connection idle the longest: %v", err)
			}
			for _, c := range conns[1:] {
				if got := c.Fetch(t, HealthPath); !strings.HasPrefix(got, "200") {
					t.Errorf("%s, idle more recently: %q, want it still served", c.LocalAddr(), got)
				}
			}
		})
	}
}

func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		max, perAddr         int
		wantMax, wantPerAddr int
	}{
		{0, 0, DefaultMaxConnections, DefaultMaxConnections / 8},
		{40, 0, 40, 8}, // an eighth is 5: at least 8
		{4, 0, 4, 4},   // never more than the total
		{-3, 0, DefaultMaxConnections, DefaultMaxConnections / 8},
		{100, -1, 100, 0},
		{10, 50, 10, 10},
		{100, 3, 100, 3},
	} {
		cfg := Config{MaxConnections: tc.max, MaxConnectionsPerAddress: tc.perAddr}
		if m, p := cfg.connectionLimits(); m != tc.wantMax || p != tc.wantPerAddr {
			t.Errorf("MaxConnections %d, MaxConnectionsPerAddress %d: limits %d, %d; want %d, %d", tc.max, tc.perAddr, m, p, tc.wantMax, tc.wantPerAddr)
		}
	}
}
