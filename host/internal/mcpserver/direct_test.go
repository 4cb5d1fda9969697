package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/host/hosttest"
	"github.com/wasmtask/wasmtask/taskengine"
)

func TestParseDirect(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"get", `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"T"}}`, true},
		{"result, string id", `{"jsonrpc":"2.0","id":"a-1","method":"tasks/result","params":{"taskId":"T"}}`, true},
		{"cancel, spaces", ` { "params" : { "taskId" : "T" } , "method":"tasks/cancel","id":-3,"jsonrpc":"2.0"} `, true},
		{"list", `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"taskId":"T"}}`, false},
		{"tools/call with a task ID", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"taskId":"T"}}`, false},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}`, true},
		{"tools/call, no arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`, true},
		{"tools/call, task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"task":{"ttl":5}}}`, true},
		{"tools/call, _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1}}}`, false},
		{"tools/call, no name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, false},
		{"tools/call, name a number", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, false},
		{"tools/call, case-folded name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"t"}}`, false},
		{"tools/call, repeated arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"arguments":{}}}`, false},
		{"tools/call, extra member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","x":1}}`, false},
		{"tools/call, nested as deep as go-sdk reads", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":` + strings.Repeat("[", 997) + strings.Repeat("]", 997) + `}}}`, true},
		{"tools/call, nested deeper than go-sdk reads", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}}`, false},
		{"id 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"tasks/get","params":{"taskId":"T"}}`, true},
		{"id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tasks/get","params":{"taskId":"T"}}`, false},
		{"notification", `{"jsonrpc":"2.0","method":"tasks/get","params":{"taskId":"T"}}`, false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"T"}}]`, false},
		{"version", `{"jsonrpc":"1.0","id":1,"method":"tasks/get","params":{"taskId":"T"}}`, false},
		{"float id", `{"jsonrpc":"2.0","id":1.0,"method":"tasks/get","params":{"taskId":"T"}}`, false},
		{"id with exponent", `{"jsonrpc":"2.0","id":1e3,"method":"tasks/get","params":{"taskId":"T"}}`, false},
		{"escaped id", `{"jsonrpc":"2.0","id":"a\u0041","method":"tasks/get","params":{"taskId":"T"}}`, false},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"taskId":"T"}}`, false},
		{"_meta", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"T","_meta":{}}}`, false},
		{"case-folded member", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"TaskId":"T"}}`, false},
		{"case-folded method member", `{"jsonrpc":"2.0","id":1,"Method":"tasks/get","params":{"taskId":"T"}}`, false},
		{"repeated member", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"T","taskId":"U"}}`, false},
		{"extra member", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"T"},"x":1}`, false},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tasks/get"}`, false},
		{"empty task ID", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":""}}`, false},
		{"task ID a number", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":5}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := parseDirect([]byte(tc.body)); ok != tc.ok {
				t.Errorf("parseDirect(%s): got ok=%v, want %v", tc.body, ok, tc.ok)
			}
		})
	}
}

// postRaw posts body on c's session and returns the answer's content type
// and its one JSON-RPC message (from a JSON body or an event stream).
func postRaw(t *testing.T, c *httpClient, body string) (string, map[string]any) {
	t.Helper()
	resp := c.do(http.MethodPost, body)
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: HTTP %d %s", body, resp.StatusCode, b)
	}
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(ct, "text/event-stream") {
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		raw = nil
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				raw = []byte(strings.TrimSpace(d))
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("POST %s: answer %q: %v", body, raw, err)
	}
	return ct, m
}

