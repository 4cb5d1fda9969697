package host

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// BenchmarkPrimitivesHTTP is a tools/call, a resources/read and a
// prompts/get of one module (prims.wat: each answers a fixed document
// from a fresh instance) over Streamable HTTP, from 8 × GOMAXPROCS
// sessions, side by side: a read or a prompt should cost what a call
// costs.
func BenchmarkPrimitivesHTTP(b *testing.B) {
	dir := b.TempDir()
	put(b, dir, "prims.wasm", hosttest.Wasm(b, "internal/wasmrt/testdata/prims.wat"))
	s, _ := newReloadServer(b, Config{ToolsDir: dir, CacheDir: testCacheDir})
	srv := httptest.NewServer(s.Handler())
	b.Cleanup(srv.Close)
	requests := []struct {
		name, method string
		params       map[string]any
	}{
		{"call", "tools/call", map[string]any{"name": "hello", "arguments": map[string]any{}}},
		{"read", "resources/read", map[string]any{"uri": "test://static"}},
		{"prompt", "prompts/get", map[string]any{"name": "greet"}},
	}
	for _, rq := range requests {
		b.Run(rq.name, func(b *testing.B) {
			var failed atomic.Bool
			b.SetParallelism(8)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				h := hosttest.NewHTTPClient(b, srv.URL+HTTPPath)
				h.HC = srv.Client()
				h.Initialize(nil)
				defer h.Close()
				for pb.Next() {
					if m := h.Call(rq.method, rq.params); m.Error != nil && !failed.Swap(true) {
						b.Errorf("%s: %s", rq.method, m.Raw)
					}
				}
			})
		})
	}
}
