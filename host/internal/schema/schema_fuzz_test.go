package schema

import (
	"encoding/json"
	"runtime/debug"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzSchema feeds schemas and values through the checker, jsonschema-go's
// Resolve and its Validate (called directly, without the recover of
// schema.validate, so that a panic of the library is a finding). Whatever
// the checker accepts must resolve and validate without panicking and
// without recursing without bound: the stack is limited to 64 MiB here,
// where a bounded validation needs a few MiB at most, and an overflow
// crashes the fuzzer, which records the input. The same holds for what
// checkElicitSchema accepts, through the path go-sdk takes with a client's
// answer (Resolve, Validate, ApplyDefaults).
//
//	go test -run '^$' -fuzz FuzzSchema -fuzztime 5m ./host/internal/schema/
func FuzzSchema(f *testing.F) {
	values := []string{`{}`, `{"a":"x"}`, `{"x":{"x":{"x":{}}}}`, `{"left":{"right":{"value":1}}}`, `[1,"a",{"b":[]}]`, `"s"`, `{"kids":[{"kids":[{}]}]}`}
	for i, tc := range hostileSchemas {
		if len(tc.schema) < 4096 {
			f.Add([]byte(tc.schema), []byte(values[i%len(values)]))
		}
	}
	for i, tc := range goodSchemas {
		f.Add([]byte(tc.schema), []byte(values[i%len(values)]))
	}
	f.Add([]byte(`{"type":"object","properties":{"ok":{"type":"boolean"},"c":{"type":"string","enum":["a"]}},"required":["ok"]}`), []byte(`{"ok":true,"c":"a"}`))
	f.Fuzz(func(t *testing.T, schemaJSON, value []byte) {
		defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
		fuzzToolSchema(t, schemaJSON, value)
		fuzzElicitSchema(t, schemaJSON, value)
	})
}

func fuzzToolSchema(t *testing.T, schemaJSON, value []byte) {
	cost, err := checkSchema(schemaJSON)
	if err != nil {
		return
	}
	for k := range cost.load[costEval] {
		if cost.at(k) > maxSchemaLoad {
			t.Fatalf("accepted a schema costing %d at depth %d", cost.at(k), k)
		}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		return
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return
	}
	v, err := (&Schema{rs: rs, cost: *cost}).Decode(value)
	if err != nil {
		return
	}
	_ = rs.Validate(v)
}

func fuzzElicitSchema(t *testing.T, schemaJSON, value []byte) {
	if CheckElicit(schemaJSON) != nil {
		return
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		t.Fatalf("an accepted requestedSchema does not decode: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return
	}
	var content map[string]any
	if json.Unmarshal(value, &content) != nil || content == nil {
		return
	}
	if rs.Validate(content) == nil {
		_ = rs.ApplyDefaults(&content)
	}
}
