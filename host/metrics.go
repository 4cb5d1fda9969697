package host

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/mcpserver"
	"github.com/wasmtask/wasmtask/host/internal/resultcache"
	"github.com/wasmtask/wasmtask/plugins"
	"github.com/wasmtask/wasmtask/taskengine"
)

// metrics is the server's Prometheus registry. The call path counts
// calls, their outcomes, durations and admission waits as they happen;
// every other figure (cache, tasks, instances, memory, tools, problems) is
// read at scrape time from the part that owns it, so no number is kept
// twice.
type metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec   // tool, outcome
	tenants  *prometheus.CounterVec   // tenant, outcome
	denied   *prometheus.CounterVec   // status
	duration *prometheus.HistogramVec // tool
	wait     prometheus.Histogram     // time calls spent in admission
	tools    toolLabels
	tenantLs toolLabels // tenant label values, bounded the same way
}

// maxToolLabels bounds the distinct tool (and tenant) label values: tool
// names come from modules, and a directory of hostile modules must not
// grow the series without bound; tenant names come from the operator's
// file, which reloads may rename. Values past the bound count as "other".
const maxToolLabels = 256

// toolLabels hands out label values, at most maxToolLabels of them.
type toolLabels struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (l *toolLabels) of(tool string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[tool] {
		return tool
	}
	if len(l.seen) >= maxToolLabels {
		return "other"
	}
	l.seen[tool] = true
	return tool
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmtask_tool_calls_total",
			Help: "Tool calls that ended, plain and task, by tool and outcome (ok, tool_error, or why the call failed).",
		}, []string{"tool", "outcome"}),
		tenants: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmtask_tenant_calls_total",
			Help: "Tool calls that ended, by authenticated tenant (\"anonymous\" without one) and outcome.",
		}, []string{"tenant", "outcome"}),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmtask_requests_denied_total",
			Help: "HTTP requests refused before MCP (authentication, rate, Origin, Host, caps), by status code.",
		}, []string{"status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wasmtask_tool_call_duration_seconds",
			Help:    "Time from a call's admission request to its result, by tool (cache hits included).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10), // 0.5 ms to about 2 min
		}, []string{"tool"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wasmtask_admission_wait_seconds",
			Help:    "Time calls spent in admission before their guest started (near zero unless slots or memory ran short).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		tools:    toolLabels{seen: map[string]bool{}},
		tenantLs: toolLabels{seen: map[string]bool{}},
	}
	cache := func(f func(st resultcache.Stats) float64) func() float64 {
		return func() float64 { return f(s.results.Stats()) }
	}
	engine := func(f func(st taskengine.Stats) float64) func() float64 {
		return func() float64 { return f(s.engine.Stats()) }
	}
	adm := func(f func(a *admission) float64) func() float64 {
		return func() float64 {
			s.adm.mu.Lock()
			defer s.adm.mu.Unlock()
			return f(s.adm)
		}
	}
	served := func(f func(c *catalog) float64) func() float64 {
		return func() float64 { return f(s.catalog.Load()) }
	}
	m.reg.MustRegister(
		m.calls, m.tenants, m.denied, m.duration, m.wait,
		taskStates{s.engine},
		counterFunc("wasmtask_reloads_total", "Catalogs built from the tool directory (the first, each rescan, and each batch of modules that finished loading).",
			served(func(c *catalog) float64 { return float64(c.gen.Seq()) })),
		counterFunc("wasmtask_result_cache_hits_total", "Calls answered from the result cache.", cache(func(st resultcache.Stats) float64 { return float64(st.Hits) })),
		counterFunc("wasmtask_result_cache_misses_total", "Calls of cacheable tools that ran the guest.", cache(func(st resultcache.Stats) float64 { return float64(st.Misses) })),
		counterFunc("wasmtask_result_cache_shared_total", "Calls that waited for an identical call running and took its result.", cache(func(st resultcache.Stats) float64 { return float64(st.Shared) })),
		counterFunc("wasmtask_result_cache_evictions_total", "Cached results evicted by the entry or byte bounds.", cache(func(st resultcache.Stats) float64 { return float64(st.Evictions) })),
		counterFunc("wasmtask_result_cache_expirations_total", "Cached results dropped when their TTL passed.", cache(func(st resultcache.Stats) float64 { return float64(st.Expirations) })),
		gaugeFunc("wasmtask_result_cache_entries", "Results in the result cache.", cache(func(st resultcache.Stats) float64 { return float64(st.Entries) })),
		gaugeFunc("wasmtask_result_cache_bytes", "Bytes of results in the result cache.", cache(func(st resultcache.Stats) float64 { return float64(st.Bytes) })),
		gaugeFunc("wasmtask_tasks_retained", "Tasks kept, running and finished (until their TTL).", engine(func(st taskengine.Stats) float64 { return float64(st.Tasks) })),
		gaugeFunc("wasmtask_tasks_running", "Tasks whose work has not ended.", engine(func(st taskengine.Stats) float64 { return float64(st.Running) })),
		gaugeFunc("wasmtask_task_result_bytes", "Bytes of finished task results kept.", engine(func(st taskengine.Stats) float64 { return float64(st.ResultBytes) })),
		gaugeFunc("wasmtask_instances_running", "Guest instances running now.", adm(func(a *admission) float64 { return float64(a.running) })),
		gaugeFunc("wasmtask_instances_max", "The server's bound on instances running at once.", adm(func(a *admission) float64 { return float64(a.slots) })),
		gaugeFunc("wasmtask_calls_waiting", "Calls waiting for admission.", adm(func(a *admission) float64 { return float64(a.waiting) })),
		gaugeFunc("wasmtask_memory_reserved_bytes", "Guest memory reserved by the running calls.", adm(func(a *admission) float64 { return float64(a.reserved) })),
		gaugeFunc("wasmtask_memory_budget_bytes", "The server's memory budget for guests.", adm(func(a *admission) float64 { return float64(a.budget) })),
		gaugeFunc("wasmtask_tools", "Tools served.", served(func(c *catalog) float64 { return float64(len(c.list)) })),
		gaugeFunc("wasmtask_modules_loading", "Modules still compiling in the background.", served(func(c *catalog) float64 { return float64(c.gen.Loading()) })),
		gaugeFunc("wasmtask_load_problems", "Modules of the tool directory not served as they are, and policy problems.", served(func(c *catalog) float64 {
			n := 0
			for _, p := range c.problems {
				if !errors.Is(p.Err, plugins.ErrLoading) {
					n++
				}
			}
			return float64(n)
		})),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func counterFunc(name, help string, f func() float64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
}

func gaugeFunc(name, help string, f func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
}

// observeCall counts one call of a served tool by tenant ("" without
// authentication) that ended with res or err, started at start.
func (m *metrics) observeCall(tool, tenant string, res *abi.Result, err error, start time.Time) {
	label, outcome := m.tools.of(tool), callOutcome(res, err)
	m.calls.WithLabelValues(label, outcome).Inc()
	if tenant == "" {
		tenant = "anonymous"
	} else {
		tenant = m.tenantLs.of(tenant)
	}
	m.tenants.WithLabelValues(tenant, outcome).Inc()
	m.duration.WithLabelValues(label).Observe(time.Since(start).Seconds())
}

// taskStates collects the retained tasks by status, from the engine at
// scrape time.
type taskStates struct{ e *taskengine.Engine }

var taskStatesDesc = prometheus.NewDesc("wasmtask_tasks", "Retained tasks by status.", []string{"status"}, nil)

func (taskStates) Describe(ch chan<- *prometheus.Desc) { ch <- taskStatesDesc }

func (c taskStates) Collect(ch chan<- prometheus.Metric) {
	for st, n := range c.e.StatusCounts() {
		ch <- prometheus.MustNewConstMetric(taskStatesDesc, prometheus.GaugeValue, float64(n), string(st))
	}
}

// callOutcome is the outcome label: "ok", "tool_error" when the tool
// answered isError, else the failure's kind.
func callOutcome(res *abi.Result, err error) string {
	switch {
	case err != nil:
		var f *mcpserver.Failure
		if errors.As(failureOf(err), &f) {
			return f.Kind.String()
		}
		return "internal"
	case res != nil && res.IsError:
		return "tool_error"
	case res != nil && res.Error != nil:
		return "protocol_error"
	}
	return "ok"
}

// MetricsHandler serves the server's Prometheus metrics (text exposition
// format): calls by tool and outcome, durations, admission waits,
// instances and memory, tasks by status, calls by tenant, requests denied,
// the result cache, tools, load problems and reloads, and the Go
// runtime's own. Serve it on an address operators
// reach, apart from the MCP endpoint.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{Registry: s.metrics.reg})
}
