package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// nest returns n levels of {"kw": …} around inner.
func nest(kw string, n int, inner string) string {
	return strings.Repeat(`{"`+kw+`":`, n) + inner + strings.Repeat("}", n)
}

// defsChain is a schema whose $defs d0 → d1 → … → d(n-1) refer to the next
// one, and the last to last (a quoted reference), or is last (a schema).
func defsChain(n int, last string) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","$ref":"#/$defs/d0","$defs":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		def := fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, i+1)
		if i == n-1 {
			def = last
			if strings.HasPrefix(last, `"`) {
				def = `{"$ref":` + last + `}`
			}
		}
		fmt.Fprintf(&b, `"d%d":%s`, i, def)
	}
	b.WriteString("}}")
	return b.String()
}

func manyProperties(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string","maxLength":64}`, i)
	}
	b.WriteString(`},"required":["p0"]}`)
	return b.String()
}

func manyPatterns(n int, pattern string) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string","pattern":%q}`, i, pattern)
	}
	b.WriteString(`}}`)
	return b.String()
}

// doubling applies itself twice per level: allOf of two branches that both
// recurse through the same property.
const doubling = `{"type":"object","allOf":[{"properties":{"x":{"$ref":"#"}}},{"properties":{"x":{"$ref":"#"}}}]}`

