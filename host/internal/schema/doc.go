// Package schema is wasmtask's JSON Schema room: it checks, compiles and
// applies the schemas modules declare (a tool's inputSchema and
// outputSchema, an elicitation's requestedSchema), within a bounded amount
// of work. It imports github.com/google/jsonschema-go and the standard
// library only, never the Wasm runtime or the MCP SDK.
//
//	s, err := schema.Compile(raw) // at load: refused schemas are errors
//	v, err := s.Decode(args)      // at call: parsed once, bounded
//	err = s.Validate(v)
//	err = schema.CheckElicit(requested) // the flat form MCP allows
//
// jsonschema-go validates by plain recursion, so a schema is checked
// before the library sees it (schema.go): bounded size, nesting and number
// of subschemas; keywords spelled exactly; local references resolved as
// the library resolves them, remote ones refused; no cycle among the
// keywords that apply a subschema to the same value ($ref, $dynamicRef,
// allOf, anyOf, oneOf, not, if/then/else, dependentSchemas); bounded
// regular expressions; and a static cost — the work one value at each
// depth can cause, computed over the schema's graph — within a bound. A
// value is refused before it is parsed when it nests deeper than 32 levels
// or when its estimated work (its shape, scanned without parsing, times
// the static cost) passes a bound; BenchmarkSchema measures the worst
// cases, FuzzSchema and FuzzQuickSchema hunt for crashes and disagreement.
//
// A schema that uses only types, properties, required, a closed object and
// bounds on strings and numbers also gets a quick validator
// (quickschema.go): a value it accepts skips the library; any other value
// goes to the library, which decides. The requestedSchema of an
// elicitation must be the flat form MCP allows (elicitschema.go), checked
// on a JSON tree of its own (jsontree.go) that keeps member order and
// duplicates, which encoding/json would hide.
//
// It does not own what a refused schema means for a module (the runtime
// refuses the module) or how a client is told.
package schema
