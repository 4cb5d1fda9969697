package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// session is a minimal MCP client session over Streamable HTTP (protocol
// 2025-11-25), the same code against every server: it encodes, posts, and
// decodes the answer (JSON or an SSE stream), nothing more. One goroutine
// uses it at a time.
type session struct {
	hc  *http.Client
	url string
	sid string
	id  int64
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

func newSession(hc *http.Client, url string) (*session, error) {
	s := &session{hc: hc, url: url}
	if _, err := s.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "wasmbench", "version": "1"},
	}); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := s.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, 0, nil); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return s, nil
}

// call sends one request and returns its result, or its JSON-RPC error.
func (s *session) call(method string, params any) (json.RawMessage, error) {
	s.id++
	var m rpcMessage
	if err := s.post(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params}, s.id, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if m.Error != nil {
		return nil, fmt.Errorf("%s: %w", method, m.Error)
	}
	return m.Result, nil
}

func (s *session) post(msg any, id int64, into *rpcMessage) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	defer io.Copy(io.Discard, resp.Body)
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sid = sid
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("HTTP %s: %s", resp.Status, b)
	}
	if into == nil {
		return nil
	}
	want := fmt.Sprint(id)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			*into = rpcMessage{}
			if err := json.Unmarshal([]byte(strings.TrimSpace(data)), into); err != nil {
				return err
			}
			if into.Method == "" && string(into.ID) == want {
				return nil
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		return errors.New("the event stream ended without the answer")
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return err
	}
	if string(into.ID) != want {
		return fmt.Errorf("answer to id %s, want %s", into.ID, want)
	}
	return nil
}

// close ends the session (DELETE), as a client that is done does.
func (s *session) close() {
	req, err := http.NewRequest(http.MethodDelete, s.url, nil)
	if err != nil || s.sid == "" {
		return
	}
	req.Header.Set("Mcp-Session-Id", s.sid)
	if resp, err := s.hc.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

type callResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
	Task    *struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"task"`
}

func decodeCall(raw json.RawMessage) (*callResult, error) {
	var r callResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// plainCall is one tools/call of tool that must answer "ok".
func (s *session) plainCall(tool string) error {
	raw, err := s.call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{}})
	if err != nil {
		return err
	}
	r, err := decodeCall(raw)
	if err != nil {
		return err
	}
	if r.IsError || len(r.Content) != 1 || r.Content[0].Text != "ok" {
		return fmt.Errorf("tools/call %s: unexpected result %s", tool, raw)
	}
	return nil
}

// startTask sends a task-augmented tools/call and returns the task's id.
func (s *session) startTask(tool string, args map[string]any) (string, error) {
	raw, err := s.call("tools/call", map[string]any{"name": tool, "arguments": args, "task": map[string]any{"ttl": 60_000}})
	if err != nil {
		return "", err
	}
	r, err := decodeCall(raw)
	if err != nil {
		return "", err
	}
	if r.Task == nil || r.Task.TaskID == "" {
		return "", fmt.Errorf("tools/call %s with a task: no task in %s", tool, raw)
	}
	return r.Task.TaskID, nil
}

// taskRoundTrip is one task from start to result: a task-augmented
// tools/call, one tasks/get, then tasks/result (which blocks until the task
// is done, so the client never spins on tasks/get).
func (s *session) taskRoundTrip(tool string) error {
	id, err := s.startTask(tool, map[string]any{})
	if err != nil {
		return err
	}
	if _, err := s.call("tasks/get", map[string]any{"taskId": id}); err != nil {
		return err
	}
	raw, err := s.call("tasks/result", map[string]any{"taskId": id})
	if err != nil {
		return err
	}
	r, err := decodeCall(raw)
	if err != nil {
		return err
	}
	if r.IsError || len(r.Content) != 1 || r.Content[0].Text != "ok" {
		return fmt.Errorf("tasks/result: unexpected result %s", raw)
	}
	return nil
}
