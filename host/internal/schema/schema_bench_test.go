package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkSchema measures the worst validations the bounds allow: each
// case is a schema within maxSchemaLoad, other static bounds, and the
// largest value of its shape that decode accepts under maxValidationWork
// (found by bisection). One op is decode plus validate. The metrics say
// how big the value is and how much of the work budget it uses.
//
//	go test -run '^$' -bench Schema ./host/internal/schema/
func BenchmarkSchema(b *testing.B) {
	props30 := func() string {
		var p []string
		for i := range 30 {
			p = append(p, fmt.Sprintf(`"p%d":{"type":"string"}`, i))
		}
		return `{` + strings.Join(p, ",") + `}`
	}()
	// levels of objects, each reached through a chain of links $refs, so
	// that an error raised at the bottom is copied links times per level
	// on its way up (longer chains or more levels are refused at load).
	const levels, links = 4, 15
	chained := func(bottom string) string {
		var defs []string
		for i := 0; i <= levels; i++ {
			for j := range links {
				defs = append(defs, fmt.Sprintf(`"c%d_%d":{"$ref":"#/$defs/c%d_%d"}`, i, j, i, j+1))
			}
			last := fmt.Sprintf(`{"type":"object","properties":{"d":{"$ref":"#/$defs/c%d_0"}}}`, i+1)
			if i == levels {
				last = bottom
			}
			defs = append(defs, fmt.Sprintf(`"c%d_%d":%s`, i, links, last))
		}
		return `{"$ref":"#/$defs/c0_0","$defs":{` + strings.Join(defs, ",") + `}}`
	}
	deepValue := func(inner string) string {
		return strings.Repeat(`{"d":`, levels) + inner + strings.Repeat(`}`, levels)
	}
	cases := []struct {
		name   string
		schema string
		value  func(n int) string
	}{
		// Evaluations: every item of an array goes through 128 branches
		// of 30 properties each (about 4000 subschemas, the most allowed).
		{"evaluations", `{"type":"object","properties":{"a":{"items":{"anyOf":[` +
			strings.TrimSuffix(strings.Repeat(`{"type":"object","properties":`+props30+`},`, 128), ",") + `]}}}}`,
			func(n int) string { return `{"a":[` + strings.TrimSuffix(strings.Repeat(`{},`, n), ",") + `]}` }},
		// Quoting: a long string fails minLength in 16 branches, 4 levels
		// deep in 15-link chains; each failure quotes it and every level
		// copies the joined error.
		{"quoted strings", chained(`{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"minLength":100000000},`, 16), ",") + `]}`),
			func(n int) string { return deepValue(`"` + strings.Repeat("x", n) + `"`) }},
		// Matching: 20 patterns of 1000 instructions each (the budget of
		// one schema) against one string.
		{"regular expressions", `{"type":"object","properties":{"s":{"allOf":[` +
			strings.TrimSuffix(strings.Repeat(`{"pattern":"[a-z]{0,990}0"},`, 5), ",") + `]}}}`,
			func(n int) string { return `{"s":"` + strings.Repeat("a", n) + `"}` }},
		// Merging: what 30 links of $ref above additionalProperties
		// evaluated is merged at every link.
		{"annotations", chainOf(30, `{"additionalProperties":{}}`),
			func(n int) string { return `{` + distinctMembers(n) + `}` }},
		// Numbers: 240 branches with every numeric keyword (big.Rat
		// comparisons) for each item.
		{"numbers", `{"type":"object","properties":{"a":{"items":{"anyOf":[` +
			strings.TrimSuffix(strings.Repeat(`{"minimum":0,"maximum":9,"exclusiveMinimum":-1,"exclusiveMaximum":10,"multipleOf":0.5},`, 240), ",") + `]}}}}`,
			func(n int) string { return `{"a":[` + strings.TrimSuffix(strings.Repeat(`1.5,`, n), ",") + `]}` }},
		// Numeric enum: each item compared with 7000 numbers.
		{"numeric enum", `{"type":"object","properties":{"a":{"items":{"enum":[` +
			strings.TrimSuffix(strings.Repeat(`1.25,`, 7000), ",") + `]}}}}`,
			func(n int) string { return `{"a":[` + strings.TrimSuffix(strings.Repeat(`7,`, n), ",") + `]}` }},
		// Names: every member name goes through 600 failing branches.
		{"property names", `{"type":"object","propertyNames":{"anyOf":[` +
			strings.TrimSuffix(strings.Repeat(`{"maxLength":1},`, 600), ",") + `]}}`,
			func(n int) string { return `{` + distinctMembers(n) + `}` }},
		// Hashing: an array checked for unique items by 500 branches.
		{"unique items", `{"type":"object","properties":{"a":{"anyOf":[` +
			strings.TrimSuffix(strings.Repeat(`{"uniqueItems":true,"minItems":100000000},`, 500), ",") + `]}}}`,
			func(n int) string {
				return `{"a":[` + strings.TrimSuffix(strings.Repeat(`"abcdefghij",`, n), ",") + `]}`
			}},
		// Comparing: a large enum value compared with a large value by
		// many branches.
		{"enum", `{"type":"object","properties":{"a":{"anyOf":[` +
			strings.TrimSuffix(strings.Repeat(`{"enum":[[`+strings.TrimSuffix(strings.Repeat(`"abcdefghij",`, 60), ",")+`,0]]},`, 50), ",") + `]}}}`,
			func(n int) string {
				return `{"a":[` + strings.TrimSuffix(strings.Repeat(`"abcdefghij",`, n), ",") + `]}`
			}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			s, err := Compile(json.RawMessage(tc.schema))
			if err != nil {
				b.Fatalf("compileSchema: %v", err)
			}
			n := largestAccepted(s, tc.value)
			if n == 0 {
				b.Fatal("no value of this shape is accepted")
			}
			value := []byte(tc.value(n))
			sh, _ := scanJSON(value)
			for b.Loop() {
				v, err := s.Decode(value)
				if err != nil {
					b.Fatal(err)
				}
				_ = s.Validate(v)
			}
			b.ReportMetric(float64(len(value)), "value-bytes")
			b.ReportMetric(float64(s.cost.work(&sh))/maxValidationWork, "budget-used")
		})
	}
	b.Run("compile", func(b *testing.B) {
		// The largest schema: 4000 subschemas, 256 KiB, 64 patterns.
		var p []string
		for i := range 4000 {
			if i < maxPatterns {
				p = append(p, fmt.Sprintf(`"p%d":{"type":"string","pattern":"^[a-z]{%d}$","description":"%s"}`, i, 1+i%64, strings.Repeat("d", 8)))
			} else {
				p = append(p, fmt.Sprintf(`"p%d":{"$ref":"#/properties/p%d","description":"%s"}`, i, i%maxPatterns, strings.Repeat("d", 8)))
			}
		}
		raw := json.RawMessage(`{"type":"object","properties":{` + strings.Join(p, ",") + `}}`)
		for b.Loop() {
			if _, err := Compile(raw); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(raw)), "schema-bytes")
	})
}

// largestAccepted returns the largest n ≤ 1<<24 for which decode accepts
// value(n), or 0.
func largestAccepted(s *Schema, value func(int) string) int {
	ok := func(n int) bool {
		sh, fits := scanJSON([]byte(value(n)))
		return fits && s.cost.work(&sh) <= maxValidationWork
	}
	lo, hi := 0, 1<<24
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// chainOf is a schema whose root reaches last through n links of $ref.
func chainOf(n int, last string) string {
	var defs []string
	for j := range n {
		defs = append(defs, fmt.Sprintf(`"c%d":{"$ref":"#/$defs/c%d"}`, j, j+1))
	}
	defs = append(defs, fmt.Sprintf(`"c%d":%s`, n, last))
	return `{"$ref":"#/$defs/c0","$defs":{` + strings.Join(defs, ",") + `}}`
}

// distinctMembers is n members "k0":0, "k1":0, ….
func distinctMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	return b.String()
}
