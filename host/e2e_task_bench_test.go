package host_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// BenchmarkE2ETask is the task round trip of the published comparison with
// mcp-go (BENCHMARKS.md, figure 4) in process: a task-augmented tools/call
// of a C tool that answers at once, one tasks/get, then tasks/result, over
// Streamable HTTP at protocol 2025-11-25, one session per client, with 1,
// 8 and 32 concurrent clients, on the default policy. With several clients
// ns/op is wall time over all round trips (the inverse of throughput);
// call-ns/op, get-ns/op and result-ns/op are each step's latency, summed
// over the clients (at 1 client they add up to ns/op).
//
//	go test -run '^$' -bench E2ETask -benchmem -count 6 ./host/
func BenchmarkE2ETask(b *testing.B) {
	wasm := hosttest.Wasm(b, filepath.Join("testdata", "tasks", "noop.c"))
	srv, err := host.New(context.Background(), host.Config{
		ToolsFS:  fstest.MapFS{"noop.wasm": {Data: wasm}},
		CacheDir: host.CompileCacheDir(),
	})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 256}}
	b.Cleanup(func() {
		srv.Close()
		ts.Close()
		hc.CloseIdleConnections()
	})
	url := ts.URL + host.HTTPPath
	sessions := make([]*e2eSession, 32)
	for i := range sessions {
		if sessions[i], err = newE2ESession(hc, url); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(sessions[i].close)
	}
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("noop/clients=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var spent [3]atomic.Int64 // per step: tools/call, tasks/get, tasks/result
			e2eRun(b, sessions[:n], func(s *e2eSession, _ int64) error {
				t0 := time.Now()
				id, err := s.startTask("noop", map[string]any{}, "")
				if err != nil {
					return err
				}
				t1 := time.Now()
				if t, err := s.getTask(id); err != nil {
					return err
				} else if t.TaskID != id {
					return fmt.Errorf("tasks/get: got task %q, want %q", t.TaskID, id)
				}
				t2 := time.Now()
				raw, err := s.call("tasks/result", map[string]any{"taskId": id})
				if err != nil {
					return err
				}
				spent[0].Add(int64(t1.Sub(t0)))
				spent[1].Add(int64(t2.Sub(t1)))
				spent[2].Add(int64(time.Since(t2)))
				text, err := callText(raw, id)
				if err == nil && text != "ok" {
					err = fmt.Errorf("tasks/result: got %q, want %q", text, "ok")
				}
				return err
			})
			for i, name := range []string{"call-ns/op", "get-ns/op", "result-ns/op"} {
				b.ReportMetric(float64(spent[i].Load())/float64(b.N), name)
			}
		})
	}
}