// The front answers task polls itself (JSON) with exactly what go-sdk's
// path (an event stream) answers: the same request with an empty _meta,
// which the front leaves to go-sdk, is the reference.
func TestHTTPTaskPollsAnswerAsGoSDK(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	other := newHTTPClient(t, srv)
	other.initialize()

	done := taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "Ada"}, "task": map[string]any{}}))
	failed := taskIDOf(t, c.call(2, "tools/call", map[string]any{"name": "fail", "task": map[string]any{}}))
	for _, id := range []string{done, failed} {
		c.call(3, "tasks/result", map[string]any{"taskId": id}) // both have ended
	}
	for _, tc := range []struct {
		name   string
		c      *httpClient
		method string
		id     string
		fast   bool // answered by the front
	}{
		{"get", c, "tasks/get", done, true},
		{"get failed", c, "tasks/get", failed, true},
		{"result", c, "tasks/result", done, true},
		{"result failed", c, "tasks/result", failed, true},
		{"cancel ended", c, "tasks/cancel", done, true},
		{"get unknown", c, "tasks/get", "nope", true},
		{"cancel unknown", c, "tasks/cancel", "nope", true},
		{"result unknown", c, "tasks/result", "nope", false},
		{"get another session's", other, "tasks/get", done, true},
		{"cancel another session's", other, "tasks/cancel", done, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			poll := fmt.Sprintf(`{"jsonrpc":"2.0","id":41,"method":%q,"params":{"taskId":%q}}`, tc.method, tc.id)
			viaSDK := fmt.Sprintf(`{"jsonrpc":"2.0","id":41,"method":%q,"params":{"taskId":%q,"_meta":{}}}`, tc.method, tc.id)
			ct, got := postRaw(t, tc.c, poll)
			refCT, want := postRaw(t, tc.c, viaSDK)
			if !strings.HasPrefix(refCT, "text/event-stream") {
				t.Fatalf("reference answer: content type %q, want go-sdk's event stream", refCT)
			}
			if fast := ct == "application/json"; fast != tc.fast {
				t.Errorf("answered by the front: %v (content type %q), want %v", fast, ct, tc.fast)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("answer differs from go-sdk's path (-go-sdk +front):\n%s", d)
			}
		})
	}
}

