package mcpserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wasmtask/wasmtask/taskengine"
)

func TestParseTaskPoll(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"get", `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"T"}}`, true},
		{"result, string id", `{"jsonrpc":"2.0","id":"a-1","method":"tasks/result","params":{"taskId":"T"}}`, true},
		{"cancel, spaces", ` { "params" : { "taskId" : "T" } , "method":"tasks/cancel","id":-3,"jsonrpc":"2.0"} `, true},
		{"list", `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"taskId":"T"}}`, false},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"taskId":"T"}}`, false},
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
			if _, ok := parseTaskPoll([]byte(tc.body)); ok != tc.ok {
				t.Errorf("parseTaskPoll(%s): got ok=%v, want %v", tc.body, ok, tc.ok)
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
