package host

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/abi"

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

// TestToolLabelsBounded: past maxToolLabels distinct tools, calls count
// under "other".
func TestToolLabelsBounded(t *testing.T) {
	l := toolLabels{seen: map[string]bool{}}
	for i := range maxToolLabels {
		if got := l.of(strings.Repeat("t", i+1)); got != strings.Repeat("t", i+1) {
			t.Fatalf("label %d = %q", i, got)
		}
	}
	if got := l.of("one-more"); got != "other" {
		t.Errorf("label past the bound = %q, want other", got)
	}
	if got := l.of("t"); got != "t" {
		t.Errorf("a known tool's label = %q, want t", got)
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
