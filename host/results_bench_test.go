package host

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkResultCache: a cacheable tool's call answered from the cache
// (hit) next to the same call run in a fresh instance (miss: the cache
// turned off), for the Go word_count and the C sha256 examples; and the
// hit path under 64 concurrent callers.
//
//	go test -run '^$' -bench ResultCache ./host/
func BenchmarkResultCache(b *testing.B) {
	cases := []struct{ tool, args string }{
		{"word_count", `{"text":"the quick brown fox jumps over the lazy dog"}`},
		{"sha256", `{"text":"0123456789"}`},
	}
	for _, mode := range []struct {
		name string
		ttl  time.Duration // -1: the cache is off; 0: the default
	}{{"miss", -1}, {"hit", 0}} {
		s, err := New(context.Background(), Config{CacheDir: testCacheDir, ResultCacheMaxTTL: mode.ttl})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.ready(context.Background(), ""); err != nil {
			b.Fatal(err)
		}
		for _, c := range cases {
			ctx, who := context.Background(), Caller{Tenant: "t"}
			if _, _, err := s.CallAs(ctx, who, c.tool, json.RawMessage(c.args), quiet{}); err != nil { // fills the cache
				b.Fatal(err)
			}
			b.Run(c.tool+"/"+mode.name, func(b *testing.B) {
				for b.Loop() {
					if _, _, err := s.CallAs(ctx, who, c.tool, json.RawMessage(c.args), quiet{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		if mode.name == "hit" {
			b.Run("sha256/hit-64-callers", func(b *testing.B) {
				b.SetParallelism(32) // 2 cores × 32 = 64 callers
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, _, err := s.CallAs(context.Background(), Caller{Tenant: "t"}, "sha256", json.RawMessage(cases[1].args), quiet{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
		s.Close()
	}
}
