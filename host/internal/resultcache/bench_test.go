package resultcache

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkMemory100k reports the heap held by 100 000 entries whose
// values are small results (a 64-byte string), keys as a tool call makes
// them (tenant, digest, tool, 30-byte arguments):
//
//	go test -run '^$' -bench Memory100k -benchtime 3x ./host/internal/resultcache/
func BenchmarkMemory100k(b *testing.B) {
	const n = 100_000
	value := string(make([]byte, 64))
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := New(Config{MaxEntries: n, MaxBytes: 1 << 30})
		for i := range n {
			k := Key{Tenant: "user:tenant-a", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				Tool: "word_count", Args: fmt.Appendf(nil, `{"text":"call number %08d"}`, i)}
			c.Put(k, value, int64(len(value)), time.Hour)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if c.Stats().Entries != n {
			b.Fatalf("%d entries", c.Stats().Entries)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/100k")
		runtime.KeepAlive(c)
	}
}
