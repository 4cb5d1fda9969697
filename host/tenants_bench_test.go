package host

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
)

// BenchmarkTenantFairness measures tenant B's call latency alone, then
// while tenant A keeps ten times the server's instance slots of calls
// waiting (as tasks do: they queue rather than fail), side by side in one
// run. Each call sleeps 2 ms in the guest; the server runs 4 at once.
//
//	go test -run '^$' -bench TenantFairness -count 6 ./host/
//
// b-alone-p50/p99-ms and b-flooded-p50/p99-ms are B's latencies;
// flooded/alone-p50 and -p99 their ratios (the goal: at most 1.5);
// same-tenant/alone-p50 is what B would see as part of A (first in,
// first out behind the flood).
func BenchmarkTenantFairness(b *testing.B) {
	p, err := ParsePolicy([]byte(`{"maxInstances":4,"defaults":{"maxConcurrency":4,"maxQueue":64},"modules":{"m":{"maxInstances":4}}}`))
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"m.wasm": {Data: verModule(b, "ver", "v1")}}, CacheDir: testCacheDir, Policy: p})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	args := json.RawMessage(`{"ms":2}`)
	call := func(ctx context.Context, tenant string) error {
		// As a task's call: it queues for an instance rather than be
		// refused for being busy.
		c, release := s.acquire()
		defer release()
		_, _, err := s.call(ctx, c, mcpserver.Caller{Tenant: tenant, Queued: func(int) {}}, "ver", args, quiet{})
		return err
	}
	measure := func(n int, tenant string) []time.Duration {
		lat := make([]time.Duration, 0, n)
		for range n {
			start := time.Now()
			if err := call(context.Background(), tenant); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat
	}
	measure(8, "user:b") // warm
	b.ResetTimer()
	alone := measure(b.N, "user:b")

	ctx, stop := context.WithCancel(context.Background())
	var flood sync.WaitGroup
	for range 10 * 4 {
		flood.Go(func() {
			for ctx.Err() == nil {
				_ = call(ctx, "user:a")
			}
		})
	}
	flooded := measure(b.N, "user:b")
	// For comparison: the same calls made as tenant A wait their turn
	// behind A's flood, as every call did before turns went by tenant.
	behind := measure(max(b.N/8, 1), "user:a")
	stop()
	flood.Wait()
	b.StopTimer()

	q := func(l []time.Duration, p float64) float64 { return float64(l[int(p*float64(len(l)-1))]) / 1e6 }
	b.ReportMetric(q(alone, 0.5), "b-alone-p50-ms")
	b.ReportMetric(q(alone, 0.99), "b-alone-p99-ms")
	b.ReportMetric(q(flooded, 0.5), "b-flooded-p50-ms")
	b.ReportMetric(q(flooded, 0.99), "b-flooded-p99-ms")
	b.ReportMetric(q(flooded, 0.5)/q(alone, 0.5), "flooded/alone-p50")
	b.ReportMetric(q(flooded, 0.99)/q(alone, 0.99), "flooded/alone-p99")
	b.ReportMetric(q(behind, 0.5)/q(alone, 0.5), "same-tenant/alone-p50")
}
