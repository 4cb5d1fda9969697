package host_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	t.Helper()
	nats, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	nats.Start()
	if !nats.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(func() { nats.Shutdown(); nats.WaitForShutdown() })
	keys = filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte(host.NewStoreKeys()), 0o600); err != nil {
		t.Fatal(err)
	}
	return nats.ClientURL(), keys
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
