package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/host/internal/mcphttp"
	"github.com/wasmtask/wasmtask/taskengine"
)

// testServer is a Server with a fake tool set and its own engine.
type testServer struct {
	*Server
	tools   *fakeTools
	catalog atomicCatalog // what Config.Catalog returns; tools unless a test swaps it
	engine  *taskengine.Engine

	holds, releases atomic.Int64 // catalog references taken and given back

	edgeEdit func(*mcphttp.Config) // how HTTPHandler's edge is configured
	edgeOnce sync.Once
	edge     *mcphttp.Handler
}

// newTestServerHTTP is newTestServer whose HTTP edge (HTTPHandler) is
// configured by edit.
func newTestServerHTTP(t testing.TB, ecfg taskengine.Config, edit func(*mcphttp.Config)) *testServer {
	t.Helper()
	ts := newTestServer(t, ecfg)
	ts.edgeEdit = edit
	return ts
}

// HTTPHandler is the Streamable HTTP edge in front of the test server, as
// the host builds it; it closes before the server does.
func (ts *testServer) HTTPHandler() http.Handler {
	ts.edgeOnce.Do(func() {
		cfg := mcphttp.Config{MCP: ts.Server, Logger: ts.log, Denied: ts.AuditDenied}
		if ts.edgeEdit != nil {
			ts.edgeEdit(&cfg)
		}
		h, err := mcphttp.New(cfg)
		if err != nil {
			panic(err)
		}
		ts.edge = h
	})
	return ts.edge
}

// atomicCatalog holds the catalog a test server serves.
type atomicCatalog struct{ p atomic.Pointer[Catalog] }

func (a *atomicCatalog) Store(c Catalog) { a.p.Store(&c) }
func (a *atomicCatalog) Load() *Catalog  { return a.p.Load() }

func newTestServer(t testing.TB, ecfg taskengine.Config) *testServer {
	t.Helper()
	return newTestServerWith(t, ecfg, func(*Config) {})
}

// newTestServerWith is newTestServer with the Config changed by edit.
func newTestServerWith(t testing.TB, ecfg taskengine.Config, edit func(*Config)) *testServer {
	t.Helper()
	e, err := taskengine.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	ft := newFakeTools()
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("MCPSERVER_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ts := &testServer{tools: ft, engine: e}
	ts.catalog.Store(ft)
	cfg := Config{Catalog: func(context.Context, string) (Catalog, func(), error) {
		ts.holds.Add(1)
		var once sync.Once
		return *ts.catalog.Load(), func() { once.Do(func() { ts.releases.Add(1) }) }, nil
	}, Engine: e, Logger: logger, Name: "wasmtask-test", Version: "0.0.0", MaxArgumentBytes: 1024}
	edit(&cfg)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = s
	t.Cleanup(func() {
		// Let every parked fake tool go so the engine can close.
		close(ft.release)
		if ts.edge != nil {
			ts.edge.Close()
		}
		s.Close()
		e.Close()
	})
	return ts
}

// stdioClient drives one stdio session with raw JSON-RPC lines, over the
// shared test client (hosttest), which checks every message it receives
// for Go internals in client text. done receives what ServeStdio returned.
type stdioClient struct {
	t    testing.TB
	hc   *hosttest.Client
	done chan error
}

func (ts *testServer) connectStdio(t testing.TB) *stdioClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &stdioClient{t: t, done: make(chan error, 1)}
	go func() {
		c.done <- ts.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	c.hc = hosttest.NewClient(t, inW, outR)
	return c
}

func (c *stdioClient) send(line string) {
	c.t.Helper()
	c.hc.SendRaw(line)
}

// closeInput ends the client's input (EOF on the server's stdin).
func (c *stdioClient) closeInput() { c.hc.CloseInput() }

// nextRaw returns the next message from the server, decoded and as sent;
// ok is false when the server closed its output.
func (c *stdioClient) nextRaw() (m map[string]any, raw string, ok bool) {
	c.t.Helper()
	msg, ok := c.hc.NextOrEnd()
	if !ok {
		return nil, "", false
	}
	if err := json.Unmarshal(msg.Raw, &m); err != nil {
		c.t.Fatalf("unparsable message %s: %v", msg.Raw, err)
	}
	return m, string(msg.Raw), true
}

// next returns the next message from the server.
func (c *stdioClient) next() map[string]any {
	c.t.Helper()
	m, _, ok := c.nextRaw()
	if !ok {
		c.t.Fatal("server closed the connection")
	}
	return m
}

// call sends a request and returns the response, skipping notifications
// (answering elicitations with accept/blue).
func (c *stdioClient) call(id int, method string, params any) map[string]any {
	c.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	c.send(string(b))
	for {
		m := c.next()
		if m["method"] == "elicitation/create" {
			c.answerElicit(m, `{"action":"accept","content":{"color":"blue"}}`)
			continue
		}
		if _, ok := m["method"]; ok {
			continue
		}
		if idOf(m) == fmt.Sprint(id) {
			return m
		}
	}
}

func (c *stdioClient) answerElicit(m map[string]any, result string) {
	id, _ := json.Marshal(m["id"])
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
}

func (c *stdioClient) initialize(elicit bool) {
	c.t.Helper()
	caps := map[string]any{}
	if elicit {
		caps["elicitation"] = map[string]any{}
	}
	r := c.call(0, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	if r["error"] != nil {
		c.t.Fatalf("initialize: %v", r["error"])
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func idOf(m map[string]any) string {
	if v, ok := m["id"]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

func errCode(m map[string]any) int {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return 0
	}
	f, _ := e["code"].(float64)
	return int(f)
}

func result(m map[string]any) map[string]any {
	r, _ := m["result"].(map[string]any)
	return r
}

// normalizer replaces task IDs, timestamps and cursors with stable names.
type normalizer struct {
	t     testing.TB
	ids   map[string]string
	order []string
}

var (
	taskIDRe = regexp.MustCompile(`"taskId":"([A-Z2-7]{26})"`)
	timeRe   = regexp.MustCompile(`"(\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d))"`)
	cursorRe = regexp.MustCompile(`"nextCursor":"[^"]+"`)
)

func (n *normalizer) norm(s string) string {
	for _, m := range taskIDRe.FindAllStringSubmatch(s, -1) {
		if _, ok := n.ids[m[1]]; !ok && !strings.HasPrefix(m[1], "TASK") {
			name := fmt.Sprintf("TASK%d", len(n.ids)+1)
			n.ids[m[1]] = name
			n.order = append(n.order, m[1])
		}
	}
	for _, id := range n.order {
		s = strings.ReplaceAll(s, id, n.ids[id])
	}
	s = timeRe.ReplaceAllStringFunc(s, func(q string) string {
		if _, err := time.Parse(time.RFC3339, strings.Trim(q, `"`)); err != nil {
			n.t.Errorf("timestamp %s is not RFC 3339: %v", q, err)
		}
		return `"<time>"`
	})
	return cursorRe.ReplaceAllString(s, `"nextCursor":"<cursor>"`)
}

// denorm puts real task IDs back into a line the test sends.
func (n *normalizer) denorm(s string) string {
	for real, name := range n.ids {
		s = strings.ReplaceAll(s, `"`+name+`"`, `"`+real+`"`)
	}
	return s
}

// canonical re-encodes a JSON message with sorted keys.
func canonical(raw string) string {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return raw
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}
