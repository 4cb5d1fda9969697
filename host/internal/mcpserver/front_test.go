package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/wasmtask/wasmtask/host/internal/mcphttp"
	"github.com/wasmtask/wasmtask/taskengine"
)

// rawPost sends body to the endpoint with the given headers and returns
// the status and the body of the answer.
func rawPost(t *testing.T, ctx context.Context, url string, hdr map[string]string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, strings.TrimSpace(string(b))
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestHTTPFrontChecks: a foreign Origin, a Host not allowed, a body that is
// not JSON, and a method MCP does not use are refused before the body is
// read; the endpoint's own origin and the allowed ones pass.
func TestHTTPFrontChecks(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) {
		c.AllowedHosts = []string{"127.0.0.1", "tools.example.com"}
		c.AllowedOrigins = []string{"https://app.example.com"}
	})
	srv := ts.httpServer(t)
	url := srv.URL + mcphttp.Path
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"own origin", map[string]string{"Origin": srv.URL}, http.StatusOK},
		{"allowed origin", map[string]string{"Origin": "https://app.example.com"}, http.StatusOK},
		{"host not allowed", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"allowed host", map[string]string{"Host": "tools.example.com"}, http.StatusOK},
		{"not json", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
	} {
		if code, _, body := rawPost(t, ctx, url, tc.hdr, strings.NewReader(initBody)); code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, code, body, tc.want)
		}
	}
	// Refused before the body is read.
	for _, hdr := range []map[string]string{{"Origin": "https://evil.example"}, {"Content-Type": "text/plain"}} {
		body := &readFlag{r: strings.NewReader(initBody)}
		req := httptest.NewRequest(http.MethodPost, mcphttp.Path, body)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		ts.HTTPHandler().ServeHTTP(rec, req)
		if rec.Code < 400 || body.read {
			t.Errorf("%v: %d, body read %v; want a refusal before the body is read", hdr, rec.Code, body.read)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, url, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %v %v, want 405", resp.Status, err)
	}
}

// TestHTTPSessionCaps: past MaxSessions, a request that would open a
// session gets 503 and Retry-After; existing sessions keep working.
func TestHTTPSessionCaps(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) { c.MaxSessions = 2 })
	srv := ts.httpServer(t)
	a, b := newHTTPClient(t, srv), newHTTPClient(t, srv)
	a.initialize()
	b.initialize()
	code, hdr, body := rawPost(t, context.Background(), srv.URL+mcphttp.Path, nil, strings.NewReader(initBody))
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(body, "too many sessions") {
		t.Errorf("a third session: %d %q (Retry-After %q), want 503 too many sessions with Retry-After", code, body, hdr.Get("Retry-After"))
	}
	if m := a.call(2, "tools/list", nil); m["error"] != nil {
		t.Errorf("an open session after the refusal: %v", m)
	}
}

// TestHTTPRefusedDeleteChangesNothing: a DELETE go-sdk refuses (an
// unsupported protocol version) leaves the session and its tasks as they
// were.
func TestHTTPRefusedDeleteChangesNothing(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	created := c.call(2, "tools/call", map[string]any{"name": "required", "arguments": map[string]any{}, "task": map[string]any{}})
	id := created["result"].(map[string]any)["task"].(map[string]any)["taskId"].(string)
	req, _ := http.NewRequest(http.MethodDelete, c.hc.URL, nil)
	req.Header.Set("Mcp-Session-Id", c.hc.SessionID)
	req.Header.Set("Mcp-Protocol-Version", "1999-01-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("DELETE with a bad protocol version: %v %v, want 400", resp.Status, err)
	}
	resp.Body.Close()
	if m := c.call(3, "tasks/get", map[string]any{"taskId": id}); m["error"] != nil {
		t.Errorf("tasks/get after a refused DELETE: %v, want the task", m)
	}
}

