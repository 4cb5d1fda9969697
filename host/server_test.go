package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// stdioClient speaks newline-delimited JSON-RPC to a Server over pipes.
type stdioClient struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	next int
	done chan error
}

func startStdio(t *testing.T, s *host.Server) *stdioClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &stdioClient{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	c.out.Buffer(make([]byte, 1<<20), 16<<20)
	go func() {
		err := s.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		c.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not return after stdin closed")
		}
	})
	c.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{"elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": "test", "version": "1"},
	})
	c.notify("notifications/initialized", map[string]any{})
	return c
}

func (c *stdioClient) send(v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *stdioClient) notify(method string, params any) {
	c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// call sends a request and returns its response, skipping notifications.
func (c *stdioClient) call(method string, params any) map[string]any {
	c.t.Helper()
	c.next++
	id := c.next
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	for c.out.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(c.out.Bytes(), &msg); err != nil {
			c.t.Fatalf("bad JSON from server: %v: %s", err, c.out.Bytes())
		}
		if got, ok := msg["id"].(float64); ok && int(got) == id {
			return msg
		}
	}
	c.t.Fatalf("no response to %s: %v", method, c.out.Err())
	return nil
}

func TestServeEmbeddedToolsOverStdio(t *testing.T) {
	s, err := host.New(context.Background(), host.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := startStdio(t, s)

	resp := c.call("tools/list", map[string]any{})
	tools, _ := resp["result"].(map[string]any)["tools"].([]any)
	support := map[string]string{}
	for _, tl := range tools {
		m := tl.(map[string]any)
		exec, _ := m["execution"].(map[string]any)
		support[m["name"].(string)], _ = exec["taskSupport"].(string)
	}
	t.Logf("tools: %v", support)
	if len(support) < 4 {
		t.Fatalf("got %d tools (%v), want the embedded default set", len(support), support)
	}

	resp = c.call("tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 40}})
	text := fmt.Sprint(resp["result"])
	if !strings.Contains(text, "42") {
		t.Errorf("add 2+40: got %v, want a result containing 42", resp)
	}
}
