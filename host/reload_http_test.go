package host

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// TestReloadOverHTTP: over Streamable HTTP, tools/list follows a reload, a
// client listening on the session's GET stream is told the list changed,
// and a task started before a replacement finishes on the old version.
func TestReloadOverHTTP(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.wasm", verModule(t, "alpha", "alpha-1"))
	s, _ := newReloadServer(t, Config{ToolsDir: dir})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	h := hosttest.NewHTTPClient(t, srv.URL+HTTPPath)
	h.HC = srv.Client()
	h.Initialize(nil)
	defer h.Close()
	if got := listTools(t, h); !slices.Equal(got, []string{"alpha"}) {
		t.Fatalf("tools/list = %v, want [alpha]", got)
	}

	notes, stop := notifications(t, h)
	defer stop()

	var created hosttest.ToolResult
	if err := h.Call("tools/call", map[string]any{"name": "alpha", "arguments": map[string]any{"ms": 100}, "task": map[string]any{}}).Decode(&created); err != nil || created.Task == nil {
		t.Fatalf("tools/call as a task: got %+v (%v), want a task", created, err)
	}
	a2, b1 := verModule(t, "alpha", "alpha-2"), verModule(t, "beta", "beta-1")
	put(t, dir, "a.wasm", a2)
	put(t, dir, "b.wasm", b1)
	await(s, built(map[string]string{"a": digest(a2), "b": digest(b1)}))

	if got := listTools(t, h); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("tools/list after the reload = %v, want [alpha beta]", got)
	}
	told := false
	for m := range notes {
		if told = m.Method == "notifications/tools/list_changed"; told {
			break
		}
		t.Logf("GET stream: %s", m.Raw)
	}
	if !told {
		t.Error("the GET stream ended without notifications/tools/list_changed")
	}
	if got := answer(t, h.Call("tasks/result", map[string]any{"taskId": created.Task.TaskID})); got != "alpha-1" {
		t.Errorf("task started before the replacement: got %q, want alpha-1", got)
	}
	if got := answer(t, h.Call("tools/call", map[string]any{"name": "alpha", "arguments": map[string]any{}})); got != "alpha-2" {
		t.Errorf("call after the replacement: got %q, want alpha-2", got)
	}
}

// notifications opens the session's GET stream, which carries the server
// messages not tied to a request, and returns them on a channel that is
// closed when the stream ends. stop ends the stream and waits for its
// reader.
func notifications(t *testing.T, h *hosttest.HTTPClient) (<-chan hosttest.Message, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", h.SessionID)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := h.HC.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET stream: HTTP %d", resp.StatusCode)
	}
	msgs := make(chan hosttest.Message, 64)
	go func() {
		defer close(msgs)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			raw := json.RawMessage(strings.TrimSpace(data))
			if err := hosttest.CheckClientText(raw); err != nil {
				t.Errorf("GET stream: %v", err)
			}
			m := hosttest.Message{Raw: raw}
			if json.Unmarshal(raw, &m) != nil {
				t.Errorf("GET stream: unparsable message %s", raw)
				continue
			}
			select {
			case msgs <- m:
			default: // the test reads only the first few
			}
		}
	}()
	return msgs, func() {
		cancel()
		for range msgs {
		}
	}
}
