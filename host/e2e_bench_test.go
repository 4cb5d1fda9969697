package host_test

// End-to-end benchmarks: the real Server on the embedded tools, behind
// httptest over Streamable HTTP, driven by raw JSON-RPC POSTs from many
// concurrent client sessions (one session per client goroutine).
//
//	go test -run '^$' -bench E2E -count 6 ./host/
//
// Sub-benchmarks:
//   - plain/sha256: tools/call of the C tool (taskSupport forbidden).
//   - plain/slow_count, task/slow_count: the same call of the fastest
//     optional tool ({"steps":1,"delay_ms":1}, a Go-built guest), plain and
//     as a task. One task op is three round trips: tools/call with
//     params.task, one tasks/get, then tasks/result (which blocks until the
//     task ends, so the client does not spin on tasks/get).
//   - task-2026/slow_count: the same task at protocol 2026-07-28 (no
//     session: every request stands alone), where there is no blocking
//     tasks/result: tools/call, then tasks/get until the task is completed
//     (its result inline), polled back to back; gets/op counts them.
//   - cancel: one session on a server that runs one guest instance at a
//     time. A slow_count task is started and seen running (its first
//     progress notification arrives on the session's GET stream), off the
//     clock; then the clock runs from sending tasks/cancel until the answer
//     to a call of add, sent right after the cancel's answer, is in. That
//     call is admitted only once the cancelled guest has returned and left
//     its instance slot. cancel-rtt-ns/op is the tasks/cancel round trip,
//     cancel-to-next-call-ns/op the whole span. rtt/tasks_get is the round
//     trip of a cheap request, to read the cancel figures against.
//
// The sessions are this file's own minimal client, not hosttest's: the
// figures are the server's throughput, so the client does no more than
// encode, post and decode (hosttest checks every message's text with
// regular expressions), and its errors are returned from the client
// goroutines instead of failing the benchmark from them.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// e2eClients is the number of concurrent client sessions: the default
// per-tool concurrency, so calls run at once rather than queue.
const e2eClients = host.DefaultMaxConcurrency

// e2eMaxClients is the most sessions a plain-call benchmark uses: four
// times the tool's concurrency, so that calls queue for their slots.
const e2eMaxClients = 4 * e2eClients

// e2eSession is one MCP session over Streamable HTTP. It is used by one
// goroutine at a time.
type e2eSession struct {
	hc     *http.Client
	url    string
	sid    string
	id     int64
	modern bool           // 2026-07-28 requests: no session, _meta and routing headers on each
	meta   map[string]any // the _meta of its 2026-07-28 requests; nil: modernMeta
}

// modernMeta is the _meta of every 2026-07-28 request of the benchmark.
var modernMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e", "version": "1"},
	"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
}

type e2eRPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *e2eRPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

type e2eResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *e2eRPCError    `json:"error"`
}

func newE2ESession(hc *http.Client, url string) (*e2eSession, error) {
	s := &e2eSession{hc: hc, url: url}
	if _, err := s.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "e2e-bench", "version": "1"},
	}); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if s.sid == "" {
		return nil, errors.New("initialize: no Mcp-Session-Id")
	}
	if err := s.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, nil); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return s, nil
}

// call sends one request and returns its result, or its JSON-RPC error as an
// *e2eRPCError.
func (s *e2eSession) call(method string, params any) (json.RawMessage, error) {
	if p, ok := params.(map[string]any); ok && s.modern {
		p["_meta"] = modernMeta
		if s.meta != nil {
			p["_meta"] = s.meta
		}
	}
	s.id++
	var resp e2eResponse
	err := s.post(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params}, &resp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: %w", method, resp.Error)
	}
	return resp.Result, nil
}