// A poll of a deleted session, or of a session go-sdk has not served for
// half its idle timeout, goes to go-sdk.
func TestHTTPTaskPollsOnlyOnLiveSessions(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	id := taskIDOf(t, c.call(1, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "Ada"}, "task": map[string]any{}}))
	poll := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"taskId":%q}}`, id)
	if ct, _ := postRaw(t, c, poll); ct != "application/json" {
		t.Fatalf("poll of a live session: content type %q, want the front's application/json", ct)
	}

	sid := c.hc.SessionID
	ts.mu.Lock()
	ts.sessions[sid].sdkSeen = time.Now().Add(-ts.cfg.SessionTimeout / 2)
	ts.mu.Unlock()
	if ct, _ := postRaw(t, c, poll); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("poll of a session go-sdk last served half its timeout ago: content type %q, want go-sdk's stream", ct)
	}
	if ct, _ := postRaw(t, c, poll); ct != "application/json" {
		t.Errorf("poll right after go-sdk served the session: content type %q, want application/json", ct)
	}

	if resp := c.do(http.MethodDelete, ""); resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: HTTP %d", resp.StatusCode)
	}
	resp := c.do(http.MethodPost, poll)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("poll of a deleted session: HTTP %d, want go-sdk's 404", resp.StatusCode)
	}
}

// normaliseTask blanks what differs between two created tasks (their ID
// and times) in a tools/call answer.
func normaliseTask(m map[string]any) {
	res, _ := m["result"].(map[string]any)
	task, _ := res["task"].(map[string]any)
	for _, k := range []string{"taskId", "createdAt", "lastUpdatedAt"} {
		if _, ok := task[k]; ok {
			task[k] = "…"
		}
	}
}

// The front answers tools/call itself (JSON) with exactly what go-sdk's
// path answers: the same request with an empty _meta, which the front
// leaves to go-sdk, is the reference. A call whose tool could ask the
// session's client a question keeps go-sdk's stream.
func TestHTTPDirectCallsAnswerAsGoSDK(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize() // declares elicitation
	for _, tc := range []struct {
		name   string
		params string // without the closing brace
		fast   bool
	}{
		{"plain", `{"name":"quick","arguments":{"name":"Ada"}`, true},
		{"plain, spaces in arguments", `{"name":"quick","arguments":{ "name" : "Ada" }`, true},
		{"cache hit", `{"name":"quick","arguments":{"name":"from-cache"}`, true},
		{"tenant", `{"name":"quick","arguments":{"name":"tenant?"}`, true},
		{"invalid arguments", `{"name":"quick","arguments":{"name":5}`, true},
		{"missing arguments", `{"name":"quick"`, true},
		{"null arguments", `{"name":"quick","arguments":null`, true},
		{"arguments not an object", `{"name":"quick","arguments":[1]`, true},
		{"arguments too large", `{"name":"quick","arguments":{"name":"` + strings.Repeat("x", 1100) + `"}`, true},
		{"arguments too large but for whitespace", `{"name":"quick","arguments":{"name":"Ada"` + strings.Repeat(" ", 2000) + `}`, true},
		{"tool error", `{"name":"fail"`, true},
		{"guest failure", `{"name":"crash"`, true},
		{"unknown tool", `{"name":"nope","arguments":{}`, true},
		{"empty name", `{"name":""`, true},
		{"required without a task", `{"name":"required"`, true},
		{"forbidden as a task", `{"name":"plain","task":{}`, true},
		{"task", `{"name":"quick","arguments":{"name":"Ada"},"task":{"ttl":60000}`, true},
		{"task, spaces", `{"name":"quick","arguments":{ "name" : "Ada" },"task":{}`, true},
		{"task null", `{"name":"quick","arguments":{"name":"Ada"},"task":null`, true},
		{"task not an object", `{"name":"quick","arguments":{"name":"Ada"},"task":5`, true},
		{"task with a negative ttl", `{"name":"quick","arguments":{"name":"Ada"},"task":{"ttl":-1}`, true},
		{"a tool that may ask, client can answer", `{"name":"ask"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := fmt.Sprintf(`{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":%s}}`, tc.params)
			viaSDK := fmt.Sprintf(`{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":%s,"_meta":{}}}`, tc.params)
			if tc.name == "a tool that may ask, client can answer" {
				// The client's answer travels on go-sdk's stream, which
				// postRaw does not answer: only the routing is checked.
				resp := c.do(http.MethodPost, call)
				resp.Body.Close()
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
					t.Errorf("content type %q, want go-sdk's event stream", ct)
				}
				return
			}
			ct, got := postRaw(t, c, call)
			refCT, want := postRaw(t, c, viaSDK)
			if !strings.HasPrefix(refCT, "text/event-stream") {
				t.Fatalf("reference answer: content type %q, want go-sdk's event stream", refCT)
			}
			if fast := ct == "application/json"; fast != tc.fast {
				t.Errorf("answered by the front: %v (content type %q), want %v", fast, ct, tc.fast)
			}
			normaliseTask(got)
			normaliseTask(want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("answer differs from go-sdk's path (-go-sdk +front):\n%s", d)
			}
		})
	}
}

// A plain call of a tool that may log is answered by the front until the
// client asks for log messages; from then on it keeps go-sdk's stream. A
// task-augmented one is answered by the front either way (its messages
// travel with tasks/result).
func TestHTTPDirectCallsKeepStreamsForLogs(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	slow := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}`
	ts.tools.release <- struct{}{}
	if ct, m := postRaw(t, c, slow); ct != "application/json" {
		t.Errorf("before logging/setLevel: content type %q, want the front's application/json (%v)", ct, m)
	}
	c.call(4, "logging/setLevel", map[string]any{"level": "debug"})
	ts.tools.release <- struct{}{}
	if ct, m := postRaw(t, c, slow); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("after logging/setLevel: content type %q, want go-sdk's event stream (%v)", ct, m)
	}
	task := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","task":{}}}`
	ct, m := postRaw(t, c, task)
	if ct != "application/json" {
		t.Errorf("task after logging/setLevel: content type %q, want the front's application/json", ct)
	}
	ts.tools.release <- struct{}{}
	c.call(6, "tasks/result", map[string]any{"taskId": taskIDOf(t, m)})
}

// A client's notifications/cancelled ends a plain call the front is
// answering, as it ends one go-sdk serves; another session's cannot, nor
// one go-sdk refuses.
func TestHTTPDirectCallCancelled(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	other := newHTTPClient(t, srv)
	other.initialize()
	long := func() <-chan string {
		answer := postAsync(c, `{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"slow"}}`)
		<-ts.tools.started
		return answer
	}
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"user"}}`

	answer := long()
	other.do(http.MethodPost, cancel).Body.Close()
	c.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"notifications/cancelled","params":{"requestId":"long"}}`).Body.Close()
	ts.tools.release <- struct{}{}
	if got := <-answer; !strings.HasPrefix(got, "application/json") || !strings.Contains(got, "slow done") {
		t.Fatalf("a call cancelled by another session, or by a refused notification: %s; want the front's answer \"slow done\"", got)
	}

	answer = long()
	c.do(http.MethodPost, cancel).Body.Close()
	<-ts.tools.cancelled
	if got := <-answer; !strings.HasPrefix(got, "application/json") {
		t.Errorf("the cancelled call was answered with %q, want the front's application/json", got)
	}
	ts.mu.Lock()
	n := len(ts.direct)
	ts.mu.Unlock()
	if n != 0 {
		t.Errorf("%d direct calls still recorded after the calls ended", n)
	}
}

// A session go-sdk closed at its idle timeout is not served by the front,
// even after go-sdk answered a request of it (with 404).
func TestHTTPDirectNotForClosedSessions(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	// What go-sdk's idle timer does when it fires.
	ts.mu.Lock()
	sdk := ts.sessions[c.hc.SessionID].sdk
	ts.mu.Unlock()
	sdk.Close()
	resp := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("tools/list after the idle timeout: HTTP %d, want go-sdk's 404", resp.StatusCode)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quick","arguments":{"name":"Ada"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"quick","arguments":{"name":"Ada"},"task":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"T"}}`,
	} {
		resp := c.do(http.MethodPost, body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s on a closed session: HTTP %d, want 404", body, resp.StatusCode)
		}
	}
}

// A plain call the front answers holds its session in go-sdk past the
// idle timeout: go-sdk, which does not see the call, would otherwise
// close the session under it.
func TestHTTPDirectCallHoldsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Minute
		ts := newTestServerWith(t, taskengine.Config{}, func(c *Config) { c.SessionTimeout = timeout })
		url, hc := pipeHTTP(t, ts.HTTPHandler())
		c := &httpClient{t: t, hc: hosttest.NewHTTPClient(t, url)}
		c.hc.HC = hc
		c.initialize()
		answer := postAsync(c, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"slow"}}`)
		<-ts.tools.started
		// Outlive, on the bubble's clock, the idle timeout counted from
		// go-sdk's last request of the session (the initialize): go-sdk's
		// timer fires unless pinged.
		time.Sleep(timeout * 3 / 2)
		if ts.keepalives.Load() == 0 {
			t.Error("no keepalive was sent during the long call")
		}
		ts.tools.release <- struct{}{}
		if got := <-answer; !strings.Contains(got, "slow done") {
			t.Fatalf("the long call answered %s", got)
		}
		resp := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{},"_meta":{}}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the session after a call longer than its idle timeout: HTTP %d, want 200", resp.StatusCode)
		}
	})
}

// postAsync posts body on c's session from a goroutine of its own; the
// channel gets the answer's content type and body, or the error.
func postAsync(c *httpClient, body string) <-chan string {
	answer := make(chan string, 1)
	go func() {
		resp, err := c.hc.Post([]byte(body))
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- resp.Header.Get("Content-Type") + " " + string(b)
	}()
	return answer
}

// pipeHTTP serves h over in-memory connections (net.Pipe), so that a test
// in a synctest bubble can use HTTP on the bubble's clock: it returns the
// endpoint's URL and a client that dials it. Both close at the test's end.
func pipeHTTP(t *testing.T, h http.Handler) (string, *http.Client) {
	l := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		select {
		case l.conns <- server:
			return client, nil
		case <-l.closed:
			return nil, net.ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-served
	})
	return "http://wasmtask.test" + HTTPPath, &http.Client{Transport: tr}
}

// pipeListener hands out the server ends of pipeHTTP's connections.
type pipeListener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func (p *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

func (p *pipeListener) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	return nil
}

func (p *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }
