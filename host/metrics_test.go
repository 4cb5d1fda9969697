package host

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/hosttest"

	dto "github.com/prometheus/client_model/go"
)

// metric returns the value of the series name{labels} as gathered from
// s's registry, and whether it exists.
func metric(t *testing.T, s *Server, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue series
				}
			}
			return value(m), true
		}
	}
	return 0, false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestMetricsCountCallsAndCache: calls are counted by tool and outcome,
// the result cache's hits and misses are what the cache counted, and the
// exposition is served.
func TestMetricsCountCallsAndCache(t *testing.T) {
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"add.wasm": {Data: addModule(t)}}, CacheDir: testCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	callAs(t, s, "alice", "add", `{"a":1,"b":2}`)
	callAs(t, s, "alice", "add", `{"a":1,"b":2}`) // a hit
	callAs(t, s, "alice", "add", `{"a":1,"b":3}`)
	if _, err := s.Call(context.Background(), "add", []byte(`{"a":"x"}`), quiet{}); err == nil {
		t.Fatal("a call with invalid arguments succeeded")
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"wasmtask_tool_calls_total", map[string]string{"tool": "add", "outcome": "ok"}, 3},
		{"wasmtask_tool_calls_total", map[string]string{"tool": "add", "outcome": "invalid_arguments"}, 1},
		{"wasmtask_tool_call_duration_seconds", map[string]string{"tool": "add"}, 4},
		{"wasmtask_result_cache_hits_total", nil, 1},
		{"wasmtask_result_cache_misses_total", nil, 3},
		{"wasmtask_result_cache_entries", nil, 2},
		{"wasmtask_tenant_calls_total", map[string]string{"tenant": "anonymous", "outcome": "ok"}, 3},
		{"wasmtask_tasks", map[string]string{"status": "working"}, 0},
		{"wasmtask_tools", nil, 1},
		{"wasmtask_instances_running", nil, 0},
	} {
		if got, ok := metric(t, s, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	rec := httptest.NewRecorder()
	s.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, `wasmtask_tool_calls_total{outcome="ok",tool="add"} 3`) {
		t.Errorf("GET /metrics = %d, want 200 with the calls counted:\n%.2000s", rec.Code, body)
	}
}

// TestToolLabelsFollowTheCatalog: 300 junk tool names, served and called
// before a real tool, never take its series: a tool the catalog serves has
// its own label, and once the junk is no longer served its series go, all
// but the most recently retired maxRetiredLabels.
func TestToolLabelsFollowTheCatalog(t *testing.T) {
	dir := t.TempDir()
	var junk []string
	for m := range 2 {
		var tools []string
		for i := range 150 {
			tools = append(tools, fmt.Sprintf("junk-%d-%03d", m, i))
		}
		put(t, dir, fmt.Sprintf("junk%d.wasm", m), manyToolsModule(t, tools))
		junk = append(junk, tools...)
	}
	put(t, dir, "add.wasm", addModule(t))
	s, _ := newReloadServer(t, Config{ToolsDir: dir, CacheDir: testCacheDir})
	if n := len(s.catalog.Load().list); n != len(junk)+1 {
		t.Fatalf("served %d tools, want %d: %v", n, len(junk)+1, s.Problems())
	}
	for _, name := range junk {
		if got := text(t, s, name); got != "ok" {
			t.Fatalf("%s answered %q", name, got)
		}
	}
	callAs(t, s, "", "add", `{"a":1,"b":2}`)
	if got, ok := metric(t, s, "wasmtask_tool_calls_total", map[string]string{"tool": "add", "outcome": "ok"}); !ok || got != 1 {
		t.Errorf("add after %d junk tools: calls{tool=add} = %v (present %v), want 1", len(junk), got, ok)
	}
	if got, ok := metric(t, s, "wasmtask_tool_calls_total", map[string]string{"tool": otherLabel}); ok {
		t.Errorf("calls{tool=other} = %v, want no such series: every call was of a served tool", got)
	}
	if n := toolSeries(t, s); n != len(junk)+1 {
		t.Errorf("%d tool series while %d tools are served and were called, want %d", n, len(junk)+1, len(junk)+1)
	}

	// The junk leaves the catalog: its series go, all but the most
	// recently retired, and add keeps its own.
	before := seq(s)
	remove(t, dir, "junk0.wasm", "junk1.wasm")
	await(s, after(before, serves("add")))
	callAs(t, s, "", "add", `{"a":2,"b":2}`)
	if got, ok := metric(t, s, "wasmtask_tool_calls_total", map[string]string{"tool": "add", "outcome": "ok"}); !ok || got != 2 {
		t.Errorf("add after the junk left: calls{tool=add} = %v (present %v), want 2", got, ok)
	}
	if n := toolSeries(t, s); n != maxRetiredLabels+1 {
		t.Errorf("%d tool series once the junk is retired, want %d (add and the %d names retired last)", n, maxRetiredLabels+1, maxRetiredLabels)
	}
	for _, name := range junk[:len(junk)-maxRetiredLabels] {
		if _, ok := metric(t, s, "wasmtask_tool_call_duration_seconds", map[string]string{"tool": name}); ok {
			t.Fatalf("the duration series of %s, retired long ago, is still there", name)
		}
	}
}

