package mcpwire

import (
	"bytes"
	"encoding/json"
)

// LiftedTaskKey is the private _meta key that carries a tools/call request's
// params.task past go-sdk, which drops unknown params fields when it decodes
// tools/call. A client-supplied value under this key is always removed first,
// so a client cannot inject one.
const LiftedTaskKey = "io.wasmtask/lifted-task"

// RequestIDKey is the private _meta key that carries the JSON-RPC ID of a
// task-augmented tools/call: the code that creates the task tells the
// connection which response announces it.
// Like LiftedTaskKey, a client-supplied value is removed first.
const RequestIDKey = "io.wasmtask/request-id"

var (
	taskField   = []byte(`"task"`)
	privateKeys = []byte("io.wasmtask/")
)

// LiftTaskParams rewrites the params of a tools/call request: it deletes any
// _meta[LiftedTaskKey] and _meta[RequestIDKey] the client sent, then moves
// params.task (if present) to _meta[LiftedTaskKey] and, when reqID is not
// nil, puts reqID in _meta[RequestIDKey]. Params that are not a JSON object,
// or whose _meta is not an object, are returned unchanged for go-sdk to
// reject.
//
// The fast path skips the decode when neither name can occur; a backslash
// anywhere (a JSON escape could spell either name) always takes the slow path.
func LiftTaskParams(params json.RawMessage, reqID any) json.RawMessage {
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
	_, injected := meta[LiftedTaskKey]
	_, injectedID := meta[RequestIDKey]
	if !hasTask && !injected && !injectedID {
		return params
	}
	delete(meta, LiftedTaskKey)
	delete(meta, RequestIDKey)
	delete(fields, "task")
	if hasTask && !isNull(task) {
		if meta == nil {
			meta = make(map[string]json.RawMessage, 2)
		}
		meta[LiftedTaskKey] = task
		if reqID != nil {
			if b, err := Marshal(reqID); err == nil {
				meta[RequestIDKey] = b
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
		b, err := Marshal(meta)
		if err != nil {
			return nil, false
		}
		fields["_meta"] = b
	}
	out, err := Marshal(fields)
	return out, err == nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// Marshal is json.Marshal without HTML escaping, as go-sdk encodes what it
// sends: an answer is the same bytes whichever path wrote it, and a
// rewritten message keeps the size the client sent (json.Marshal would
// spell each <, > and & as six bytes, and could push an accepted body past
// the limits behind it).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