// post sends msg; for a request (resp != nil) it reads the response with the
// same id from a JSON or an SSE body.
func (s *e2eSession) post(msg map[string]any, resp *e2eResponse) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	if s.modern {
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", fmt.Sprint(msg["method"]))
		if p, ok := msg["params"].(map[string]any); ok {
			for _, k := range []string{"name", "taskId"} {
				if v, ok := p[k].(string); ok {
					req.Header.Set("Mcp-Name", v)
				}
			}
		}
	}
	hr, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer hr.Body.Close()
	if sid := hr.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sid = sid
	}
	if resp == nil {
		io.Copy(io.Discard, hr.Body)
		if hr.StatusCode/100 != 2 {
			return fmt.Errorf("HTTP %s", hr.Status)
		}
		return nil
	}
	if hr.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(hr.Body, 1024))
		return fmt.Errorf("HTTP %s: %s", hr.Status, body)
	}
	wantID := fmt.Sprint(msg["id"])
	match := func(data []byte) bool {
		*resp = e2eResponse{}
		return json.Unmarshal(data, resp) == nil && resp.Method == "" && string(resp.ID) == wantID
	}
	if strings.HasPrefix(hr.Header.Get("Content-Type"), "application/json") {
		body, err := io.ReadAll(hr.Body)
		if err != nil {
			return err
		}
		if !match(body) {
			return fmt.Errorf("no response with id %s in %.200q", wantID, body)
		}
		return nil
	}
	sc := bufio.NewScanner(hr.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && match(data) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the event stream ended without a response to id %s", wantID)
}

// close ends the session on the server.
func (s *e2eSession) close() {
	req, err := http.NewRequest(http.MethodDelete, s.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", s.sid)
	if hr, err := s.hc.Do(req); err == nil {
		io.Copy(io.Discard, hr.Body)
		hr.Body.Close()
	}
}

type e2eCallResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
	Meta    struct {
		Related struct {
			TaskID string `json:"taskId"`
		} `json:"io.modelcontextprotocol/related-task"`
	} `json:"_meta"`
}

type e2eTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
}

// callText checks a CallToolResult and returns its first text.
func callText(raw json.RawMessage, wantTask string) (string, error) {
	var r e2eCallResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", err
	}
	if r.IsError || len(r.Content) == 0 {
		return "", fmt.Errorf("tool error or no content: %s", raw)
	}
	if r.Meta.Related.TaskID != wantTask {
		return "", fmt.Errorf("related-task %q, want %q", r.Meta.Related.TaskID, wantTask)
	}
	return r.Content[0].Text, nil
}

// startTask starts a task of tool; its progress carries token when that is
// not "".
func (s *e2eSession) startTask(tool string, args any, token string) (string, error) {
	params := map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 60000}}
	if token != "" {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	raw, err := s.call("tools/call", params)
	if err != nil {
		return "", err
	}
	var cr struct{ Task e2eTask }
	if err := json.Unmarshal(raw, &cr); err != nil {
		return "", err
	}
	if cr.Task.TaskID == "" || cr.Task.Status != "working" {
		return "", fmt.Errorf("tools/call with task: got %s, want a working task", raw)
	}
	return cr.Task.TaskID, nil
}

func (s *e2eSession) getTask(id string) (e2eTask, error) {
	var t e2eTask
	raw, err := s.call("tasks/get", map[string]any{"taskId": id})
	if err == nil {
		err = json.Unmarshal(raw, &t)
	}
	return t, err
}

