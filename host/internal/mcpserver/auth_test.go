package mcpserver

import (
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/taskengine"
)

// With an auth context, a task belongs to the user: another session of the
// same user can fetch it, another user cannot.
func TestAuthUserOwnsTasks(t *testing.T) {
	client := authClients(t, newTestServer(t, taskengine.Config{}))
	alice1, alice2, bob := client("alice"), client("alice"), client("bob")
	id := taskIDOf(t, alice1.call(1, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "a"}, "task": map[string]any{}}))
	if r := alice2.call(1, "tasks/result", map[string]any{"taskId": id}); r["error"] != nil {
		t.Errorf("same user, other session: tasks/result got %v, want the result", r)
	}
	if got := errCode(bob.call(1, "tasks/get", map[string]any{"taskId": id})); got != -32602 {
		t.Errorf("other user: tasks/get got code %d, want -32602", got)
	}
	if got := result(bob.call(2, "tasks/list", nil))["tasks"].([]any); len(got) != 0 {
		t.Errorf("other user: tasks/list got %v, want none", got)
	}
}

// Config.Visible decides per user which tools exist: a hidden tool is
// absent from that user's tools/list and unknown to its tools/call, with
// the error a tool nobody serves gets, while another user lists and calls it.
func TestVisiblePerUser(t *testing.T) {
	ts := newTestServerWith(t, taskengine.Config{}, func(c *Config) {
		c.Visible = func(user string, _ Kind, tool, _ string) bool { return user == "alice" || tool != "quick" }
	})
	client := authClients(t, ts)
	names := func(c *httpClient) map[string]bool {
		out := map[string]bool{}
		for _, tl := range result(c.call(1, "tools/list", nil))["tools"].([]any) {
			out[tl.(map[string]any)["name"].(string)] = true
		}
		return out
	}
	alice, bob := client("alice"), client("bob")
	a, b := names(alice), names(bob)
	if !a["quick"] || b["quick"] || len(b) != len(a)-1 {
		t.Errorf("tools/list: alice %v, bob %v; want bob to see all but quick", a, b)
	}
	args := map[string]any{"name": "quick", "arguments": map[string]any{"name": "x"}}
	if r := alice.call(2, "tools/call", args); r["error"] != nil {
		t.Errorf("alice calls quick: %v", r)
	}
	hidden := bob.call(2, "tools/call", args)
	unknown := bob.call(3, "tools/call", map[string]any{"name": "nosuch", "arguments": map[string]any{}})
	if errCode(hidden) != -32602 || strings.Replace(errMessage(hidden), "quick", "nosuch", 1) != errMessage(unknown) {
		t.Errorf("bob calls quick: %v; want the error of an unknown tool (%v)", hidden, unknown)
	}
	task := bob.call(4, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "x"}, "task": map[string]any{}})
	if errCode(task) != -32602 {
		t.Errorf("bob starts a task of quick: %v, want -32602", task)
	}
}

// The catalog learns the tenant of each call (the task owner: the auth
// user here), and a result it marks as a cache hit carries the marker in
// _meta, on a plain call and in tasks/result beside the related task.
func TestCallerTenantAndCacheHit(t *testing.T) {
	c := authClients(t, newTestServer(t, taskengine.Config{}))("alice")
	who := result(c.call(1, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "tenant?"}}))
	if txt := who["content"].([]any)[0].(map[string]any)["text"]; txt != "tenant user:alice" {
		t.Errorf("the catalog saw %v, want the caller's tenant user:alice", txt)
	}
	plain := result(c.call(2, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "from-cache"}}))
	if m, _ := plain["_meta"].(map[string]any); m == nil || m["io.wasmtask/cache"] == nil {
		t.Errorf("plain call answered from the cache: %v, want _meta io.wasmtask/cache", plain)
	}
	miss := result(c.call(3, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "x"}}))
	if miss["_meta"] != nil {
		t.Errorf("a call that ran: %v, want no _meta", miss)
	}
	id := taskIDOf(t, c.call(4, "tools/call", map[string]any{"name": "quick", "arguments": map[string]any{"name": "from-cache"}, "task": map[string]any{}}))
	res := result(c.call(5, "tasks/result", map[string]any{"taskId": id}))
	m, _ := res["_meta"].(map[string]any)
	if m == nil || m["io.wasmtask/cache"] == nil || m["io.modelcontextprotocol/related-task"] == nil {
		t.Errorf("tasks/result of a hit: %v, want both the cache marker and the related task in _meta", res)
	}
}

// authClients serves ts over HTTP behind bearer-token auth whose token is
// the user's name, and returns a maker of initialized clients per user.
func authClients(t *testing.T, ts *testServer) func(user string) *httpClient {
	srv := bearerServer(t, ts)
	return func(user string) *httpClient {
		c := newHTTPClient(t, srv)
		c.hc.Header.Set("Authorization", "Bearer "+user)
		c.initialize()
		return c
	}
}
