package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/wasmtask/wasmtask/taskengine"
)

// With an auth context, a task belongs to the user: another session of the
// same user can fetch it, another user cannot.
func TestAuthUserOwnsTasks(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "alice" && token != "bob" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(ts.HTTPHandler()))
	t.Cleanup(srv.Close)
	client := func(user string) *httpClient {
		c := newHTTPClient(t, srv)
		c.hc.Header.Set("Authorization", "Bearer "+user)
		c.initialize()
		return c
	}
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