// e2eRun runs op b.N times spread over the sessions, one goroutine each, and
// stops at the first error.
func e2eRun(b *testing.B, sessions []*e2eSession, op func(s *e2eSession, i int64) error) {
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, s := range sessions {
		wg.Go(func() {
			for !failed.Load() {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := op(s, i); err != nil {
					if !failed.Swap(true) {
						b.Error(err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

func BenchmarkE2E(b *testing.B) {
	cache := b.TempDir() // compiled code, shared by the servers of the benchmark
	srv, err := host.New(context.Background(), host.Config{CacheDir: cache})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * e2eClients}}
	b.Cleanup(func() {
		srv.Close()
		ts.Close()
		hc.CloseIdleConnections()
	})
	url := ts.URL + host.HTTPPath

	sessions := make([]*e2eSession, e2eMaxClients)
	for i := range sessions {
		if sessions[i], err = newE2ESession(hc, url); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(sessions[i].close)
	}

	// A plain 2026-07-28 call: no tasks extension declared, so it is not
	// made a task, and no progress asked, so it is answered as JSON.
	// The -progress variant asks for progress too, from a tool that cannot
	// report any (add imports no progress function; sha256 does).
	plainModern := make([]*e2eSession, e2eMaxClients)
	progressModern := make([]*e2eSession, e2eMaxClients)
	for i := range plainModern {
		meta := map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		plainModern[i] = &e2eSession{hc: hc, url: url, modern: true, meta: meta}
		withToken := maps.Clone(meta)
		withToken["progressToken"] = fmt.Sprint("p", i)
		progressModern[i] = &e2eSession{hc: hc, url: url, modern: true, meta: withToken}
	}
	sha := func(s *e2eSession, i int64) error {
		raw, err := s.call("tools/call", map[string]any{"name": "sha256", "arguments": map[string]any{"text": fmt.Sprint("e2e ", i)}})
		if err != nil {
			return err
		}
		text, err := callText(raw, "")
		if err == nil && len(text) != 64 {
			err = fmt.Errorf("sha256: got %q, want 64 hex digits", text)
		}
		return err
	}
	add := func(s *e2eSession, i int64) error {
		raw, err := s.call("tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": i, "b": 1}})
		if err != nil {
			return err
		}
		text, err := callText(raw, "")
		if want := fmt.Sprint(i + 1); err == nil && text != want {
			err = fmt.Errorf("add: got %q, want %q", text, want)
		}
		return err
	}
	for _, n := range []int{1, e2eClients, e2eMaxClients} {
		b.Run(fmt.Sprintf("plain/sha256/clients=%d", n), func(b *testing.B) { e2eRun(b, sessions[:n], sha) })
		b.Run(fmt.Sprintf("plain-2026/sha256/clients=%d", n), func(b *testing.B) { e2eRun(b, plainModern[:n], sha) })
		b.Run(fmt.Sprintf("plain-2026/add/clients=%d", n), func(b *testing.B) { e2eRun(b, plainModern[:n], add) })
		b.Run(fmt.Sprintf("plain-2026-progress/add/clients=%d", n), func(b *testing.B) { e2eRun(b, progressModern[:n], add) })
	}

	countArgs := map[string]any{"steps": 1, "delay_ms": 1}
	for _, n := range []int{1, e2eClients} {

		b.Run(fmt.Sprintf("plain/slow_count/clients=%d", n), func(b *testing.B) {
			e2eRun(b, sessions[:n], func(s *e2eSession, _ int64) error {
				raw, err := s.call("tools/call", map[string]any{"name": "slow_count", "arguments": countArgs})
				if err != nil {
					return err
				}
				text, err := callText(raw, "")
				if err == nil && text != "counted to 1" {
					err = fmt.Errorf("slow_count: got %q, want %q", text, "counted to 1")
				}
				return err
			})
		})

		b.Run(fmt.Sprintf("task/slow_count/clients=%d", n), func(b *testing.B) {
			e2eRun(b, sessions[:n], func(s *e2eSession, _ int64) error {
				id, err := s.startTask("slow_count", countArgs, "")
				if err != nil {
					return err
				}
				if t, err := s.getTask(id); err != nil {
					return err
				} else if t.TaskID != id {
					return fmt.Errorf("tasks/get: got task %q, want %q", t.TaskID, id)
				}
				raw, err := s.call("tasks/result", map[string]any{"taskId": id})
				if err != nil {
					return err
				}
				text, err := callText(raw, id)
				if err == nil && text != "counted to 1" {
					err = fmt.Errorf("tasks/result: got %q, want %q", text, "counted to 1")
				}
				return err
			})
		})
	}

	modern := make([]*e2eSession, e2eClients)
	for i := range modern {
		modern[i] = &e2eSession{hc: hc, url: url, modern: true}
	}
	for _, n := range []int{1, e2eClients} {
		b.Run(fmt.Sprintf("task-2026/slow_count/clients=%d", n), func(b *testing.B) {
			var gets atomic.Int64
			e2eRun(b, modern[:n], func(s *e2eSession, _ int64) error {
				raw, err := s.call("tools/call", map[string]any{"name": "slow_count", "arguments": countArgs})
				if err != nil {
					return err
				}
				var created struct{ ResultType, TaskID, Status string }
				if err := json.Unmarshal(raw, &created); err != nil || created.ResultType != "task" || created.TaskID == "" {
					return fmt.Errorf("tools/call: got %s, want a CreateTaskResult", raw)
				}
				for {
					gets.Add(1)
					raw, err := s.call("tasks/get", map[string]any{"taskId": created.TaskID})
					if err != nil {
						return err
					}
					var got struct {
						Status string
						Result json.RawMessage
					}
					if err := json.Unmarshal(raw, &got); err != nil {
						return err
					}
					switch got.Status {
					case "working":
						continue
					case "completed":
						text, err := callText(got.Result, "")
						if err == nil && text != "counted to 1" {
							err = fmt.Errorf("tasks/get result: got %q, want %q", text, "counted to 1")
						}
						return err
					}
					return fmt.Errorf("tasks/get: %s", raw)
				}
			})
			b.ReportMetric(float64(gets.Load())/float64(b.N), "gets/op")
		})
	}

	// The round trip of a 2026-07-28 tasks/get, to read the JSON-or-SSE
	// answer's cost against.
	b.Run("rtt/tasks_get-2026", func(b *testing.B) {
		raw, err := modern[0].call("tools/call", map[string]any{"name": "slow_count", "arguments": countArgs})
		if err != nil {
			b.Fatal(err)
		}
		var created struct{ TaskID string }
		if err := json.Unmarshal(raw, &created); err != nil || created.TaskID == "" {
			b.Fatalf("tools/call: %s", raw)
		}
		e2eRun(b, modern[:1], func(s *e2eSession, _ int64) error {
			_, err := s.call("tasks/get", map[string]any{"taskId": created.TaskID})
			return err
		})
	})

	// The round trip of a cheap task request, to read cancel-rtt against.
	b.Run("rtt/tasks_get", func(b *testing.B) {
		id, err := sessions[0].startTask("slow_count", countArgs, "")
		if err != nil {
			b.Fatal(err)
		}
		e2eRun(b, sessions[:1], func(s *e2eSession, _ int64) error {
			t, err := s.getTask(id)
			if err == nil && t.TaskID != id {
				err = fmt.Errorf("tasks/get: got task %q, want %q", t.TaskID, id)
			}
			return err
		})
	})

	b.Run("cancel/slow_count", func(b *testing.B) {
		// One guest instance at a time: a call after the cancel waits
		// for the cancelled guest to return.
		one, err := host.New(context.Background(), host.Config{CacheDir: cache, Policy: &host.Policy{MaxInstances: 1}})
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewServer(one.Handler())
		defer func() {
			one.Close()
			ts.Close()
		}()
		s, err := newE2ESession(hc, ts.URL+host.HTTPPath)
		if err != nil {
			b.Fatal(err)
		}
		defer s.close()
		progress, stop, err := s.progress()
		if err != nil {
			b.Fatal(err)
		}
		defer stop()

		var rtt, next time.Duration
		b.ResetTimer()
		b.StopTimer()
		for i := range b.N {
			token := fmt.Sprint("cancel-", i)
			id, err := s.startTask("slow_count", map[string]any{"steps": 10000, "delay_ms": 1}, token)
			if err != nil {
				b.Fatal(err)
			}
			for p := range progress { // the guest is past its start
				if p == token {
					break
				}
			}

			b.StartTimer()
			start := time.Now()
			raw, err := s.call("tasks/cancel", map[string]any{"taskId": id})
			answered := time.Now()
			if err != nil {
				b.Fatal(err)
			}
			added, err := s.call("tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}})
			end := time.Now()
			b.StopTimer()

			if err != nil {
				b.Fatal(err)
			}
			var t e2eTask
			if err := json.Unmarshal(raw, &t); err != nil || t.Status != "cancelled" {
				b.Fatalf("tasks/cancel: got %s (%v), want status cancelled", raw, err)
			}
			if text, err := callText(added, ""); err != nil || text != "3" {
				b.Fatalf("add after the cancel: got %q (%v), want 3", text, err)
			}
			rtt += answered.Sub(start)
			next += end.Sub(start)
		}
		b.ReportMetric(float64(rtt.Nanoseconds())/float64(b.N), "cancel-rtt-ns/op")
		b.ReportMetric(float64(next.Nanoseconds())/float64(b.N), "cancel-to-next-call-ns/op")
	})
}

// progress opens the session's GET stream, which carries the notifications
// not tied to a request (a task's progress among them), and returns the
// progress token of each notifications/progress on it. Tokens the reader
// cannot hand over at once are dropped; a running task reports again.
// stop ends the stream and waits for the reader.
func (s *e2eSession) progress() (tokens <-chan string, stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	hr, err := s.hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if hr.StatusCode != http.StatusOK {
		hr.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("GET stream: HTTP %s", hr.Status)
	}
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		defer hr.Body.Close()
		sc := bufio.NewScanner(hr.Body)
		for sc.Scan() {
			data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
			if !ok {
				continue
			}
			var m struct {
				Method string `json:"method"`
				Params struct {
					Token any `json:"progressToken"`
				} `json:"params"`
			}
			if json.Unmarshal(data, &m) != nil || m.Method != "notifications/progress" {
				continue
			}
			select {
			case ch <- fmt.Sprint(m.Params.Token):
			default:
			}
		}
	}()
	return ch, func() {
		cancel()
		for range ch {
		}
	}, nil
}
