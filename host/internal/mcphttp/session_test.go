package mcphttp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeMCP is a plain go-sdk server behind the edge, with three tools:
// "quick" answers at once, "progress" reports progress before its answer,
// "block" waits until its request is cancelled, "announce" writes a
// notification outside any request.
type fakeMCP struct {
	server    *mcp.Server
	mu        sync.Mutex
	conns     map[string]mcp.Connection // by session ID
	cancelled chan struct{}             // closed by "block" when its request ends
	started   chan struct{}             // closed by "block" once running
}

func newFakeMCP(t *testing.T) *fakeMCP {
	f := &fakeMCP{conns: map[string]mcp.Connection{}, cancelled: make(chan struct{}), started: make(chan struct{})}
	f.server = mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "0"}, nil)
	type empty struct{}
	mcp.AddTool(f.server, &mcp.Tool{Name: "quick"}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(f.server, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(f.server, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		close(f.started)
		<-ctx.Done()
		close(f.cancelled)
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(f.server, &mcp.Tool{Name: "announce"}, func(_ context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
		err := req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{ProgressToken: "standalone", Progress: 2})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "announced"}}}, nil, err
	})
	// The MCP layer names each request it handles to the connection, so
	// what it writes for the request travels on that request's stream.
	f.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				f.mu.Lock()
				c, _ := f.conns[ss.ID()].(*conn)
				f.mu.Unlock()
				if c != nil {
					ctx = c.WithRequest(ctx, req.GetExtra())
				}
			}
			return next(ctx, method, req)
		}
	})
	return f
}

func (f *fakeMCP) Connect(c mcp.Connection, _ string) (func(), error) {
	f.mu.Lock()
	f.conns[c.SessionID()] = c
	f.mu.Unlock()
	ss, err := f.server.Connect(context.Background(), fakeTransport{c}, nil)
	if err != nil {
		return nil, err
	}
	return func() { ss.Close() }, nil
}

func (f *fakeMCP) Stateless() *mcp.Server                         { return f.server }
func (f *fakeMCP) MayReportProgress(context.Context, string) bool { return true }

func (f *fakeMCP) CheckParamHeaders(context.Context, string, string, json.RawMessage, func(string) []string) error {
	return nil
}
func (f *fakeMCP) ClientMessage(msg string) string { return msg }

type fakeTransport struct{ c mcp.Connection }

