package schema

import (
	"testing"
)

// quickCases are schemas with values: quick says whether the schema must
// be in the quick subset, and each value's expected verdict is the
// library's.
var quickCases = []struct {
	name, schema string
	quick        bool
	values       []string
}{
	{"typed properties", `{"type":"object","properties":{"text":{"type":"string","minLength":1,"maxLength":3},"n":{"type":"integer","minimum":0,"exclusiveMaximum":10},"x":{"type":"number","maximum":1.5,"exclusiveMinimum":-1},"b":{"type":"boolean"},"z":{"type":"null"}},"required":["text"]}`, true,
		[]string{`{"text":"abc"}`, `{"text":""}`, `{"text":"abcd"}`, `{"text":"ééé"}`, `{}`, `{"text":"a","n":1.0}`, `{"text":"a","n":1.5}`, `{"text":"a","n":10}`, `{"text":"a","n":-1}`,
			`{"text":"a","x":1.5}`, `{"text":"a","x":1.5000001}`, `{"text":"a","x":-1}`, `{"text":"a","x":3}`, `{"text":"a","b":"true"}`, `{"text":"a","z":null}`, `{"text":"a","z":0}`, `{"text":1}`, `{"text":"a","other":[1,{}]}`}},
	{"closed", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, true,
		[]string{`{}`, `{"a":"x"}`, `{"b":1}`, `{"a":"x","b":null}`}},
	{"annotations", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"T","description":"D","type":"object","properties":{"a":{"description":"any value","default":1,"examples":[1]}}}`, true,
		[]string{`{"a":[1,2]}`, `{"a":{"b":"c"}}`, `{}`}},
	{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"p":{"type":"integer"}},"required":["p"]}}}`, true,
		[]string{`{"o":{"p":2}}`, `{"o":{}}`, `{"o":{"p":"2"}}`, `{"o":[]}`}},
	{"number admits integers", `{"type":"object","properties":{"v":{"type":"number"}}}`, true,
		[]string{`{"v":1}`, `{"v":1e300}`, `{"v":-0.5}`, `{"v":"1"}`}},
	{"untyped keywords", `{"properties":{"s":{"minLength":2}},"required":["s"]}`, true,
		[]string{`{"s":"ab"}`, `{"s":"a"}`, `{"s":5}`, `{}`}},
	// Outside the subset: the library alone decides.
	{"enum", `{"type":"object","properties":{"c":{"type":"string","enum":["a"]}}}`, false, []string{`{"c":"a"}`, `{"c":"b"}`}},
	{"pattern", `{"type":"object","properties":{"c":{"type":"string","pattern":"^a$"}}}`, false, []string{`{"c":"a"}`, `{"c":"b"}`}},
	{"additional schema", `{"type":"object","additionalProperties":{"type":"string"}}`, false, []string{`{"c":"a"}`, `{"c":1}`}},
	{"items", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}}}}`, false, []string{`{"l":["a"]}`, `{"l":[1]}`}},
	{"ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`, false, []string{`{"a":"x"}`, `{"a":1}`}},
	{"anyOf", `{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`, false, []string{`{"a":1}`, `{}`}},
	{"format", `{"type":"object","properties":{"d":{"type":"string","format":"date"}}}`, false, []string{`{"d":"x"}`}},
	{"type list", `{"type":["object","null"]}`, false, []string{`{}`, `null`}},
}

// TestQuickSchema holds the quick validator to its contract: built for the
// plain schemas, absent for the others, and never accepting a value the
// library refuses.
func TestQuickSchema(t *testing.T) {
	for _, tc := range quickCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.quick != nil; got != tc.quick {
				t.Fatalf("in the quick subset: got %v, want %v", got, tc.quick)
			}
			accepted := 0
			for _, raw := range tc.values {
				v, err := s.Decode([]byte(raw))
				if err != nil {
					t.Fatal(err)
				}
				libErr := s.rs.Validate(v)
				if s.quick != nil && s.quick.accepts(v) {
					accepted++
					if libErr != nil {
						t.Errorf("%s: the quick validator accepts it, the library refuses it: %v", raw, libErr)
					}
				}
				if got := s.Validate(v); (got == nil) != (libErr == nil) {
					t.Errorf("%s: validate says %v, the library %v", raw, got, libErr)
				}
			}
			if tc.quick && accepted == 0 {
				t.Errorf("the quick validator accepted none of the values")
			}
		})
	}
}

// FuzzQuickSchema looks for a schema and a value that the quick validator
// accepts and jsonschema-go refuses.
//
//	go test -run '^$' -fuzz FuzzQuickSchema -fuzztime 2m ./host/internal/schema/
func FuzzQuickSchema(f *testing.F) {
	for _, tc := range quickCases {
		for _, v := range tc.values {
			f.Add([]byte(tc.schema), []byte(v))
		}
	}
	f.Fuzz(func(t *testing.T, schemaJSON, value []byte) {
		s, err := Compile(schemaJSON)
		if err != nil || s.quick == nil {
			return
		}
		v, err := s.Decode(value)
		if err != nil || !s.quick.accepts(v) {
			return
		}
		if err := s.rs.Validate(v); err != nil {
			t.Fatalf("schema %s, value %s: the quick validator accepts it, the library refuses it: %v", schemaJSON, value, err)
		}
	})
}
