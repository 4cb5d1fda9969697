package host_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// TestReplicasShareTasksOverHTTP: two servers on one NATS JetStream store.
// A 2026-07-28 client, with no session and no affinity, creates a task on
// one and reads, cancels and fetches results on the other.
func TestReplicasShareTasksOverHTTP(t *testing.T) {
	natsURL, keys := startStore(t)
	replica := func() *hosttest.ModernClient {
		s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), Store: host.StoreConfig{URL: natsURL, KeysFile: keys}})
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		c := hosttest.NewModernClient(t, ts.URL+host.HTTPPath)
		c.HC = ts.Client()
		return c
	}
	a, b := replica(), replica()

	start := func(c *hosttest.ModernClient, steps, delay int) string {
		t.Helper()
		m := c.Call("tools/call", map[string]any{"name": "slow_count", "arguments": map[string]any{"steps": steps, "delay_ms": delay}})
		id, _ := m.Map()["taskId"].(string)
		if m.Error != nil || id == "" {
			t.Fatalf("tools/call slow_count: %v %s; want a task", m.Error, m.Result)
		}
		return id
	}
	get := func(c *hosttest.ModernClient, id string) map[string]any {
		t.Helper()
		m := c.Call("tasks/get", map[string]any{"taskId": id})
		if m.Error != nil {
			t.Fatalf("tasks/get %s: %v", id, m.Error)
		}
		return m.Map()
	}

	long := start(a, 1000, 20)
	if st := get(b, long)["status"]; st != "working" {
		t.Fatalf("B: tasks/get of A's task: status %v, want working", st)
	}
	if m := b.Call("tasks/cancel", map[string]any{"taskId": long}); m.Error != nil {
		t.Fatalf("B: tasks/cancel: %v", m.Error)
	}
	for _, c := range []*hosttest.ModernClient{a, b} {
		if st := get(c, long)["status"]; st != "cancelled" {
			t.Errorf("after B's cancel: status %v, want cancelled on both replicas", st)
		}
	}

	short := start(b, 2, 1)
	var done map[string]any
	for done == nil { // a 2026-07-28 client polls; so does this one
		if r := get(a, short); r["status"] != "working" {
			done = r
		}
	}
	res, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || !strings.Contains(fmt.Sprint(res["content"]), "2") {
		t.Errorf("A: tasks/get of B's finished task = %v; want completed with B's result", done)
	}
	if m := a.Call("tasks/get", map[string]any{"taskId": strings.Repeat("A", 26)}); m.Error == nil {
		t.Errorf("tasks/get of an unknown task answered %s, want an error", m.Result)
	}
}

// startStore starts a NATS server with JetStream for a test's replicas and
// writes their key file; it returns the server's URL and the file's path.
func startStore(t *testing.T) (url, keys string) {
	st := startStoreServer(t)
	return st.url, st.keys
}

// storeServer is the NATS server of a test's store, which the test may
// stop and start again on the same port and directory.
type storeServer struct {
	t         *testing.T
	opts      *server.Options
	srv       *server.Server
	url, keys string
}

func startStoreServer(t *testing.T) *storeServer {
	t.Helper()
	st := &storeServer{t: t, opts: &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}}
	st.start()
	st.url = st.srv.ClientURL()
	st.opts.Port = st.srv.Addr().(*net.TCPAddr).Port // a restart keeps it
	t.Cleanup(st.stop)
	st.keys = filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(st.keys, []byte(host.NewStoreKeys()), 0o600); err != nil {
		t.Fatal(err)
	}
	return st
}

func (st *storeServer) start() {
	st.t.Helper()
	srv, err := server.NewServer(st.opts.Clone())
	if err != nil {
		st.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		st.t.Fatal("nats server did not start")
	}
	st.srv = srv
}

func (st *storeServer) stop() {
	if st.srv != nil {
		st.srv.Shutdown()
		st.srv.WaitForShutdown()
		st.srv = nil
	}
}