// hostileSchemas are refused by the checker; each would otherwise crash
// the process or cost without bound. The fuzz target starts from them.
var hostileSchemas = []struct {
	name, schema, want string
}{
	// Cycles of in-place applicators, through every keyword that applies a
	// subschema to the same value.
	{"$ref to root", `{"$ref":"#"}`, "reference cycle: # -$ref-> #"},
	{"allOf", `{"type":"object","allOf":[{"$ref":"#"}]}`, "reference cycle"},
	{"anyOf", `{"anyOf":[{"type":"string"},{"$ref":"#"}]}`, "reference cycle"},
	{"oneOf", `{"oneOf":[{"$ref":"#"}]}`, "reference cycle"},
	{"not", `{"not":{"$ref":"#"}}`, "reference cycle"},
	{"if", `{"if":{"$ref":"#"}}`, "reference cycle"},
	{"then", `{"if":true,"then":{"$ref":"#"}}`, "reference cycle"},
	{"else", `{"if":false,"else":{"$ref":"#"}}`, "reference cycle"},
	{"dependentSchemas", `{"dependentSchemas":{"a":{"$ref":"#"}}}`, "reference cycle"},
	{"draft-07 dependencies", `{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":{"$ref":"#"}}}`, "reference cycle"},
	{"$defs chain", `{"$ref":"#/$defs/a","$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}}}`, "reference cycle"},
	{"unreferenced $defs cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, "reference cycle"},
	{"definitions", `{"definitions":{"a":{"anyOf":[{"$ref":"#/definitions/a"}]}}}`, "reference cycle"},
	{"$anchor", `{"$anchor":"top","oneOf":[{"if":{"$ref":"#top"}}]}`, "reference cycle"},
	{"$dynamicRef", `{"$dynamicAnchor":"n","anyOf":[{"$dynamicRef":"#n"}]}`, "reference cycle"},
	{"$dynamicRef to another anchor", `{"$defs":{"a":{"$id":"http://x.test/a","$dynamicAnchor":"n","allOf":[{"$ref":"http://x.test/b"}]},"b":{"$id":"http://x.test/b","$dynamicAnchor":"n","allOf":[{"$dynamicRef":"#n"}]}}}`, "reference cycle"},
	{"draft-07 $id anchor", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$id":"#a","allOf":[{"$ref":"#a"}]}}}`, "reference cycle"},
	{"$id-relative", `{"$id":"http://x.test/root.json","$defs":{"a":{"$id":"a.json","$ref":"root.json"}},"allOf":[{"$ref":"a.json"}]}`, "reference cycle"},
	{"pointer into a sibling", `{"properties":{"a":{"$ref":"#/properties/b"},"b":{"dependentSchemas":{"x":{"$ref":"#/properties/a"}}}}}`, "reference cycle"},
	{"pointer into items", `{"items":{"not":{"$ref":"#/items"}}}`, "reference cycle"},
	{"pointer into prefixItems", `{"prefixItems":[{"allOf":[{"$ref":"#/prefixItems/0"}]}]}`, "reference cycle"},
	{"percent-encoded pointer", `{"$defs":{"a b":{"$ref":"#/$defs/a%20b"}}}`, "reference cycle"},
	{"escaped pointer", `{"$defs":{"a/b":{"$ref":"#/$defs/a~1b"}}}`, "reference cycle"},
	{"long $ref chain back", defsChain(10, `"#/$defs/d0"`), "reference cycle"},

	// What jsonschema-go reads differently from a plain JSON reader.
	{"keyword in another case", `{"type":"object","ALLOF":[{"$REF":"#"}]}`, `"ALLOF" must be spelled "allOf"`},
	{"keyword with a folding rune", `{"allOf":[{"$ref":"#/propertieſ/a"}],"propertieſ":{"a":{}}}`, `"propertieſ" must be spelled "properties"`},
	{"members differing in case", `{"allOf":[],"AllOf":[{"$ref":"#"}]}`, `members "allOf" and "AllOf" differ only in case`},
	{"duplicate member", `{"properties":{"a":{"$ref":"#/properties/a"}},"properties":{}}`, `duplicate member name "properties"`},

	// References the library resolves to nothing (it then dereferences nil).
	{"absent subschema", `{"$ref":"#/additionalProperties"}`, "does not lead to a subschema"},
	{"null subschema", `{"not":null,"$ref":"#/not"}`, "does not lead to a subschema"},
	{"pointer to an array", `{"allOf":[true],"$ref":"#/allOf"}`, "does not lead to a subschema"},
	{"pointer to a value", `{"minimum":1,"$ref":"#/minimum"}`, "does not lead to a subschema"},
	{"unknown anchor", `{"$ref":"#nowhere"}`, `no anchor "nowhere"`},
	{"remote", `{"$ref":"https://example.com/schema.json"}`, "refers outside the schema"},
	{"relative without a base", `{"$ref":"other.json"}`, "refers outside the schema"},
	{"duplicate anchor", `{"$defs":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}}}`, `anchor "x" is defined twice`},
	{"duplicate $id", `{"$id":"http://x.test/r","$defs":{"a":{"$id":"s"},"b":{"$id":"s"}}}`, "identifies another schema too"},

	// Size, nesting and fan-out.
	{"nested not", nest("not", 100, "{}"), "nested deeper than 64 levels"},
	{"nested properties", nest("items", 70, `{"type":"string"}`), "nested deeper than 64 levels"},
	{"too many subschemas", manyProperties(maxSchemaNodes), "more than 4096 subschemas"},
	{"too long", `{"description":"` + strings.Repeat("x", maxSchemaBytes) + `"}`, "more than the limit of 262144"},
	{"long path", `{"properties":{"` + strings.Repeat("p", maxSchemaPath) + `":{}}}`, "longer than 512 bytes"},
	{"long in-place chain", defsChain(maxInPlaceChain+1, `{"type":"string"}`), "in a chain"},
	{"doubling", doubling, "too costly"},
	{"tripling through anyOf", `{"anyOf":[{"items":{"$ref":"#"}},{"items":{"$ref":"#"}},{"items":{"$ref":"#"}}]}`, "too costly"},
	{"wide anyOf", `{"anyOf":[` + strings.Repeat(`{"required":["a","b","c","d"]},`, 3000) + `{}]}`, "too costly"},

	// Regular expressions.
	{"bad pattern", `{"properties":{"x":{"type":"string","pattern":"("}}}`, "pattern: error parsing regexp"},
	{"bad patternProperties key", `{"patternProperties":{"(":{}}}`, "error parsing regexp"},
	{"long pattern", `{"pattern":"` + strings.Repeat("a", maxPatternBytes+1) + `"}`, "a regular expression of 1025 bytes"},
	{"too many patterns", manyPatterns(maxPatterns+1, "a"), "more than 64 regular expressions"},
	{"large programs", manyPatterns(30, "[a-z]{1000}"), "compile to more than 20000 instructions"},

	// Other things jsonschema-go would refuse later or validate nothing with.
	{"unsupported $schema", `{"$schema":"https://json-schema.org/draft/2019-09/schema"}`, "only draft 2020-12"},
	{"not a schema", `{"not":5}`, "a schema must be an object or a boolean"},
	{"null in allOf", `{"allOf":[null]}`, "a schema must be an object or a boolean"},
	{"allOf not an array", `{"allOf":{}}`, "must be an array of schemas"},
	{"$ref not a string", `{"$ref":1}`, `"$ref" must be a string`},
}

// goodSchemas pass the checker and compile; cost is what one value at
// depth 0 receives.
var goodSchemas = []struct {
	name, schema string
}{
	{"empty", `{"type":"object"}`},
	{"binary tree", `{"type":"object","properties":{"value":{"type":"number"},"left":{"$ref":"#"},"right":{"$ref":"#"}}}`},
	{"linked list via $defs", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"},"v":{"type":"integer"}}}}}`},
	{"tree of arrays", `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`},
	{"shared definition", `{"$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"}},"allOf":[{"$ref":"#/$defs/s"},{"$ref":"#/$defs/s"}]}`},
	{"100 properties", manyProperties(100)},
	{"anchors", `{"$defs":{"s":{"$anchor":"str","type":"string"}},"properties":{"a":{"$ref":"#str"}}}`},
	{"$id-relative", `{"$id":"http://x.test/root.json","$defs":{"s":{"$id":"s.json","type":"string"}},"properties":{"a":{"$ref":"s.json"},"b":{"$ref":"http://x.test/s.json"}}}`},
	{"dynamic recursion through items", `{"$dynamicAnchor":"node","type":"object","properties":{"kids":{"items":{"$dynamicRef":"#node"}}}}`},
	{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$id":"#a","type":"string"}},"properties":{"x":{"$ref":"#a"}},"dependencies":{"x":["y"]}}`},
	{"combinators", `{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}],"if":{"properties":{"a":{"const":1}}},"then":{"required":["c"]},"not":{"required":["d"]}}`},
	{"patterns", `{"type":"object","patternProperties":{"^x-":{"type":"string","pattern":"^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$"}}}`},
	{"items null is false", `{"type":"object","properties":{"a":{"items":null}}}`},
	{"example add", `{"type":"object","properties":{"a":{"type":"integer","minimum":-1000000000000,"maximum":1000000000000},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`},
}

func TestSchemaRefused(t *testing.T) {
	for _, tc := range hostileSchemas {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(json.RawMessage(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestSchemaAccepted(t *testing.T) {
	for _, tc := range goodSchemas {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(json.RawMessage(tc.schema))
			if err != nil {
				t.Fatalf("compileSchema: %v", err)
			}
			v, err := s.Decode([]byte(`{"a":"x","left":{"value":1,"right":{}},"kids":[{"kids":[]}]}`))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			_ = s.Validate(v) // terminates; the outcome depends on the schema
		})
	}
}

// TestSchemaCost: a recursive schema that applies itself once per level
// costs the same at every depth; one that applies itself twice doubles,
// and is refused.
func TestSchemaCost(t *testing.T) {
	tree, err := checkSchema(json.RawMessage(goodSchemas[1].schema))
	if err != nil {
		t.Fatal(err)
	}
	for k := 2; k <= maxInstanceDepth; k++ {
		if l := tree.load[costEval]; l[k] != l[1] {
			t.Fatalf("binary tree: cost at depth %d is %d, at depth 1 %d; want equal", k, l[k], l[1])
		}
	}
	c := &checker{uris: map[string]*snode{}, dynAnchors: map[string][]*snode{}}
	root := must(parseJSONTree([]byte(doubling), maxSchemaDepth))
	if _, err := c.node(root, "", nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		if err := c.resolveRefs(n); err != nil {
			t.Fatal(err)
		}
	}
	order, chain, err := c.order()
	if err != nil {
		t.Fatal(err)
	}
	l := c.loads(order, chain).load[costEval]
	for k := 2; k <= maxInstanceDepth; k++ {
		if l[k] != 2*l[k-1] {
			t.Fatalf("doubling: evaluations at depth %d: %d, at depth %d: %d; want twice as many", k, l[k], k-1, l[k-1])
		}
	}
	if _, err := c.cost(order, chain); err == nil || !strings.Contains(err.Error(), "too costly") {
		t.Fatalf("doubling: got %v, want it refused", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSchemaKeywords: the checker knows every keyword of the library, and
// how each holds subschemas. It fails when a new jsonschema-go adds one.
func TestSchemaKeywords(t *testing.T) {
	known := map[string]string{}
	for _, l := range []struct {
		kind string
		kws  []string
	}{{"one", kwOne}, {"list", kwList}, {"dict", kwDict}, {"other", kwString}, {"other", kwOther}} {
		for _, k := range l.kws {
			known[k] = l.kind
		}
	}
	known["items"], known["dependencies"] = "special", "special"
	schemaT := reflect.TypeFor[*jsonschema.Schema]()
	for _, f := range reflect.VisibleFields(reflect.TypeFor[jsonschema.Schema]()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Name {
		case "Type", "Types":
			name = "type"
		case "Items", "ItemsArray":
			name = "items"
		case "DependencySchemas", "DependencyStrings":
			name = "dependencies"
		case "Extra", "PropertyOrder":
			continue
		}
		kind, ok := known[name]
		if !ok {
			t.Errorf("field %s (%q) of jsonschema.Schema is not a keyword the checker knows", f.Name, name)
			continue
		}
		var want string
		switch f.Type {
		case schemaT:
			want = "one"
		case reflect.SliceOf(schemaT):
			want = "list"
		case reflect.MapOf(reflect.TypeFor[string](), schemaT):
			want = "dict"
		default:
			want = "other"
		}
		if kind != want && kind != "special" {
			t.Errorf("keyword %q holds %s, the checker reads it as %s", name, want, kind)
		}
	}
}

func TestScanJSON(t *testing.T) {
	sh, ok := scanJSON([]byte(`{"a":[1,"x\"]",{"b":true}],"c":-2.5e3}`))
	if !ok || sh.depth != 3 {
		t.Fatalf("got depth %d ok %v, want 3 true", sh.depth, ok)
	}
	if got, want := sh.values[:4], []uint64{1, 2, 3, 1}; !slices.Equal(got, want) {
		t.Errorf("values per depth %v, want %v", got, want)
	}
	if got, want := sh.names[:4], []uint64{0, 2, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("names per depth %v, want %v", got, want)
	}
	if sh.bytes[0] != 38 || sh.bytes[3] == 0 || sh.bytes[4] != 0 {
		t.Errorf("bytes per depth %v", sh.bytes[:5])
	}
	deep := strings.Repeat("[", maxInstanceDepth) + strings.Repeat("]", maxInstanceDepth)
	if _, ok := scanJSON([]byte(deep)); !ok {
		t.Errorf("%d levels refused, want accepted", maxInstanceDepth)
	}
	if _, ok := scanJSON([]byte("[" + deep + "]")); ok {
		t.Errorf("%d levels accepted, want refused", maxInstanceDepth+1)
	}
}

// TestInstanceBounds: values nested too deep, or too costly for the
// schema, are refused before they are parsed.
func TestInstanceBounds(t *testing.T) {
	tree := must(Compile(json.RawMessage(goodSchemas[1].schema)))
	deep := nest("left", maxInstanceDepth+1, "{}")
	if _, err := tree.Decode([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper than 32 levels") {
		t.Errorf("deep value: got %v, want it refused", err)
	}
	ok := nest("left", maxInstanceDepth, "1")
	if v, err := tree.Decode([]byte(ok)); err != nil {
		t.Errorf("value %d levels deep: %v", maxInstanceDepth, err)
	} else if err := tree.Validate(v); err == nil {
		t.Errorf("a number as a tree node validated")
	}
	wide := must(Compile(json.RawMessage(`{"anyOf":[` + strings.Repeat(`{"type":"string"},`, 999) + `{}]}`)))
	big := `{"a":"` + strings.Repeat("x", 1<<20) + `"}`
	if _, err := wide.Decode([]byte(big)); err == nil || !strings.Contains(err.Error(), "too large to check") {
		t.Errorf("1 MiB under a 1000-way anyOf: got %v, want it refused", err)
	}
	if _, err := wide.Decode([]byte(`{"a":"small"}`)); err != nil {
		t.Errorf("small value under a 1000-way anyOf: %v", err)
	}
}

// TestSchemaLibraryRecursesWithoutBound documents why the checker exists:
// on its own, jsonschema-go validates a 40-byte cyclic schema until the
// goroutine's stack overflows, and that ends the process (a child process
// here). When it stops doing so, the checker's cycle rule can be revisited.
func TestSchemaLibraryRecursesWithoutBound(t *testing.T) {
	if os.Getenv("WASMTASK_SCHEMA_CHILD") == "1" {
		debug.SetMaxStack(16 << 20)
		var s jsonschema.Schema
		_ = json.Unmarshal([]byte(`{"type":"object","allOf":[{"$ref":"#"}]}`), &s)
		rs, err := s.Resolve(nil)
		if err != nil {
			fmt.Println("resolve refused it:", err)
			return
		}
		fmt.Println("validated:", rs.Validate(map[string]any{}))
		return
	}
	if testing.Short() {
		t.Skip("runs a child process that overflows its stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSchemaLibraryRecursesWithoutBound$")
	cmd.Env = append(os.Environ(), "WASMTASK_SCHEMA_CHILD=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "stack overflow") {
		t.Fatalf("the library survived a cyclic schema (err %v); output:\n%.500s", err, out)
	}
}
