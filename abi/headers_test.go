package abi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestHeaderParams(t *testing.T) {
	got, err := HeaderParams(json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}},
		"n":{"type":"integer","x-mcp-header":"N"},
		"x-mcp-header":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []HeaderParam{{"N", []string{"n"}, "integer"}, {"Dry-Run", []string{"opts", "dry"}, "boolean"}, {"Region", []string{"region"}, "string"}}
	if !slices.EqualFunc(got, want, func(a, b HeaderParam) bool {
		return a.Name == b.Name && a.Type == b.Type && slices.Equal(a.Path, b.Path)
	}) {
		t.Errorf("HeaderParams = %+v, want %+v", got, want)
	}
	// Data and property names are not annotations.
	for _, schema := range []string{
		`{"type":"object","properties":{"s":{"type":"string","default":{"x-mcp-header":"v"},"examples":[{"x-mcp-header":"v"}]}}}`,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}}}}`,
		`{"type":"object","properties":{"s":{"type":"string","const":{"x-mcp-header":1},"enum":[{"x-mcp-header":1}]}}}`,
	} {
		if got, err := HeaderParams(json.RawMessage(schema)); err != nil || len(got) != 0 {
			t.Errorf("HeaderParams(%s) = %v, %v; want none", schema, got, err)
		}
	}
	// A deep schema is walked once (the path is a shared stack).
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 2000) + `{"type":"string","x-mcp-header":"Deep"}` + strings.Repeat(`}}`, 2000)
	if got, err := HeaderParams(json.RawMessage(deep)); err != nil || len(got) != 1 || len(got[0].Path) != 2000 {
		t.Errorf("a 2000-deep annotated property: %d params, %v", len(got), err)
	}
	for name, schema := range map[string]string{
		"in items":        `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"L"}}}}`,
		"in oneOf":        `{"type":"object","properties":{"l":{"oneOf":[{"type":"string","x-mcp-header":"L"}]}}}`,
		"in $defs":        `{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"D"}}}`,
		"on the root":     `{"type":"object","x-mcp-header":"Root"}`,
		"a number":        `{"type":"object","properties":{"f":{"type":"number","x-mcp-header":"F"}}}`,
		"an object":       `{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}`,
		"not a token":     `{"type":"object","properties":{"s":{"type":"string","x-mcp-header":"a b"}}}`,
		"empty":           `{"type":"object","properties":{"s":{"type":"string","x-mcp-header":""}}}`,
		"not a string":    `{"type":"object","properties":{"s":{"type":"string","x-mcp-header":7}}}`,
		"duplicate names": `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Name"},"b":{"type":"string","x-mcp-header":"name"}}}`,
		"too many":        manyHeaders(MaxHeaderParams + 1),
	} {
		if _, err := HeaderParams(json.RawMessage(schema)); err == nil {
			t.Errorf("%s: HeaderParams accepted %s", name, schema)
		}
	}
	// DecodeManifest refuses such a tool: a load problem.
	_, err = DecodeManifest([]byte(`{"abi":1,"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"f":{"type":"number","x-mcp-header":"F"}}}}]}`))
	if err == nil || !strings.Contains(err.Error(), "x-mcp-header") {
		t.Errorf("DecodeManifest of a bad x-mcp-header: %v", err)
	}
}

func manyHeaders(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = `"p` + string(rune('a'+i)) + `":{"type":"string","x-mcp-header":"H` + string(rune('a'+i)) + `"}`
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

func TestValidInputKey(t *testing.T) {
	for _, k := range []string{"user_name", "step.1", "q-1", "q-0123456789ab", "sample-0123456789ab-x", "roots"} {
		if !ValidInputKey(k) {
			t.Errorf("ValidInputKey(%q) = false", k)
		}
	}
	for _, k := range []string{"", "a b", "q-0123456789ab-1", "sample-00000000000f-12", "roots-0123456789ab-3", string(make([]byte, 65))} {
		if ValidInputKey(k) {
			t.Errorf("ValidInputKey(%q) = true", k)
		}
	}
}
