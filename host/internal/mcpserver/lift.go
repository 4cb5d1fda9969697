package mcpserver

import (
	"bytes"
	"encoding/json"
)

// liftedTaskKey is the private _meta key that carries a tools/call request's
// params.task past go-sdk, which drops unknown params fields when it decodes
// tools/call. A client-supplied value under this key is always removed first,
// so a client cannot inject one.
const liftedTaskKey = "io.wasmtask/lifted-task"

// requestIDKey is the private _meta key that carries the JSON-RPC ID of a
// task-augmented tools/call on stdio: the code that creates the task tells
// the connection which response announces it (see lineConn.expectTask).
// Like liftedTaskKey, a client-supplied value is removed first.
const requestIDKey = "io.wasmtask/request-id"

// httpRequestKey is the private _meta key that ties a tools/call or
// tasks/result request received over HTTP to the POST that carried it:
// go-sdk runs the request on the session, detached from the POST, and the
// key lets the request end when its POST does (the client went away).
// Set only by serveHTTP, under a random token per POST; a client-supplied
// value is removed first.
const httpRequestKey = "io.wasmtask/http-request"

var (
	taskField   = []byte(`"task"`)
	privateKeys = []byte("io.wasmtask/")
)

// liftTaskParams rewrites the params of a tools/call request: it deletes any
// _meta[liftedTaskKey] and _meta[requestIDKey] the client sent, then moves
// params.task (if present) to _meta[liftedTaskKey] and, when reqID is not
// nil, puts reqID in _meta[requestIDKey]. Params that are not a JSON object,
// or whose _meta is not an object, are returned unchanged for go-sdk to
// reject.
//
// The fast path skips the decode when neither name can occur; a backslash
// anywhere (a JSON escape could spell either name) always takes the slow path.
func liftTaskParams(params json.RawMessage, reqID any) json.RawMessage {
	if bytes.IndexByte(params, '\\') < 0 && !bytes.Contains(params, taskField) && !bytes.Contains(params, privateKeys) {
		return params
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(params, &fields); err != nil || fields == nil {
		return params
	}
	task, hasTask := fields["task"]
	var meta map[string]json.RawMessage
	if raw, ok := fields["_meta"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return params
		}
	}
	_, injected := meta[liftedTaskKey]
	_, injectedID := meta[requestIDKey]
	_, injectedHTTP := meta[httpRequestKey]
	if !hasTask && !injected && !injectedID && !injectedHTTP {
		return params
	}
	delete(meta, liftedTaskKey)
	delete(meta, requestIDKey)
	delete(meta, httpRequestKey)
	delete(fields, "task")
	if hasTask && !isNull(task) {
		if meta == nil {
			meta = make(map[string]json.RawMessage, 2)
		}
		meta[liftedTaskKey] = task
		if reqID != nil {
			if b, err := marshal(reqID); err == nil {
				meta[requestIDKey] = b
			}
		}
	}
	if out, ok := encodeParams(fields, meta); ok {
		return out
	}
	return params
}

// encodeParams encodes params from their fields, with meta (when not nil)
// as their _meta; ok is false when either does not encode.
func encodeParams(fields, meta map[string]json.RawMessage) (json.RawMessage, bool) {
	if meta != nil {
		b, err := marshal(meta)
		if err != nil {
			return nil, false
		}
		fields["_meta"] = b
	}
	out, err := marshal(fields)
	return out, err == nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// liftMessage applies liftTaskParams to one raw JSON-RPC message if it is a
// tools/call request, and, when token is not "", ties a tools/call or
// tasks/result request to its POST (httpRequestKey). It reports whether
// the message changed.
func liftMessage(raw json.RawMessage, token string) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return raw, false
	}
	var method string
	if m, ok := fields["method"]; !ok || json.Unmarshal(m, &method) != nil || (method != methodCallTool && method != methodTasksResult) {
		return raw, false
	}
	params, ok := fields["params"]
	if !ok {
		return raw, false
	}
	lifted := params
	if method == methodCallTool {
		lifted = liftTaskParams(params, nil)
	}
	if token != "" {
		lifted = withMeta(lifted, httpRequestKey, token)
	}
	if bytes.Equal(lifted, params) {
		return raw, false
	}
	fields["params"] = lifted
	out, err := marshal(fields)
	if err != nil {
		return raw, false
	}
	return out, true
}

// withMeta sets params._meta[key] to value, replacing what the client put
// there. Params that are not a JSON object, or whose _meta is not one, are
// returned unchanged for go-sdk to reject.
func withMeta(params json.RawMessage, key, value string) json.RawMessage {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(params, &fields); err != nil || fields == nil {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return params
		}
	}
	meta[key], _ = marshal(value)
	if out, ok := encodeParams(fields, meta); ok {
		return out
	}
	return params
}

// liftBody rewrites a Streamable HTTP POST body, a single message or a
// batch. Bodies that are not JSON are returned unchanged for go-sdk to reject.
func liftBody(body []byte, token string) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return body
	}
	if trimmed[0] != '[' {
		if out, changed := liftMessage(trimmed, token); changed {
			return out
		}
		return body
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(trimmed, &batch); err != nil {
		return body
	}
	changed := false
	for i, m := range batch {
		if out, ok := liftMessage(m, token); ok {
			batch[i], changed = out, true
		}
	}
	if !changed {
		return body
	}
	out, err := marshal(batch)
	if err != nil {
		return body
	}
	return out
}

// marshal is json.Marshal without HTML escaping: a rewritten message keeps
// the size the client sent (json.Marshal would spell each <, > and & as six
// bytes, and could push an accepted body past the limits behind it).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