// TestStoreOutage: while the task store is away, a task-augmented call is
// refused with -32603 and a message that says so (no Go text), /readyz
// answers 503 naming the store, and the log says it was lost; once the
// store is back, /readyz is 200 again, the log says so, and tasks run.
func TestStoreOutage(t *testing.T) {
	st := startStoreServer(t)
	var logs syncBuffer
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Store: host.StoreConfig{URL: st.url, KeysFile: st.keys}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	c := hosttest.NewModernClient(t, ts.URL+host.HTTPPath)
	c.HC = ts.Client()
	call := func() hosttest.Message {
		return c.Call("tools/call", map[string]any{"name": "slow_count", "arguments": map[string]any{"steps": 1, "delay_ms": 1}})
	}
	ready := func() (int, string) {
		res, err := ts.Client().Get(ts.URL + host.ReadyPath)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, strings.TrimSpace(string(b))
	}
	s.Tools() // returns once the tools have loaded: /readyz then speaks of the store alone
	if code, body := ready(); code != 200 {
		t.Fatalf("/readyz with the store up: %d %q", code, body)
	}
	if m := call(); m.Error != nil {
		t.Fatalf("with the store up: tools/call: %v", m.Error)
	}

	st.stop()
	logs.await(`"msg":"task store unreachable`) // at the next lease renewal
	if code, body := ready(); code != 503 || body != "task store unreachable" {
		t.Errorf("/readyz with the store away: %d %q, want 503 \"task store unreachable\"", code, body)
	}
	m := call()
	if m.Error == nil || m.Error.Code != -32603 || m.Error.Message != "the task store is unavailable; try again later" {
		t.Errorf("tools/call with the store away: %+v %s; want -32603 \"the task store is unavailable; try again later\"", m.Error, m.Result)
	}

	if v := scrape(t, s, "wasmtask_task_store_up"); v != 0 {
		t.Errorf("wasmtask_task_store_up with the store away = %v, want 0", v)
	}
	if v := scrape(t, s, "wasmtask_task_store_errors_total"); v < 1 {
		t.Errorf("wasmtask_task_store_errors_total after a refused call = %v, want at least 1", v)
	}

	st.start()
	logs.await(`"msg":"task store reachable again"`)
	if v := scrape(t, s, "wasmtask_task_store_up"); v != 1 {
		t.Errorf("wasmtask_task_store_up with the store back = %v, want 1", v)
	}
	if code, body := ready(); code != 200 {
		t.Errorf("/readyz with the store back: %d %q", code, body)
	}
	if m := call(); m.Error != nil {
		t.Errorf("with the store back: tools/call: %v", m.Error)
	}
}

// TestReplicasShareTenantTasks2025: with tenants, a task belongs to its
// tenant, so 2025-11-25 sessions of one tenant on two replicas share it: a
// blocking tasks/result on B wakes when the task on A finishes, tasks/list
// on B shows it, a cancel on B stops A's guest; another tenant sees none.
func TestReplicasShareTenantTasks2025(t *testing.T) {
	natsURL, keys := startStore(t)
	tenants := filepath.Join(t.TempDir(), "tenants.yaml")
	doc := fmt.Sprintf("tenants:\n  alice:\n    tokens: [%q]\n  bob:\n    tokens: [%q]\n", host.HashToken("alice-token"), host.HashToken("bob-token"))
	if err := os.WriteFile(tenants, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint := func() string {
		s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), TenantsFile: tenants, Store: host.StoreConfig{URL: natsURL, KeysFile: keys}})
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		return ts.URL + host.HTTPPath
	}
	a, b := endpoint(), endpoint()
	session := func(url, token string) *hosttest.HTTPClient {
		h := hosttest.NewHTTPClient(t, url)
		h.Header.Set("Authorization", "Bearer "+token)
		h.Initialize(nil)
		t.Cleanup(h.Close)
		return h
	}
	onA, onB, bobOnB := session(a, "alice-token"), session(b, "alice-token"), session(b, "bob-token")
	start := func(steps, delay int) string {
		t.Helper()
		m := onA.Call("tools/call", map[string]any{"name": "slow_count", "arguments": map[string]any{"steps": steps, "delay_ms": delay}, "task": map[string]any{"ttl": 600000}})
		var r struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.Task.TaskID == "" {
			t.Fatalf("task-augmented tools/call on A: %v %s", m.Error, m.Result)
		}
		return r.Task.TaskID
	}

	short := start(3, 1)
	m := onB.Call("tasks/result", map[string]any{"taskId": short}) // blocks until A's task ends
	if m.Error != nil || !strings.Contains(string(m.Result), "3") || !strings.Contains(string(m.Result), short) {
		t.Errorf("tasks/result on B of A's task: %v %s; want its result, related to it", m.Error, m.Result)
	}
	m = onB.Call("tasks/list", map[string]any{})
	if m.Error != nil || !strings.Contains(string(m.Result), short) {
		t.Errorf("tasks/list on B: %v %s; want A's task", m.Error, m.Result)
	}
	if m := bobOnB.Call("tasks/get", map[string]any{"taskId": short}); m.Error == nil {
		t.Errorf("another tenant's tasks/get on B answered %s, want an error", m.Result)
	}
	if m := bobOnB.Call("tasks/list", map[string]any{}); m.Error != nil || strings.Contains(string(m.Result), short) {
		t.Errorf("another tenant's tasks/list on B: %v %s; want none of alice's", m.Error, m.Result)
	}

	long := start(1000, 20)
	if m := onB.Call("tasks/cancel", map[string]any{"taskId": long}); m.Error != nil || !strings.Contains(string(m.Result), `"cancelled"`) {
		t.Fatalf("tasks/cancel on B: %v %s; want the task cancelled", m.Error, m.Result)
	}
	if m := onA.Call("tasks/get", map[string]any{"taskId": long}); !strings.Contains(string(m.Result), `"cancelled"`) {
		t.Errorf("tasks/get on A after B's cancel: %v %s; want cancelled", m.Error, m.Result)
	}
}

// scrape reads the value of the unlabelled metric name from s's metrics.
func scrape(t *testing.T, s *host.Server, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	s.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", name, l)
			}
			return f
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
