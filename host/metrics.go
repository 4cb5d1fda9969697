package host

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wasmtask/wasmtask/abi"
	"github.com/wasmtask/wasmtask/host/internal/admission"
	"github.com/wasmtask/wasmtask/host/internal/mcperr"
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
	tenantLs tenantLabels
}

// maxRetiredLabels bounds the tool label values kept for tools the
// catalog no longer serves: a call admitted before a swap that ends after
// it still counts under its tool's name while that name is among the
// maxRetiredLabels most recently retired.
const maxRetiredLabels = 64

// toolLabels decides the tool label of a call. A tool name is a label
// value while the served catalog has the tool, and for a while after it
// left (the maxRetiredLabels names most recently retired); any other name
// counts as "other". A name that leaves the retired names has its series
// deleted. So the series follow the catalog: however many names modules
// declared before, a tool served now has its own series, and the count of
// series is bounded by the tools served (the catalog's own bound: modules
// × tools per module) plus maxRetiredLabels.
//
// Calls count under the read lock and swaps take the write lock, so that
// no count lands in a series after it was deleted.
type toolLabels struct {
	mu      sync.RWMutex
	served  map[string]bool
	retired []string           // oldest first, none served
	drop    func(label string) // deletes the series of label
}

// of returns tool's label; the caller holds l.mu for reading.
func (l *toolLabels) of(tool string) string {
	if l.served[tool] || slices.Contains(l.retired, tool) {
		return tool
	}
	return otherLabel
}

const otherLabel = "other"

// serve makes tools, sorted, the served names: a name no longer served is
// retired, one served again is no longer retired, and the series of the
// names retired longest ago are deleted down to maxRetiredLabels.
func (l *toolLabels) serve(tools []string) {
	next := make(map[string]bool, len(tools))
	for _, t := range tools {
		next[t] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retired = slices.DeleteFunc(l.retired, func(t string) bool { return next[t] })
	for _, t := range slices.Sorted(maps.Keys(l.served)) {
		if !next[t] {
			l.retired = append(l.retired, t)
		}
	}
	if n := len(l.retired) - maxRetiredLabels; n > 0 {
		for _, t := range l.retired[:n] {
			l.drop(t)
		}
		l.retired = slices.Delete(l.retired, 0, n)
	}
	l.served = next
}

// maxTenantLabels bounds the distinct tenant label values: tenant names
// come from the operator's file, which reloads may rename. Values past
// the bound count as "other".
const maxTenantLabels = 256

// tenantLabels hands out tenant label values, at most maxTenantLabels of
// them, first come.
type tenantLabels struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (l *tenantLabels) of(tenant string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[tenant] {
		return tenant
	}
	if len(l.seen) >= maxTenantLabels {
		return otherLabel
	}
	l.seen[tenant] = true
	return tenant
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
		tenantLs: tenantLabels{seen: map[string]bool{}},
	}
	m.tools.drop = func(label string) {
		m.calls.DeletePartialMatch(prometheus.Labels{"tool": label})
		m.duration.DeleteLabelValues(label)
	}
	cache := func(f func(st resultcache.Stats) float64) func() float64 {
		return func() float64 { return f(s.results.Stats()) }
	}
	engine := func(f func(st taskengine.Stats) float64) func() float64 {
		return func() float64 { return f(s.engine.Stats()) }
	}
	adm := func(f func(st admission.Stats) float64) func() float64 {
		return func() float64 { return f(s.adm.Stats()) }
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
		counterFunc("wasmtask_task_store_errors_total", "Calls into the shared task store (and to the other replicas) that failed.", engine(func(st taskengine.Stats) float64 { return float64(st.StoreErrors) })),
		counterFunc("wasmtask_task_leases_expired_total", "Tasks this replica failed because the replica running them stopped renewing its lease.", engine(func(st taskengine.Stats) float64 { return float64(st.RunnersLost) })),
		gaugeFunc("wasmtask_instances_running", "Guest instances running now.", adm(func(st admission.Stats) float64 { return float64(st.Running) })),
		gaugeFunc("wasmtask_instances_max", "The server's bound on instances running at once.", adm(func(st admission.Stats) float64 { return float64(st.Slots) })),
		gaugeFunc("wasmtask_calls_waiting", "Calls waiting for admission.", adm(func(st admission.Stats) float64 { return float64(st.Waiting) })),
		gaugeFunc("wasmtask_memory_reserved_bytes", "Guest memory reserved by the running calls.", adm(func(st admission.Stats) float64 { return float64(st.Reserved) })),
		gaugeFunc("wasmtask_memory_budget_bytes", "The server's memory budget for guests.", adm(func(st admission.Stats) float64 { return float64(st.Budget) })),
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
		gaugeFunc("wasmtask_task_store_up", "1 while the shared task store answers this replica's lease renewals (always 1 without one).", func() float64 {
			if s.store != nil && s.store.Unavailable() != nil {
				return 0
			}
			return 1
		}),
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
	outcome := callOutcome(res, err)
	if tenant == "" {
		tenant = "anonymous"
	} else {
		tenant = m.tenantLs.of(tenant)
	}
	m.tenants.WithLabelValues(tenant, outcome).Inc()
	m.tools.mu.RLock()
	defer m.tools.mu.RUnlock()
	label := m.tools.of(tool)
	m.calls.WithLabelValues(label, outcome).Inc()
	m.duration.WithLabelValues(label).Observe(time.Since(start).Seconds())
}

// served makes the tools of c, the catalog now served, the tool label
// values (toolLabels).
func (m *metrics) served(c *catalog) {
	names := make([]string, len(c.list))
	for i, t := range c.list {
		names[i] = t.Name
	}
	m.tools.serve(names)
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
		var f *mcperr.Failure
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
