package mcpserver

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/taskengine"
)

// BenchmarkHTTP compares a plain tools/call with a task round trip
// (create → tasks/get → tasks/result) of a fast tool over Streamable HTTP,
// with many concurrent clients (one session each).
func BenchmarkHTTP(b *testing.B) {
	for _, mode := range []string{"plain", "task"} {
		b.Run(mode, func(b *testing.B) {
			ts := newTestServer(b, taskengine.Config{MaxRunningPerOwner: 1000, MaxTasks: 1 << 20})
			srv := ts.httpServer(b)
			srv.Client().Transport.(interface{ CloseIdleConnections() }).CloseIdleConnections()
			var next atomic.Int64
			b.SetParallelism(8) // 8 × GOMAXPROCS clients
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c := newHTTPClient(b, srv)
				c.initialize()
				args := map[string]any{"name": "bench"}
				for pb.Next() {
					id := int(next.Add(1))
					if mode == "plain" {
						if r := c.call(id, "tools/call", map[string]any{"name": "quick", "arguments": args}); r["error"] != nil {
							b.Errorf("plain call: %v", r)
							return
						}
						continue
					}
					tid := taskIDOf(nil, c.call(id, "tools/call", map[string]any{"name": "quick", "arguments": args, "task": map[string]any{}}))
					c.call(id, "tasks/get", map[string]any{"taskId": tid})
					if r := c.call(id, "tasks/result", map[string]any{"taskId": tid}); r["error"] != nil {
						b.Errorf("tasks/result: %v", r)
						return
					}
				}
			})
		})
	}
}

// BenchmarkCancelLatency measures the time from sending tasks/cancel (stdio)
// to the running tool observing its context end.
func BenchmarkCancelLatency(b *testing.B) {
	ts := newTestServer(b, taskengine.Config{})
	c := ts.connectStdio(b)
	c.initialize(true)
	var total time.Duration
	for i := range b.N {
		tid := taskIDOf(nil, c.call(2*i+1, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}}))
		<-ts.tools.started
		start := time.Now()
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/cancel","params":{"taskId":%q}}`, 2*i+2, tid))
		<-ts.tools.cancelled
		total += time.Since(start)
		for {
			if m := c.next(); idOf(m) == fmt.Sprint(2*i+2) {
				break
			}
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/cancel")
}
