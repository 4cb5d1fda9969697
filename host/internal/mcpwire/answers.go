package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wasmtask/wasmtask/abi"
)

// This file checks a client's answer to a tool's question before the tool
// sees it, the same way whichever era the answer arrived in: an
// elicitation/create response (2025-11-25), an inputResponses entry of a
// retried tools/call or a tasks/update (2026-07-28). Only where the answer
// arrived differs: a 2026-07-28 answer is a request's params, refused with
// -32602 (the question stays open); a 2025-11-25 answer is a response,
// which cannot be refused, so the tool's question fails instead.

// MaxAnswerBytes bounds one answer's content as the tool receives it: as
// much as a question may take (the runtime's bound on an elicit request).
// A form of strings, numbers and choices fits many times over.
const MaxAnswerBytes = 64 << 10

// MaxAnswerDetail bounds the validator's finding quoted in the error: it
// may quote the offending value.
const MaxAnswerDetail = 256

// AnswerError is an answer the check refused: Detail says why, in the
// client's terms.
type AnswerError struct{ Detail string }

// Error says the answer does not match its question, and why.
func (e *AnswerError) Error() string {
	return "the answer does not match the question: " + e.Detail
}

func badAnswer(format string, args ...any) error {
	d := fmt.Sprintf(format, args...)
	if len(d) > MaxAnswerDetail {
		i := MaxAnswerDetail
		for i > 0 && !utf8.RuneStart(d[i]) {
			i--
		}
		d = d[:i] + "…"
	}
	return &AnswerError{Detail: d}
}

// CheckAnswer checks reply, the client's answer to req, and returns it as
// the tool receives it. The action is accept, decline or cancel; only an
// accepted answer carries content (a declined one's is dropped). Content is
// an object of at most MaxAnswerBytes whose members are strings, numbers,
// booleans or arrays of strings (MCP's ElicitResult), that req's
// requestedSchema accepts; the schema's defaults are then filled in, as
// go-sdk does for a 2025-11-25 answer, and the content is encoded anew
// (valid UTF-8, numbers within float64). An accepted answer without content
// is checked as an empty object.
//
// req.RequestedSchema is the flat form MCP allows, without references: the
// runtime refuses any other question before it reaches [abi.Events]
// (jsonschema-go follows references without bound).
func CheckAnswer(req abi.ElicitRequest, reply abi.ElicitReply) (abi.ElicitReply, error) {
	switch reply.Action {
	case "accept":
	case "decline", "cancel":
		return abi.ElicitReply{Action: reply.Action}, nil
	default:
		return abi.ElicitReply{}, badAnswer(`"action" must be "accept", "decline" or "cancel"`)
	}
	raw := bytes.TrimSpace(reply.Content)
	if len(raw) == 0 || isNull(raw) {
		raw = []byte("{}")
	}
	if len(raw) > MaxAnswerBytes {
		return abi.ElicitReply{}, badAnswer("its content is %d bytes, more than the limit of %d", len(raw), MaxAnswerBytes)
	}
	var content map[string]any
	if err := json.Unmarshal(raw, &content); err != nil || content == nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && strings.HasPrefix(te.Value, "number") {
			return abi.ElicitReply{}, badAnswer("it has a number outside the range of a 64-bit float")
		}
		return abi.ElicitReply{}, badAnswer(`"content" must be an object of strings, numbers, booleans and arrays of strings`)
	}
	for _, name := range slices.Sorted(maps.Keys(content)) {
		if err := primitive(content[name]); err != nil {
			return abi.ElicitReply{}, badAnswer("property %q %v", name, err)
		}
	}
	if len(req.RequestedSchema) > 0 {
		var s jsonschema.Schema
		if err := json.Unmarshal(req.RequestedSchema, &s); err != nil {
			return abi.ElicitReply{}, badAnswer("the question's requestedSchema cannot be read")
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			return abi.ElicitReply{}, badAnswer("the question's requestedSchema cannot be read")
		}
		if err := rs.Validate(content); err != nil {
			return abi.ElicitReply{}, badAnswer("%v", err)
		}
		if err := rs.ApplyDefaults(&content); err != nil {
			return abi.ElicitReply{}, badAnswer("%v", err)
		}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return abi.ElicitReply{}, badAnswer("its content cannot be encoded")
	}
	return abi.ElicitReply{Action: "accept", Content: b}, nil
}

// primitive checks one member of an answer's content: a string, a number,
// a boolean or an array of strings.
func primitive(v any) error {
	switch v := v.(type) {
	case string, float64, bool:
		return nil
	case []any:
		for _, e := range v {
			if _, ok := e.(string); !ok {
				return errors.New("is an array with a member that is not a string")
			}
		}
		return nil
	case nil:
		return errors.New("is null, not a string, number, boolean or array of strings")
	}
	return errors.New("is an object, not a string, number, boolean or array of strings")
}

// MaxRoots bounds the roots of an answer to roots/list.
const MaxRoots = 1024

// CheckSampleAnswer checks raw, a client's answer to a sampling question
// (a CreateMessageResult: a role and one content block, or several), and
// returns it as the tool receives it, encoded anew.
func CheckSampleAnswer(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) > MaxAnswerBytes {
		return nil, badAnswer("it is %d bytes, more than the limit of %d", len(raw), MaxAnswerBytes)
	}
	var r struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, badAnswer("not a sampling result object")
	}
	if r.Role != "assistant" && r.Role != "user" {
		return nil, badAnswer(`"role" must be "assistant" or "user"`)
	}
	c := bytes.TrimSpace(r.Content)
	if len(c) == 0 || c[0] != '{' && c[0] != '[' {
		return nil, badAnswer(`"content" must be a content block or an array of them`)
	}
	return reencode(raw)
}

// CheckRootsAnswer checks raw, a client's answer to a roots question (a
// ListRootsResult: at most MaxRoots roots, each with a URI), and returns it
// as the tool receives it, encoded anew.
func CheckRootsAnswer(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) > MaxAnswerBytes {
		return nil, badAnswer("it is %d bytes, more than the limit of %d", len(raw), MaxAnswerBytes)
	}
	var r struct {
		Roots []struct {
			URI string `json:"uri"`
		} `json:"roots"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Roots == nil {
		return nil, badAnswer(`not a roots result: "roots" must be an array of objects`)
	}
	if len(r.Roots) > MaxRoots {
		return nil, badAnswer("it has %d roots, more than the limit of %d", len(r.Roots), MaxRoots)
	}
	for i, root := range r.Roots {
		if root.URI == "" {
			return nil, badAnswer("root %d has no uri", i)
		}
	}
	return reencode(raw)
}

// reencode is raw decoded and encoded again: valid UTF-8, nothing after
// the value, numbers as Go writes them.
func reencode(raw json.RawMessage) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, badAnswer("it is not valid JSON")
	}
	return json.Marshal(v)
}