// TestHTTPRequestEndsWithItsPost: a plain call and a tasks/result waiter
// end when the POST that carried them is abandoned by its client, though
// the session lives on.
func TestHTTPRequestEndsWithItsPost(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	waits := make(chan bool, 4)
	ts.waitHook = func(began bool) { waits <- began }
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	hdr := map[string]string{"Mcp-Session-Id": c.hc.SessionID, "Mcp-Protocol-Version": "2025-11-25"}

	// A plain call of slow: abandoned once it runs, it is cancelled.
	ctx, abandon := context.WithCancel(context.Background())
	posted := make(chan struct{})
	go func() {
		defer close(posted)
		rawPost(t, ctx, c.hc.URL, hdr, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
	}()
	<-ts.tools.started
	abandon()
	<-posted
	if cause := <-ts.tools.cancelled; cause == "" {
		t.Error("the abandoned call ended without a cause")
	}

	// A task of slow, and a tasks/result abandoned while it waits.
	created := c.call(8, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}, "task": map[string]any{}})
	id := created["result"].(map[string]any)["task"].(map[string]any)["taskId"].(string)
	<-ts.tools.started
	ctx, abandon = context.WithCancel(context.Background())
	posted = make(chan struct{})
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tasks/result", "params": map[string]any{"taskId": id}})
	go func() {
		defer close(posted)
		rawPost(t, ctx, c.hc.URL, hdr, strings.NewReader(string(body)))
	}()
	if !<-waits {
		t.Fatal("the tasks/result ended before it waited")
	}
	abandon()
	<-posted
	if <-waits { // a waiter kept alive would hang here
		t.Fatal("another wait began")
	}
	ts.tools.release <- struct{}{}
	m := c.call(10, "tasks/result", map[string]any{"taskId": id})
	<-waits
	<-waits
	if m["error"] != nil {
		t.Errorf("tasks/result on the session afterwards: %v, want the result", m)
	}
}

// readFlag records whether its body was read.
type readFlag struct {
	r    io.Reader
	read bool
}

func (f *readFlag) Read(p []byte) (int, error) {
	f.read = true
	return f.r.Read(p)
}

// TestHTTPRequestRate: a tenant past its rate gets 429 with Retry-After;
// another tenant is not affected.
func TestHTTPRequestRate(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) {
		c.RequestRate = func(tenant string) (float64, int) {
			if tenant == "alice" {
				return 0.01, 3 // initialize, its notification, one more
			}
			return 0, 0
		}
	})
	client := authClients(t, ts)
	alice, bob := client("alice"), client("bob")
	if m := alice.call(2, "tools/list", nil); m["error"] != nil {
		t.Fatalf("alice's third request: %v", m)
	}
	resp := alice.do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("alice past her rate: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for i := range 5 {
		if m := bob.call(10+i, "tools/list", nil); m["error"] != nil {
			t.Fatalf("bob's request %d: %v", i, m)
		}
	}
}

// bearerServer serves ts over HTTP behind bearer-token auth whose token is
// the user's name.
func bearerServer(t *testing.T, ts *testServer) *httptest.Server {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(ts.HTTPHandler()))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPSessionsPerTenant: past MaxSessionsPerTenant a tenant's new
// session gets 429 with Retry-After; another tenant still opens one.
func TestHTTPSessionsPerTenant(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) { c.MaxSessionsPerTenant = 2 })
	url := bearerServer(t, ts).URL + mcphttp.Path
	open := func(user string) (int, http.Header) {
		code, hdr, _ := rawPost(t, context.Background(), url, map[string]string{"Authorization": "Bearer " + user}, strings.NewReader(initBody))
		return code, hdr
	}
	for i := range 2 {
		if code, _ := open("alice"); code != http.StatusOK {
			t.Fatalf("alice's session %d: %d", i+1, code)
		}
	}
	if code, hdr := open("alice"); code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("alice's third session: %d (Retry-After %q), want 429 with Retry-After", code, hdr.Get("Retry-After"))
	}
	if code, _ := open("bob"); code != http.StatusOK {
		t.Errorf("bob's first session: %d, want 200", code)
	}
}

