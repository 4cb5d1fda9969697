package schema

import (
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// This file is a validator for the plain schemas most tools declare: an
// object of typed properties, some required, with bounds on strings and
// numbers. A call's arguments are checked against it first; only a value
// it cannot accept goes to jsonschema-go, which then decides, and words
// the error. It is built at load, when a schema uses nothing else.
//
// Why: jsonschema-go walks a value by reflection and allocates as it goes
// (annotations, a big.Rat per number): about 40–70 of the 170–190
// allocations of a whole call of a small tool. Being a pre-check that only
// ever accepts, it needs to agree with jsonschema-go on what it accepts,
// never on errors: a value it is not sure of goes to the library.

// quickSchema is a schema in the subset; nil fields are absent keywords.
type quickSchema struct {
	typ       string                  // "" or one JSON type: object, string, number, integer, boolean, null, array
	props     map[string]*quickSchema // properties
	required  []string
	closed    bool // additionalProperties: false
	minLength *int
	maxLength *int
	minimum   *float64
	maximum   *float64
	exclMin   *float64
	exclMax   *float64
}

// maxQuickDepth bounds the nesting of a quick schema (the value's own
// depth is bounded by decode).
const maxQuickDepth = 8

// quickOf returns the quick form of s, or nil when s uses a keyword
// outside the subset.
func quickOf(s *jsonschema.Schema) *quickSchema { return quickAt(s, 0) }

func quickAt(s *jsonschema.Schema, depth int) *quickSchema {
	if s == nil || depth > maxQuickDepth {
		return nil
	}
	q := &quickSchema{typ: s.Type, required: s.Required, minLength: s.MinLength, maxLength: s.MaxLength,
		minimum: s.Minimum, maximum: s.Maximum, exclMin: s.ExclusiveMinimum, exclMax: s.ExclusiveMaximum}
	switch s.Type {
	case "", "object", "string", "number", "integer", "boolean", "null", "array":
	default:
		return nil
	}
	switch ap := s.AdditionalProperties; {
	case ap == nil:
	case isFalseSchema(ap):
		q.closed = true
	default:
		return nil
	}
	if len(s.Properties) > 0 {
		q.props = make(map[string]*quickSchema, len(s.Properties))
		for name, ps := range s.Properties {
			if q.props[name] = quickAt(ps, depth+1); q.props[name] == nil {
				return nil
			}
		}
	}
	// Everything else must be absent or an annotation: a copy with the
	// keywords handled above and the annotations cleared must be empty.
	// A keyword jsonschema-go adds later is not cleared, so it keeps the
	// schema out of the subset.
	rest := *s
	rest.Type, rest.Required, rest.MinLength, rest.MaxLength = "", nil, nil, nil
	rest.Minimum, rest.Maximum, rest.ExclusiveMinimum, rest.ExclusiveMaximum = nil, nil, nil, nil
	rest.AdditionalProperties, rest.Properties, rest.PropertyOrder = nil, nil, nil
	rest.Schema, rest.Comment, rest.Title, rest.Description = "", "", "", ""
	rest.Default, rest.Examples, rest.Deprecated, rest.ReadOnly, rest.WriteOnly = nil, nil, false, false, false
	if !reflect.ValueOf(rest).IsZero() {
		return nil
	}
	return q
}

// isFalseSchema reports whether s is the schema false, as jsonschema-go
// reads it ({"not": {}}).
func isFalseSchema(s *jsonschema.Schema) bool {
	if s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	rest := *s
	rest.Not = nil
	return reflect.ValueOf(rest).IsZero()
}

// accepts reports whether v (as decode returns it) is valid; false means
// "not sure", not "invalid".
func (q *quickSchema) accepts(v any) bool {
	if q.typ != "" && jsonTypeOf(v) != q.typ && (q.typ != "number" || jsonTypeOf(v) != "integer") {
		return false
	}
	switch v := v.(type) {
	case jsonObject:
		for _, name := range q.required {
			if _, ok := v[name]; !ok {
				return false
			}
		}
		for name, e := range v {
			ps, ok := q.props[name]
			if !ok && q.closed || ok && !ps.accepts(e) {
				return false
			}
		}
	case jsonString:
		if q.minLength != nil || q.maxLength != nil {
			n := utf8.RuneCountInString(string(v))
			if q.minLength != nil && n < *q.minLength || q.maxLength != nil && n > *q.maxLength {
				return false
			}
		}
	case float64:
		// Both sides are float64: comparing them is exact, as the
		// library's comparison of rationals is.
		if q.minimum != nil && v < *q.minimum || q.maximum != nil && v > *q.maximum ||
			q.exclMin != nil && v <= *q.exclMin || q.exclMax != nil && v >= *q.exclMax || math.IsNaN(v) {
			return false
		}
	}
	return true
}

// jsonTypeOf is the JSON type of a decoded value, as jsonschema-go names
// it: a number without a fractional part is an integer.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, f := math.Modf(v); f == 0 {
			return "integer"
		}
		return "number"
	case jsonString:
		return "string"
	case jsonArray:
		return "array"
	case jsonObject:
		return "object"
	}
	return "?"
}
