package rpcmsg

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxDepth bounds how deeply a message's arrays and objects nest, as
// go-sdk's decoder bounds them: params are handed on raw, and the handlers
// behind would otherwise each walk whatever depth encoding/json accepts.
const MaxDepth = 1000

// Decode reads data, one JSON value, as a JSON-RPC 2.0 request or response.
func Decode(data []byte) (jsonrpc.Message, error) {
	if deeper(data, MaxDepth) {
		return nil, fmt.Errorf("nested more than %d levels deep", MaxDepth)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, errors.New("not a JSON object")
	}
	var version string
	if err := json.Unmarshal(members["jsonrpc"], &version); err != nil || version != "2.0" {
		got := string(members["jsonrpc"]) // a string quoted, as go-sdk words it
		if got == "" {
			got = "(none)"
		}
		return nil, fmt.Errorf("invalid message version tag %s; expected %q", got, "2.0")
	}
	id, err := decodeID(members["id"])
	if err != nil {
		return nil, err
	}
	if m, ok := members["method"]; ok {
		var method string
		if err := json.Unmarshal(m, &method); err != nil {
			return nil, errors.New(`"method" is not a string`)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: members["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a response without an ID")
	}
	resp := &jsonrpc.Response{ID: id, Result: members["result"]}
	if e, ok := members["error"]; ok && string(e) != "null" {
		we, err := decodeError(e)
		if err != nil {
			return nil, err
		}
		resp.Error = we
	}
	return resp, nil
}

// decodeError reads a response's error object, its member names matched
// exactly like the message's.
func decodeError(b json.RawMessage) (*jsonrpc.Error, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, errors.New(`"error" is not an object`)
	}
	we := &jsonrpc.Error{Data: members["data"]}
	if c, ok := members["code"]; ok && json.Unmarshal(c, &we.Code) != nil {
		return nil, errors.New(`the error's "code" is not an integer`)
	}
	if m, ok := members["message"]; ok && json.Unmarshal(m, &we.Message) != nil {
		return nil, errors.New(`the error's "message" is not a string`)
	}
	return we, nil
}

// decodeID reads a JSON-RPC ID: absent or null (a notification), a string,
// or a number, as jsonrpc.MakeID takes them.
func decodeID(b json.RawMessage) (jsonrpc.ID, error) {
	if b == nil {
		return jsonrpc.ID{}, nil
	}
	var v any
	id, err := jsonrpc.ID{}, json.Unmarshal(b, &v)
	if err == nil {
		id, err = jsonrpc.MakeID(v)
	}
	if err != nil {
		return jsonrpc.ID{}, errors.New("the id must be a string or a number")
	}
	return id, nil
}

// deeper reports whether the arrays and objects of data, valid JSON, nest
// more than max levels deep.
func deeper(data []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > max {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}