// toolSeries counts the distinct tool label values of the call counter.
func toolSeries(t *testing.T, s *Server) int {
	t.Helper()
	mfs, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "wasmtask_tool_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "tool" {
					tools[lp.GetValue()] = true
				}
			}
		}
	}
	return len(tools)
}

// text calls tool of s with no arguments and returns its first block's
// text.
func text(t *testing.T, s *Server, tool string) string {
	t.Helper()
	res, err := s.Call(context.Background(), tool, nil, quiet{})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", tool)
	}
	return res.Content[0].Text
}

// TestToolLabelsServe: a call of a tool served or recently retired counts
// under its name, of any other under "other"; names retired past
// maxRetiredLabels lose their series, and a name served again is no
// longer retired.
func TestToolLabelsServe(t *testing.T) {
	var dropped []string
	l := toolLabels{drop: func(label string) { dropped = append(dropped, label) }}
	l.serve([]string{"a", "b"})
	if got := l.of("a"); got != "a" {
		t.Errorf("a served: label %q, want a", got)
	}
	if got := l.of("never"); got != otherLabel {
		t.Errorf("a name never served: label %q, want %s", got, otherLabel)
	}
	l.serve([]string{"a"})
	if got := l.of("b"); got != "b" {
		t.Errorf("b just retired: label %q, want b", got)
	}
	var many []string
	for i := range maxRetiredLabels {
		many = append(many, fmt.Sprintf("x%03d", i))
	}
	l.serve(append([]string{"a"}, many...))
	l.serve([]string{"a"}) // b, then the x names, are retired
	if got := l.of("b"); got != otherLabel || !slices.Equal(dropped, []string{"b"}) {
		t.Errorf("b retired past the bound: label %q, dropped %v, want %s and [b]", got, dropped, otherLabel)
	}
	l.serve([]string{"a", "x000"})
	if len(l.retired) != maxRetiredLabels-1 || slices.Contains(l.retired, "x000") {
		t.Errorf("x000 served again: retired %v, want the other %d", l.retired, maxRetiredLabels-1)
	}
}

// TestProbes: /healthz answers while the process serves; /readyz is 503
// while the modules found at start load, 200 once they have, and 503 again
// once the server shuts down.
func TestProbes(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
	gate := make(chan struct{})
	s, err := New(context.Background(), Config{ToolsDir: dir, ReloadDebounce: testDebounce, CacheDir: testCacheDir,
		wrapLoader: holding(map[string]chan struct{}{"a": gate})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	if code, _ := get(HealthPath); code != http.StatusOK {
		t.Errorf("healthz while loading = %d, want 200", code)
	}
	if code, body := get(ReadyPath); code != http.StatusServiceUnavailable || body != "loading tools" {
		t.Errorf("readyz while loading = %d %q, want 503 loading tools", code, body)
	}
	close(gate)
	_ = s.ready(context.Background(), "")
	if code, _ := get(ReadyPath); code != http.StatusOK {
		t.Errorf("readyz once loaded = %d, want 200", code)
	}
	s.Close()
	if code, body := get(ReadyPath); code != http.StatusServiceUnavailable || body != "shutting down" {
		t.Errorf("readyz after close = %d %q, want 503 shutting down", code, body)
	}
}

// BenchmarkMetricsOnCallPath is what the metrics add to each call: the
// work observeCall and the admission wait's histogram do (the rest of the
// call path does not touch them). Read it against BenchmarkCallPath's
// cheapest call (tens of µs):
//
//	go test -run '^$' -bench 'MetricsOnCallPath|CallPath/wat' ./host/
func BenchmarkMetricsOnCallPath(b *testing.B) {
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"add.wasm": {Data: addModule(b)}}, CacheDir: testCacheDir})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	res := &abi.Result{Content: []abi.Content{{Type: "text", Text: "3"}}}
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		s.metrics.wait.Observe(time.Since(start).Seconds())
		s.metrics.observeCall("add", "tenant-a", res, nil, start)
	}
}

// manyToolsModule is a WAT module declaring tools, each of which answers
// "ok", built by hosttest.Wasm from source generated here.
func manyToolsModule(t *testing.T, tools []string) []byte {
	t.Helper()
	var decl []string
	for _, name := range tools {
		decl = append(decl, fmt.Sprintf(`{"name":%q}`, name))
	}
	manifest := `{"abi":1,"tools":[` + strings.Join(decl, ",") + `]}`
	src := fmt.Sprintf(manyToolsWAT, strings.ReplaceAll(manifest, `"`, `\"`))
	path := filepath.Join(t.TempDir(), "many.wat")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return hosttest.Wasm(t, path)
}

// manyToolsWAT describes itself with the manifest put in at %s (at 8192,
// up to the end of its one page) and answers every call "ok".
const manyToolsWAT = `(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\00")
  (data (i32.const 8192) "%s\00")
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func $puts (param $p i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (call $strlen (local.get $p)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    ;; {"abi":1,"method":"describe"}: byte 19 is the method's first letter
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100))
      (then (call $puts (i32.const 8192)) (return)))
    (call $puts (i32.const 4096)))
)`
