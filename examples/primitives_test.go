package examples_test

import (
	"encoding/json"
	"slices"
)

// The session's requests for ABI 1.2's primitives: resources, resource
// templates and prompts, listed, read and got over MCP as a client does.

// contents is one part of a resources/read result.
type contents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     string `json:"blob"`
}

// promptMessage is one message of a prompts/get result, with a text block.
type promptMessage struct {
	Role    string `json:"role"`
	Content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// prompt is a prompts/get result.
type prompt struct {
	Description string          `json:"description"`
	Messages    []promptMessage `json:"messages"`
}

// listed returns the values of member key of each item of list (the
// result member of method), in the order the server listed them.
func (s *session) listed(method, list, key string) []string {
	s.t.Helper()
	var r map[string]json.RawMessage
	if err := s.call(method, map[string]any{}).Decode(&r); err != nil {
		s.t.Fatalf("%s: %v", method, err)
	}
	var items []map[string]any
	if err := json.Unmarshal(r[list], &items); err != nil {
		s.t.Fatalf("%s: %s: %v", method, list, err)
	}
	var out []string
	for _, item := range items {
		v, _ := item[key].(string)
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// resources returns the URIs of resources/list, sorted.
func (s *session) resources() []string { return s.listed("resources/list", "resources", "uri") }

// templates returns the URI templates of resources/templates/list, sorted.
func (s *session) templates() []string {
	return s.listed("resources/templates/list", "resourceTemplates", "uriTemplate")
}

// prompts returns the names of prompts/list, sorted.
func (s *session) prompts() []string { return s.listed("prompts/list", "prompts", "name") }

// readResource reads uri; a JSON-RPC error fails the test.
func (s *session) readResource(uri string) []contents {
	s.t.Helper()
	var r struct {
		Contents []contents `json:"contents"`
	}
	if err := s.call("resources/read", map[string]any{"uri": uri}).Decode(&r); err != nil {
		s.t.Fatalf("resources/read %s: %v", uri, err)
	}
	return r.Contents
}

// getPrompt gets prompt name with args; a JSON-RPC error fails the test.
func (s *session) getPrompt(name string, args map[string]string) prompt {
	s.t.Helper()
	var p prompt
	if err := s.call("prompts/get", map[string]any{"name": name, "arguments": args}).Decode(&p); err != nil {
		s.t.Fatalf("prompts/get %s %v: %v", name, args, err)
	}
	return p
}

// asJSON is v as JSON text, for messages that show a whole answer.
func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
