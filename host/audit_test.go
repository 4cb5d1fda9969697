package host_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/hosttest"
)

// syncBuffer is a bytes.Buffer safe for the server's concurrent logging.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // closed and replaced by each Write; nil until await
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wrote != nil {
		close(b.wrote)
		b.wrote = make(chan struct{})
	}
	return b.b.Write(p)
}

// await returns once the log holds s (go test's -timeout bounds a wait
// for a line that never comes).
func (b *syncBuffer) await(s string) {
	for {
		b.mu.Lock()
		if strings.Contains(b.b.String(), s) {
			b.mu.Unlock()
			return
		}
		if b.wrote == nil {
			b.wrote = make(chan struct{})
		}
		wrote := b.wrote
		b.mu.Unlock()
		<-wrote
	}
}

func (b *syncBuffer) lines() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.b.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "audit" {
			out = append(out, m)
		}
	}
	return out
}

// The audit log has one line per tenant action — session opened, call,
// task created, finished, retrieved, cancelled — naming the tenant, the
// tool, the module file and digest, and the outcome, and never the
// arguments.
func TestAuditLog(t *testing.T) {
	var buf syncBuffer
	s := newServer(t, host.Config{CacheDir: host.CompileCacheDir(), Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	c := hosttest.Stdio(t, serveStdio(s))
	c.Initialize(nil)
	const secret = 424242
	if r := c.CallTool("add", map[string]any{"a": secret, "b": 1}); r.IsError {
		t.Fatalf("add: %+v", r)
	}
	task := c.StartTask("slow_count", map[string]any{"steps": 1, "delay_ms": secret % 7}, 0)
	c.TaskResult(task.TaskID)
	long := c.StartTask("slow_count", map[string]any{"steps": 10000, "delay_ms": 60000}, 0)
	if r := c.Call("tasks/cancel", map[string]any{"taskId": long.TaskID}); r.Error != nil {
		t.Fatalf("tasks/cancel: %s", r.Raw)
	}
	c.Close()

	digests := map[any]any{}
	for _, ti := range s.Tools() {
		digests[ti.Name] = ti.Digest
	}
	want := map[string]bool{"session.open": false, "call": false, "task.create": false, "task.finish": false, "task.result": false, "task.cancel": false}
	var tenant string
	for _, l := range buf.lines() {
		a, _ := l["action"].(string)
		if _, ok := want[a]; !ok {
			t.Errorf("unexpected audit action %q: %v", a, l)
			continue
		}
		want[a] = true
		if tenant == "" {
			tenant, _ = l["tenant"].(string)
		}
		if l["tenant"] != tenant || tenant == "" {
			t.Errorf("%s: tenant %v, want the session's %q on every line", a, l["tenant"], tenant)
		}
		if tool := l["tool"]; a != "session.open" && (tool != "add" && tool != "slow_count" || l["digest"] != digests[tool] || l["module"] == nil || l["outcome"] == nil) {
			t.Errorf("%s: %v, want the tool, its module and digest, and an outcome", a, l)
		}
		if b, _ := json.Marshal(l); bytes.Contains(b, []byte("424242")) {
			t.Errorf("%s: the arguments reached the audit log: %s", a, b)
		}
	}
	for a, seen := range want {
		if !seen {
			t.Errorf("no %s line in the audit log", a)
		}
	}
}
