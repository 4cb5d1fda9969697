package host_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/taskengine"
)

// BenchmarkRunningTasks reports what the server holds per task: with n
// tasks of a C tool all running at once (asleep in the guest, each one's
// instance alive), and with n finished tasks whose results are retained.
// The figures are deltas over the server before the tasks (loaded, one
// call done, after a GC), divided by n:
//
//   - RSS-KiB/task: the process's resident memory (VmRSS), what an operator
//     sees (it includes what the Go runtime keeps from the GC);
//   - RSS-MiB: the process's resident memory with the tasks, in all;
//   - heap-KiB/task: the Go heap in use (HeapInuse), stack-KiB/task: the
//     goroutine stacks (StackInuse), goroutines/task.
//
// Run it once per measurement (each iteration is a fresh server):
//
//	go test -run '^$' -bench RunningTasks -benchtime 1x -count 6 ./host/
func BenchmarkRunningTasks(b *testing.B) {
	wasm := hosttest.Wasm(b, filepath.Join("testdata", "tasks", "nap.c"))
	for _, n := range []int{2, 100, 1000} {
		b.Run(fmt.Sprintf("running/tasks=%d", n), func(b *testing.B) {
			var m taskMemory
			for b.Loop() {
				m.add(measureTasks(b, wasm, n, true))
			}
			m.report(b)
		})
		b.Run(fmt.Sprintf("retained/tasks=%d", n), func(b *testing.B) {
			var m taskMemory
			for b.Loop() {
				m.add(measureTasks(b, wasm, n, false))
			}
			m.report(b)
		})
	}
}

// taskMemory sums the per-task figures of the iterations.
type taskMemory struct {
	rss, heap, stack, goroutines float64
	total                        float64 // RSS of the process with the tasks, KiB
	runs                         int
}

func (m *taskMemory) add(o taskMemory) {
	m.rss += o.rss
	m.heap += o.heap
	m.stack += o.stack
	m.goroutines += o.goroutines
	m.total += o.total
	m.runs++
}

func (m *taskMemory) report(b *testing.B) {
	n := float64(m.runs)
	b.ReportMetric(m.rss/n, "RSS-KiB/task")
	b.ReportMetric(m.heap/n, "heap-KiB/task")
	b.ReportMetric(m.stack/n, "stack-KiB/task")
	b.ReportMetric(m.goroutines/n, "goroutines/task")
	b.ReportMetric(m.total/n/1024, "RSS-MiB")
}

// measureTasks starts n tasks of nap on a fresh server over stdio and
// measures them: running (each asleep until the server closes; the
// client knows it runs from its progress notification) or finished
// (each one's result retained).
func measureTasks(b *testing.B, wasm []byte, n int, running bool) taskMemory {
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	pol := &host.Policy{MaxInstances: n, MemoryBudgetMiB: 80 * n,
		Defaults: host.ToolPolicy{MaxConcurrency: n, Timeout: host.Duration(time.Hour)},
		Modules:  map[string]host.ModulePolicy{"nap": {MaxInstances: n, MaxMemoryMiB: 80 * n}}}
	s, err := host.New(ctx, host.Config{ToolsFS: fstest.MapFS{"nap.wasm": {Data: wasm}}, Policy: pol,
		CacheDir: host.CompileCacheDir(),
		Tasks:    taskengine.Config{MaxTasks: 4 * n, MaxRunningPerOwner: n, MaxTasksPerOwner: 2 * n}})
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	closeServer := func() {
		if !closed {
			closed = true
			s.Close()
		}
	}
	defer closeServer()
	c := hosttest.Stdio(b, serveStdio(s))
	c.Initialize(nil)
	if r := c.CallTool("nap", map[string]any{"ms": 0}); r.IsError {
		b.Fatalf("nap: %+v", r)
	}

	var before, after taskMemory
	before.sample()
	ms := 0
	if running {
		ms = int(time.Hour / time.Millisecond)
	}
	ids := make(map[string]bool, n) // request IDs as the client prints them
	for i := range n {
		id := c.Request("tools/call", map[string]any{"name": "nap", "arguments": map[string]any{"ms": ms},
			"task": map[string]any{}, "_meta": map[string]any{"progressToken": i}})
		ids[strconv.FormatInt(id, 10)] = true
	}
	// Every task is created (a response each) and, when running, inside
	// its guest (a progress notification each).
	created, asleep := 0, 0
	var taskIDs []string
	for created < n || running && asleep < n {
		m := c.Next()
		switch {
		case m.IsResponse() && ids[fmt.Sprint(m.ID)]:
			var r hosttest.ToolResult
			if err := m.Decode(&r); err != nil || r.Task == nil {
				b.Fatalf("task call: %v: %s", err, m.Raw)
			}
			taskIDs = append(taskIDs, r.Task.TaskID)
			created++
		case m.Method == "notifications/progress":
			asleep++
		}
	}
	if !running {
		for _, id := range taskIDs {
			if r := c.TaskResult(id); r.IsError {
				b.Fatalf("task %s: %+v", id, r)
			}
		}
	}
	after.sample()
	closeServer()
	c.Close()
	per := func(a, b float64) float64 { return (a - b) / float64(n) }
	return taskMemory{rss: per(after.rss, before.rss), heap: per(after.heap, before.heap),
		stack: per(after.stack, before.stack), goroutines: per(after.goroutines, before.goroutines), total: after.rss}
}

// sample reads the process's figures after a GC, in KiB.
func (m *taskMemory) sample() {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.heap = float64(ms.HeapInuse) / 1024
	m.stack = float64(ms.StackInuse) / 1024
	m.goroutines = float64(runtime.NumGoroutine())
	m.rss = float64(vmRSS())
}

// vmRSS is the process's resident memory in KiB (0 where /proc is absent).
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := bytes.Fields(sc.Bytes()); len(f) >= 2 && string(f[0]) == "VmRSS:" {
			n, _ := strconv.ParseInt(string(f[1]), 10, 64)
			return n
		}
	}
	return 0
}
