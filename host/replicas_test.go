package host_test

import (
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
	nats, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	nats.Start()
	if !nats.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(func() { nats.Shutdown(); nats.WaitForShutdown() })
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte(host.NewStoreKeys()), 0o600); err != nil {
		t.Fatal(err)
	}
	replica := func() *hosttest.ModernClient {
		s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), Store: host.StoreConfig{URL: nats.ClientURL(), KeysFile: keys}})
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