// TestHTTPRequestsInFlight: past MaxRequestsPerSession requests in flight
// on one session, the next gets 429; it fits again once one ends.
func TestHTTPRequestsInFlight(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) { c.MaxRequestsPerSession = 1 })
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	hdr := map[string]string{"Mcp-Session-Id": c.hc.SessionID, "Mcp-Protocol-Version": "2025-11-25"}
	done := make(chan int, 1)
	go func() {
		code, _, _ := rawPost(t, context.Background(), c.hc.URL, hdr, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
		done <- code
	}()
	<-ts.tools.started // the slow call is in flight
	code, rh, _ := rawPost(t, context.Background(), c.hc.URL, hdr, strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`))
	if code != http.StatusTooManyRequests || rh.Get("Retry-After") == "" {
		t.Errorf("a second request in flight: %d (Retry-After %q), want 429", code, rh.Get("Retry-After"))
	}
	ts.tools.release <- struct{}{}
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the slow call: %d", code)
	}
	if m := c.call(9, "tools/list", nil); m["error"] != nil {
		t.Errorf("a request once the first ended: %v", m)
	}
}

// TestHTTPSessionCapsUnderParallelOpens: many initialize requests at once
// cannot open more sessions than the cap between them.
func TestHTTPSessionCapsUnderParallelOpens(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) { c.MaxSessionsPerTenant = 2 })
	url := bearerServer(t, ts).URL + mcphttp.Path
	codes := make(chan int, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			code, _, _ := rawPost(t, context.Background(), url, map[string]string{"Authorization": "Bearer alice"}, strings.NewReader(initBody))
			codes <- code
		})
	}
	wg.Wait()
	close(codes)
	opened := 0
	for c := range codes {
		if c == http.StatusOK {
			opened++
		}
	}
	if opened > 2 {
		t.Errorf("%d sessions opened at once under a cap of 2", opened)
	}
}

// TestHTTPBodyWithTrailingData: a body that is not exactly one JSON value
// is refused, so that no request reaches go-sdk unbound from its POST.
func TestHTTPBodyWithTrailingData(t *testing.T) {
	ts := newTestServer(t, taskengine.Config{})
	srv := ts.httpServer(t)
	c := newHTTPClient(t, srv)
	c.initialize()
	hdr := map[string]string{"Mcp-Session-Id": c.hc.SessionID, "Mcp-Protocol-Version": "2025-11-25"}
	code, _, body := rawPost(t, context.Background(), c.hc.URL, hdr, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"plain","arguments":{}}} x`))
	if code != http.StatusBadRequest {
		t.Errorf("trailing data: %d %q, want 400", code, body)
	}
}

// TestHTTPDeleteBehindProxy: with AllowedHosts (a proxy on a loopback
// address forwarding a public name), a DELETE releases the session's
// blocked requests as it does without a proxy, instead of hanging.
func TestHTTPDeleteBehindProxy(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) { c.AllowedHosts = []string{"tools.example.com"} })
	srv := ts.httpServer(t)
	url := srv.URL + mcphttp.Path
	host := map[string]string{"Host": "tools.example.com"}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
	req.Host = "tools.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize through the proxy name: %v %v", resp, err)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	resp.Body.Close()
	hdr := map[string]string{"Host": "tools.example.com", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	rawPost(t, context.Background(), url, hdr, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		rawPost(t, context.Background(), url, hdr, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
	}()
	<-ts.tools.started
	del, _ := http.NewRequest(http.MethodDelete, url, nil)
	del.Host = host["Host"]
	del.Header.Set("Mcp-Session-Id", sid)
	resp, err = http.DefaultClient.Do(del) // a hang fails the test by its deadline
	if err != nil || resp.StatusCode/100 != 2 {
		t.Errorf("DELETE through the proxy name: %v %v, want success", resp, err)
	} else {
		resp.Body.Close()
	}
	<-blocked
	<-ts.tools.cancelled
}

// TestHTTPRequestsInFlightPerTenant: a tenant's requests in flight over
// all its sessions are bounded; another tenant is not affected.
func TestHTTPRequestsInFlightPerTenant(t *testing.T) {
	ts := newTestServerHTTP(t, taskengine.Config{}, func(c *mcphttp.Config) { c.MaxRequestsPerTenant = 1 })
	url := bearerServer(t, ts).URL + mcphttp.Path
	session := func(user string) map[string]string {
		code, hdr, body := rawPost(t, context.Background(), url, map[string]string{"Authorization": "Bearer " + user}, strings.NewReader(initBody))
		if code != http.StatusOK {
			t.Fatalf("%s: initialize: %d %s", user, code, body)
		}
		return map[string]string{"Authorization": "Bearer " + user, "Mcp-Session-Id": hdr.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	}
	a1, a2, b := session("alice"), session("alice"), session("bob")
	done := make(chan int, 1)
	go func() {
		code, _, _ := rawPost(t, context.Background(), url, a1, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
		done <- code
	}()
	<-ts.tools.started
	list := `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`
	if code, _, _ := rawPost(t, context.Background(), url, a2, strings.NewReader(list)); code != http.StatusTooManyRequests {
		t.Errorf("alice's other session while one request is in flight: %d, want 429", code)
	}
	if code, _, body := rawPost(t, context.Background(), url, b, strings.NewReader(list)); code != http.StatusOK {
		t.Errorf("bob meanwhile: %d %s, want 200", code, body)
	}
	ts.tools.release <- struct{}{}
	<-done
}