func (t fakeTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// newEdge serves a fake MCP layer through a Handler configured by edit.
func newEdge(t *testing.T, edit func(*Config)) (*fakeMCP, *Handler) {
	t.Helper()
	f := newFakeMCP(t)
	cfg := Config{MCP: f}
	if edit != nil {
		edit(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return f, h
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// post sends body as a POST of session sid ("" for none).
func post(t *testing.T, ctx context.Context, url, sid, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(sessionIDHeader, sid)
		req.Header.Set(protocolVersionHeader, "2025-11-25")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// open initializes a session on the edge at url and returns its ID.
func open(t *testing.T, url string, hdr ...string) string {
	t.Helper()
	resp := post(t, context.Background(), url, "", initBody, hdr...)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("initialize: %d %s", resp.StatusCode, b)
	}
	sid := resp.Header.Get(sessionIDHeader)
	if sid == "" {
		t.Fatal("initialize answered without a session ID")
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	r := post(t, context.Background(), url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...)
	r.Body.Close()
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d, want 202", r.StatusCode)
	}
	return sid
}

// events reads the data lines of an event stream.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestAnswerAsJSONUnlessSomethingPrecedesIt: a request whose answer is
// the first thing written for it gets one JSON body; a progress
// notification before the answer makes its POST an event stream, with
// the notification first.
func TestAnswerAsJSONUnlessSomethingPrecedesIt(t *testing.T) {
	_, h := newEdge(t, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := srv.URL + Path
	sid := open(t, url)

	resp := post(t, context.Background(), url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quick","arguments":{}}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || !strings.Contains(string(body), `"done"`) {
		t.Errorf("quick call: %s %s, want one JSON body with its result", ct, body)
	}

	resp = post(t, context.Background(), url, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"p"}}}`)
	ct := resp.Header.Get("Content-Type")
	evs := events(t, resp.Body)
	resp.Body.Close()
	if ct != "text/event-stream" || len(evs) != 2 || !strings.Contains(evs[0], "notifications/progress") || !strings.Contains(evs[1], `"done"`) {
		t.Errorf("progress call: %s %q, want an event stream of the progress, then the result", ct, evs)
	}
}

// TestStandaloneStream: what is written outside any request goes on the
// session's GET stream; a session has one.
func TestStandaloneStream(t *testing.T) {
	_, h := newEdge(t, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := srv.URL + Path
	sid := open(t, url)

	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(sessionIDHeader, sid)
	get, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", get.StatusCode)
	}
	second, err := http.DefaultClient.Do(req.Clone(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	second.Body.Close()
	if second.StatusCode != http.StatusConflict {
		t.Errorf("a second GET stream: %d, want 409", second.StatusCode)
	}

	resp := post(t, context.Background(), url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"announce","arguments":{}}}`)
	resp.Body.Close()
	sc := bufio.NewScanner(get.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if !strings.Contains(d, `"standalone"`) {
				t.Errorf("GET stream carried %s, want the notification sent outside a request", d)
			}
			return
		}
	}
	t.Fatal("the GET stream ended without the notification")
}

// TestPostEndCancelsItsRequest: a client that goes away cancels its
// request as a notifications/cancelled would.
func TestPostEndCancelsItsRequest(t *testing.T) {
	f, h := newEdge(t, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := srv.URL + Path
	sid := open(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(sessionIDHeader, sid)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-f.started
	cancel()
	<-f.cancelled // the tool saw its request end
	<-done
}

// TestSessionRules: no session without initialize, none after DELETE, and
// a request of one message (no batches).
func TestSessionRules(t *testing.T) {
	_, h := newEdge(t, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := srv.URL + Path

	resp := post(t, context.Background(), url, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&rpc)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || rpc.Error.Code != -32600 || !strings.Contains(rpc.Error.Message, "initialize") {
		t.Errorf("a request before initialize: %d %+v, want 400 and -32600 naming initialize", resp.StatusCode, rpc.Error)
	}

	sid := open(t, url)
	resp = post(t, context.Background(), url, sid, `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a batch: %d, want 400", resp.StatusCode)
	}

	del, _ := http.NewRequest(http.MethodDelete, url, nil)
	del.Header.Set(sessionIDHeader, sid)
	dresp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %d, want 204", dresp.StatusCode)
	}
	resp = post(t, context.Background(), url, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of a deleted session: %d, want 404", resp.StatusCode)
	}
	h.mu.Lock()
	n := len(h.sessions)
	h.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sessions recorded after DELETE, want 0", n)
	}
}

// TestSessionOfAnotherTenant: a tenant cannot use another tenant's
// session; the refusal is reported (audited) like every other.
func TestSessionOfAnotherTenant(t *testing.T) {
	var mu sync.Mutex
	var denied []int
	_, h := newEdge(t, func(c *Config) {
		c.Auth = &Auth{Verify: func(_ context.Context, token string) (string, error) { return token, nil }}
		c.Denied = func(_, _, _ string, status int, _ string) {
			mu.Lock()
			denied = append(denied, status)
			mu.Unlock()
		}
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := srv.URL + Path
	sid := open(t, url, "Authorization", "Bearer alice")
	resp := post(t, context.Background(), url, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, "Authorization", "Bearer bob")
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob on alice's session: %d, want 403", resp.StatusCode)
	}
	resp = post(t, context.Background(), url, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, "Authorization", "Bearer alice")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("alice on her session: %d, want 200", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(denied) != 1 || denied[0] != http.StatusForbidden {
		t.Errorf("refusals reported: %v, want one 403", denied)
	}
}

// TestIdleSessionEnds: a session with no request for SessionTimeout ends;
// one with a request in flight does not.
func TestIdleSessionEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, h := newEdge(t, func(c *Config) { c.SessionTimeout = time.Minute })
		defer h.Close()
		serve := func(body, sid string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set(sessionIDHeader, sid)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		rec := serve(initBody, "")
		sid := rec.Header().Get(sessionIDHeader)
		if rec.Code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %q", rec.Code, rec.Body)
		}
		time.Sleep(59 * time.Second)
		if rec := serve(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, sid); rec.Code != http.StatusOK {
			t.Fatalf("ping before the timeout: %d %q", rec.Code, rec.Body)
		}
		time.Sleep(59 * time.Second) // the ping restarted the timer
		if rec := serve(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, sid); rec.Code != http.StatusOK {
			t.Fatalf("ping within the timeout of the last one: %d %q", rec.Code, rec.Body)
		}
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if rec := serve(`{"jsonrpc":"2.0","id":4,"method":"ping"}`, sid); rec.Code != http.StatusNotFound {
			t.Errorf("ping after the timeout: %d, want 404", rec.Code)
		}
	})
}
