package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestElicitSchema: the flat form of requestedSchema that MCP allows
// passes; anything else, above all anything with references or
// combinators, is refused.
func TestElicitSchema(t *testing.T) {
	good := []string{
		`{"type":"object","properties":{"ok":{"type":"boolean"}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"t","description":"d","properties":{` +
			`"name":{"type":"string","title":"Name","minLength":1,"maxLength":50,"format":"email","default":"a@b.c","pattern":"^[a-z@.]+$"},` +
			`"n":{"type":"integer","minimum":0,"maximum":10,"default":5},"x":{"type":"number"},"b":{"type":"boolean","default":false},` +
			`"color":{"type":"string","enum":["r","g"],"enumNames":["Red","Green"],"default":"r"},` +
			`"c2":{"type":"string","oneOf":[{"const":"r","title":"Red"}]},` +
			`"many":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b"]},"default":["a"]},` +
			`"many2":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}},"required":["name","n"]}`,
	}
	for _, s := range good {
		if err := CheckElicit(json.RawMessage(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := map[string]string{
		"cycle":             `{"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"$ref":"#"}]}`,
		"property $ref":     `{"type":"object","properties":{"a":{"$ref":"#"}}}`,
		"nested object":     `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`,
		"not object":        `{"type":"string"}`,
		"no properties":     `{"type":"object"}`,
		"case":              `{"type":"object","properties":{"a":{"type":"string","ALLOF":[{"$ref":"#"}]}}}`,
		"duplicate":         `{"type":"object","properties":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#"}}}`,
		"combinator":        `{"type":"object","properties":{"a":{"type":"string","not":{}}}}`,
		"array of objects":  `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object"}}}}`,
		"bad format":        `{"type":"object","properties":{"a":{"type":"string","format":"hostname"}}}`,
		"bad pattern":       `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
		"unknown required":  `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
		"enumNames length":  `{"type":"object","properties":{"a":{"type":"string","enum":["x"],"enumNames":[]}}}`,
		"numeric enum":      `{"type":"object","properties":{"a":{"type":"string","enum":[1]}}}`,
		"bad option":        `{"type":"object","properties":{"a":{"type":"string","oneOf":[{"const":"x"}]}}}`,
		"negative length":   `{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`,
		"other $schema":     `{"$schema":"https://example.com/s","type":"object","properties":{}}`,
		"deep":              nest("properties", 10, "{}"),
		"too many":          `{"type":"object","properties":{` + strings.Repeat(`"a":{"type":"boolean"},`, 0) + manyBooleans(maxElicitProperties+1) + `}}`,
		"not json":          `{"type":`,
		"properties null":   `{"type":"object","properties":null}`,
		"missing type":      `{"type":"object","properties":{"a":{"title":"x"}}}`,
		"boolean default":   `{"type":"object","properties":{"a":{"type":"boolean","default":"yes"}}}`,
		"unknown root key":  `{"type":"object","properties":{},"additionalProperties":{"$ref":"#"}}`,
		"items with extras": `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","enum":["x"],"not":{}}}}}`,
	}
	for name, s := range bad {
		if err := CheckElicit(json.RawMessage(s)); err == nil {
			t.Errorf("%s: accepted %s", name, s)
		}
	}
}

func manyBooleans(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf(`"b%d":{"type":"boolean"}`, i))
	}
	return strings.Join(parts, ",")
}
