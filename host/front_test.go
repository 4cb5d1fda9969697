package host

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// serveOn runs s.Serve on a fresh loopback listener for the test and
// returns the address.
func serveOn(t *testing.T, s *Server) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(l) }()
	t.Cleanup(func() { s.Close(); <-done })
	return l.Addr().String()
}

// TestHTTPTimeouts, with short timeouts: a request whose body stalls and a
// keep-alive connection left idle are closed by the server, while a
// tasks/result that waits longer than the read timeout gets its answer.
func TestHTTPTimeouts(t *testing.T) {
	s, err := New(context.Background(), Config{ToolsFS: fstest.MapFS{"m.wasm": {Data: verModule(t, "ver", "v1")}}, CacheDir: testCacheDir,
		ReadTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveOn(t, s)

	// A body that stalls: the server ends the request and the connection.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", addr)
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("reading from a connection whose body stalled: %v, want the server to close it", err)
	}

	// An idle keep-alive connection: closed after one answered request.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(c2)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz on a keep-alive connection: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("an idle connection: read %q, %v; want the server to close it", rest, err)
	}

	// A tasks/result waiting ten times the read timeout still answers.
	h := hosttest.NewHTTPClient(t, "http://"+addr+HTTPPath)
	h.Initialize(nil)
	var created hosttest.ToolResult
	if err := h.Call("tools/call", map[string]any{"name": "ver", "arguments": map[string]any{"ms": 1000}, "task": map[string]any{}}).Decode(&created); err != nil || created.Task == nil {
		t.Fatalf("task call: %+v %v", created, err)
	}
	var res hosttest.ToolResult
	if err := h.Call("tasks/result", map[string]any{"taskId": created.Task.TaskID}).Decode(&res); err != nil || res.Text() != "v1" {
		t.Errorf("tasks/result across the read timeout: %+v %v, want v1", res, err)
	}
}
