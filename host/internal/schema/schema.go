package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// This file checks the JSON Schemas a module declares (inputSchema,
// outputSchema) before github.com/google/jsonschema-go sees them, compiles
// them, and validates values against them within a bounded amount of work.
//
// jsonschema-go validates by plain recursion. A schema whose references
// lead back to the same value ({"$ref":"#"}, allOf:[{"$ref":"#"}], $defs
// a→b→a, …) recurses until the Go stack overflows, which ends the whole
// process; a reference to an absent subschema makes it dereference nil;
// and combinators that apply one subschema several times per level
// multiply its work with every level of the value. The checker resolves
// references itself, refuses every cycle among the keywords that apply a
// subschema to the same value, and computes at load what one value can
// cost at each depth. RATIONALE.md ("Why does the host check schemas itself
// before jsonschema-go sees them?") gives the reasoning behind each bound.

// Bounds on one schema (an inputSchema or an outputSchema).
const (
	// maxSchemaBytes bounds the JSON text of one schema.
	maxSchemaBytes = 256 << 10
	// maxSchemaDepth bounds the JSON nesting of a schema document. A
	// property's schema is two levels below its object's ("properties",
	// then the name), so this allows 32 levels of nested objects.
	maxSchemaDepth = 64
	// maxSchemaNodes bounds the number of subschemas of one schema.
	maxSchemaNodes = 4096
	// maxSchemaPath bounds the JSON Pointer of a subschema: validation
	// errors quote it at every level they pass.
	maxSchemaPath = 512
	// maxInPlaceChain bounds the longest chain of in-place applicators
	// ($ref, allOf, not, if …) that one value goes through at one level.
	// Validation recurses at most (maxInstanceDepth+1)·maxInPlaceChain
	// calls deep.
	maxInPlaceChain = 32
	// maxSchemaLoad bounds the static cost of a schema: the weighted
	// number of schema evaluations that one value, at any depth up to
	// maxInstanceDepth, can receive (see schemaCost).
	maxSchemaLoad = 10_000
	// maxPatterns bounds the regular expressions of one schema (pattern
	// values and patternProperties keys), maxPatternBytes the source of
	// one, and maxPatternInsts the instructions of their compiled
	// programs together (a compiled program's memory and matching time
	// grow with its instructions).
	maxPatterns     = 64
	maxPatternBytes = 1024
	maxPatternInsts = 20_000
)

// Bounds on a value validated against a schema: a call's arguments, a
// result's structuredContent.
const (
	// maxInstanceDepth bounds the nesting of a value: a deeper one is
	// refused before it is parsed.
	maxInstanceDepth = 32
	// maxValidationWork bounds the estimated work of one validation (see
	// schemaCost.work), in the units of maxSchemaLoad: about one step of
	// a schema evaluation, or 16 bytes of the value quoted or hashed, or
	// 32 bytes of an error copied. A value that would cost more is
	// refused before it is parsed. It lets through 1 MiB of usual shapes
	// (BenchmarkSchema: the worst value it admits takes about as long as
	// validating a 1 MB array of numbers).
	maxValidationWork = 4_000_000
	// maxValidationDetail bounds the validator's message kept in an error.
	maxValidationDetail = 1024
)

// schema is a compiled tool schema and its static cost.
type Schema struct {
	rs    *jsonschema.Resolved
	cost  schemaCost
	quick *quickSchema // nil when the schema is outside the quick subset (quickschema.go)
}

// The components of the work of one schema evaluation, which the static
// cost keeps apart because they grow with different things.
const (
	costEval  = iota // steps of the evaluation itself: keywords, entries of properties, required, enum …
	costBytes        // per byte of the value: quoting a string in an error, hashing an array, matching a regexp
	costError        // bytes of the error a failing evaluation writes (its path, its keyword's text)
	nCosts
)

// schemaCost is the static cost of a schema: load[c][k] bounds component
// c of the work that all the schema evaluations one value at depth k can
// receive cause. chain is the longest chain of in-place applicators: the
// validator runs (k+1)·chain levels deep at depth k, every level merges
// the annotations of the levels below, and copies an error on its way up.
type schemaCost struct {
	load  [nCosts][maxInstanceDepth + 1]uint64
	chain uint64
	names bool // member names are validated too (propertyNames)
}

// How many bytes make one unit of validation work (about one schema
// evaluation step): bytes quoted into an error or hashed, and bytes of an
// error copied as it passes one level of the validator. BenchmarkSchema
// calibrates them: at the work limit, its cases take similar times.
const (
	quoteBytesPerUnit = 16
	copyBytesPerUnit  = 32
)

// compileSchema checks raw (see checkSchema) and compiles it.
func Compile(raw json.RawMessage) (*Schema, error) {
	cost, err := checkSchema(raw)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	rs, err := resolveSchema(&s)
	if err != nil {
		return nil, err
	}
	return &Schema{rs: rs, cost: *cost, quick: quickOf(&s)}, nil
}

// resolveSchema is Resolve, with a panic of the library turned into an
// error: one bad schema must not end the process.
func resolveSchema(s *jsonschema.Schema) (rs *jsonschema.Resolved, err error) {
	defer func() {
		if p := recover(); p != nil {
			rs, err = nil, fmt.Errorf("the schema library failed on it: %v", p)
		}
	}()
	return s.Resolve(nil)
}

// decode parses raw, a JSON value, for validation. Before parsing it
// refuses a value nested deeper than maxInstanceDepth and one whose
// validation would cost more than maxValidationWork: the work of validate
// is bounded by the size of raw times the schema's static cost.
func (s *Schema) Decode(raw []byte) (any, error) {
	sh, ok := scanJSON(raw)
	if !ok {
		return nil, fmt.Errorf("nested deeper than %d levels", maxInstanceDepth)
	}
	if w := s.cost.work(&sh); w > maxValidationWork {
		return nil, fmt.Errorf("too large to check against the schema (about %d units of work, the limit is %d)", w, maxValidationWork)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return summarized(v), nil
}

// jsonObject, jsonArray and jsonString are the JSON values the validator
// sees. They print as a short summary: the validator quotes the value it
// checks in its errors (with %v), and a value printed in full by every
// failing branch of a combinator, then copied at every level the error
// passes, would make the cost of an error grow with the size of the value.
// The validator reads them by their kind (map, slice, string), as it reads
// what encoding/json decodes.
type (
	jsonObject map[string]any
	jsonArray  []any
	jsonString string
)

// IsObject reports whether v, a value Decode returned, is a JSON object.
func IsObject(v any) bool {
	_, ok := v.(jsonObject)
	return ok
}

func (o jsonObject) String() string { return fmt.Sprintf("an object of %d members", len(o)) }
func (a jsonArray) String() string  { return fmt.Sprintf("an array of %d items", len(a)) }

func (s jsonString) String() string {
	const n = 64
	if len(s) <= n {
		return strconv.Quote(string(s))
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strconv.Quote(string(s[:i])) + "…"
}

// summarized gives v (decoded by encoding/json, nested at most
// maxInstanceDepth levels) the types above, in place.
func summarized(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = summarized(e)
		}
		return jsonObject(v)
	case []any:
		for i, e := range v {
			v[i] = summarized(e)
		}
		return jsonArray(v)
	case string:
		return jsonString(v)
	}
	return v
}

// validate validates v, a value decode returned. The error's text is the
// validator's, bounded.
func (s *Schema) Validate(v any) (err error) {
	if s.quick != nil && s.quick.accepts(v) {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the schema library failed on it: %v", p)
		}
		if err != nil {
			if msg := err.Error(); len(msg) > maxValidationDetail {
				err = errors.New(msg[:maxValidationDetail] + "…")
			}
		}
	}()
	return s.rs.Validate(v)
}

// work estimates the validation work of a value of shape sh: at each depth
// k, the evaluations of its values, times the in-place levels that merge
// what each evaluated (annotations), and the bytes of its values that
// evaluations may quote, hash or match, times the levels an error copies
// them through.
func (c *schemaCost) work(sh *jsonShape) uint64 {
	var w uint64
	for k := range c.load[costEval] {
		levels := uint64(k+1) * c.chain
		values := sh.values[k]
		if c.names {
			values += sh.names[k]
		}
		w = satAdd(w, satMul(satMul(c.load[costEval][k], c.chain), values))
		bytes := satMul(c.load[costBytes][k], sh.bytes[k])
		w = satAdd(w, bytes/quoteBytesPerUnit)
		w = satAdd(w, satMul(bytes, levels)/copyBytesPerUnit)
		w = satAdd(w, satMul(satMul(c.load[costError][k], levels), values)/copyBytesPerUnit)
	}
	return w
}

// The keywords of jsonschema-go's Schema (their JSON names), by what their
// value holds. TestSchemaKeywords checks the lists against the library.
var (
	// one subschema
	kwOne = []string{"additionalProperties", "propertyNames", "unevaluatedProperties",
		"additionalItems", "contains", "unevaluatedItems", "not", "if", "then", "else", "contentSchema"}
	// an array of subschemas ("items" is either)
	kwList = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	// an object of subschemas ("dependencies" may also hold string arrays)
	kwDict = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	// a string the checker reads
	kwString = []string{"$id", "$schema", "$ref", "$dynamicRef", "$anchor", "$dynamicAnchor", "pattern"}
	// the rest
	kwOther = []string{"$comment", "$vocabulary", "title", "description", "default", "deprecated",
		"readOnly", "writeOnly", "examples", "type", "enum", "const", "multipleOf", "minimum", "maximum",
		"exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems",
		"uniqueItems", "minContains", "maxContains", "minProperties", "maxProperties", "required",
		"dependentRequired", "contentEncoding", "contentMediaType", "format"}
)

// The keywords that apply their subschemas to the same value as the schema
// that holds them (in-place applicators). The others that apply one
// (properties, items …) apply it to a member or an item, one level deeper.
var inPlace = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "not": true,
	"if": true, "then": true, "else": true, "dependentSchemas": true, "dependencies": true}

// keywordByFold maps the case-folded spelling of every keyword to the
// keyword. encoding/json matches member names to struct fields without
// regard to case, so jsonschema-go reads "ALLOF" as allOf: the checker
// refuses such spellings rather than model them.
var keywordByFold = func() map[string]string {
	m := make(map[string]string)
	for _, l := range [][]string{kwOne, kwList, kwDict, kwString, kwOther, {"items", "dependencies"}} {
		for _, k := range l {
			m[foldKey(k)] = k
		}
	}
	return m
}()

// foldKey maps s to one representative of all strings equal to it under
// Unicode simple case folding (strings.EqualFold), as encoding/json does.
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		for {
			f := unicode.SimpleFold(r)
			if f <= r {
				r = f
				break
			}
			r = f
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Supported values of "$schema" (jsonschema-go validates nothing else).
const (
	draft7URI     = "http://json-schema.org/draft-07/schema#"
	draft7URIs    = "https://json-schema.org/draft-07/schema#"
	draft2020URI  = "https://json-schema.org/draft/2020-12/schema"
	schemaVersErr = "only draft 2020-12 (" + draft2020URI + ") and draft-07 are supported"
)

// snode is one subschema in the checker's graph.
type snode struct {
	v    *jval
	path string // JSON Pointer from the root, for messages
	id   int

	base    *snode   // the nearest enclosing schema (or this one) that has a URI
	uri     *url.URL // set on bases
	anchors map[string]anchorRef

	ref, dynRef string

	// subschemas by keyword, for JSON Pointers and for the cost
	one  map[string]*snode
	list map[string][]*snode
	dict map[string]map[string]*snode

	inplace []edge         // subschemas applied to the same value
	dynamic bool           // $dynamicRef searches the validator's stack
	w       [nCosts]uint64 // work of one evaluation, by component
}

type edge struct {
	to  *snode
	via string // keyword
}

type anchorRef struct {
	n       *snode
	dynamic bool
}

// checker builds and checks the graph of one schema.
type checker struct {
	draft7     bool
	nodes      []*snode
	uris       map[string]*snode
	dynAnchors map[string][]*snode // $dynamicAnchor name → schemas
	patterns   int
	insts      int
}

// checkSchema checks a schema document before jsonschema-go reads it: its
// size, nesting and number of subschemas; keywords spelled exactly; every
// local reference resolved (remote ones refused); no cycle among in-place
// applicators; a bounded chain of them; bounded regular expressions; and a
// static cost within maxSchemaLoad at every depth of a value up to
// maxInstanceDepth. It returns that cost.
func checkSchema(raw json.RawMessage) (*schemaCost, error) {
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("is %d bytes, more than the limit of %d", len(raw), maxSchemaBytes)
	}
	root, err := parseJSONTree(raw, maxSchemaDepth)
	if err != nil {
		return nil, err
	}
	if root.kind != jObject {
		return nil, errors.New("not a JSON object")
	}
	c := &checker{uris: make(map[string]*snode), dynAnchors: make(map[string][]*snode)}
	if v := root.field("$schema"); v != nil && v.kind == jString {
		switch v.s {
		case "", draft2020URI:
		case draft7URI, draft7URIs:
			c.draft7 = true
		default:
			return nil, fmt.Errorf("$schema %q: %s", v.s, schemaVersErr)
		}
	}
	if _, err := c.node(root, "", nil); err != nil {
		return nil, err
	}
	for _, n := range c.nodes {
		if err := c.resolveRefs(n); err != nil {
			return nil, err
		}
	}
	order, chain, err := c.order()
	if err != nil {
		return nil, err
	}
	return c.cost(order, chain)
}

// show writes a JSON Pointer as a reference to it.
func show(path string) string { return "#" + path }

// node adds v, the subschema at path, and its subschemas to the graph.
// parent is the enclosing schema (nil for the root). The recursion is
// bounded by maxSchemaDepth.
func (c *checker) node(v *jval, path string, parent *snode) (*snode, error) {
	if len(c.nodes) >= maxSchemaNodes {
		return nil, fmt.Errorf("has more than %d subschemas", maxSchemaNodes)
	}
	if len(path) > maxSchemaPath {
		return nil, fmt.Errorf("%.40s…: the path of a subschema is longer than %d bytes", show(path), maxSchemaPath)
	}
	n := &snode{v: v, path: path, id: len(c.nodes)}
	n.w[costEval] = 1
	// "validating <path or $id>: " at every level, and a keyword's text.
	n.w[costError] = uint64(len(path)) + 64
	c.nodes = append(c.nodes, n)
	if parent == nil {
		n.uri, n.base = &url.URL{}, n
		c.uris[""] = n
	} else {
		n.base = parent.base
	}
	switch v.kind {
	case jBool, jNull: // true, false; null where the library reads it as false
		n.w[costEval] = 2 // false is {"not":{}}
		return n, nil
	case jObject:
	default:
		return nil, fmt.Errorf("%s: a schema must be an object or a boolean", show(path))
	}
	if err := checkSpelling(v, path); err != nil {
		return nil, err
	}
	str := func(k string) (string, error) {
		f := v.field(k)
		switch {
		case f == nil || f.kind == jNull:
			return "", nil
		case f.kind != jString:
			return "", fmt.Errorf("%s: %q must be a string", show(path), k)
		}
		return f.s, nil
	}
	var err error
	if n.ref, err = str("$ref"); err != nil {
		return nil, err
	}
	if n.dynRef, err = str("$dynamicRef"); err != nil {
		return nil, err
	}
	if err := c.identify(n, str); err != nil {
		return nil, err
	}
	if p, err := str("pattern"); err != nil {
		return nil, err
	} else if p != "" {
		insts, err := c.regexp(show(path)+": pattern", p)
		if err != nil {
			return nil, err
		}
		n.w[costBytes] += uint64(insts)
	}
	for i, k := range v.keys {
		if err := c.keyword(n, k, v.vals[i]); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// checkSpelling refuses members of a schema object that differ only in
// case, and keywords not spelled exactly (see keywordByFold).
func checkSpelling(v *jval, path string) error {
	seen := make(map[string]string, len(v.keys))
	for _, k := range v.keys {
		f := foldKey(k)
		if prev, dup := seen[f]; dup {
			return fmt.Errorf("%s: members %q and %q differ only in case", show(path), prev, k)
		}
		seen[f] = k
		if kw, ok := keywordByFold[f]; ok && kw != k {
			return fmt.Errorf("%s: %q must be spelled %q", show(path), k, kw)
		}
	}
	return nil
}

// identify records n's $id (a new base URI), $anchor and $dynamicAnchor the
// way jsonschema-go resolves them, but refuses what it would resolve by
// the order it happens to visit schemas in (a duplicate $id or anchor).
func (c *checker) identify(n *snode, str func(string) (string, error)) error {
	id, err := str("$id")
	if err != nil {
		return err
	}
	// draft-07: "All other properties in a "$ref" object MUST be ignored."
	if id != "" && !(c.draft7 && n.ref != "") {
		u, err := url.Parse(id)
		if err != nil {
			return fmt.Errorf("%s: $id %q: %v", show(n.path), id, err)
		}
		switch {
		case u.Fragment != "" && !c.draft7:
			return fmt.Errorf("%s: $id %q must not have a fragment", show(n.path), id)
		case u.Fragment != "":
			// draft-07 names a plain-name fragment with $id.
			if err := c.anchor(n, strings.TrimPrefix(id, "#"), false); err != nil {
				return err
			}
		default:
			abs := n.base.uri.ResolveReference(u)
			if !abs.IsAbs() {
				return fmt.Errorf("%s: $id %q does not resolve to an absolute URI", show(n.path), id)
			}
			if _, dup := c.uris[abs.String()]; dup {
				return fmt.Errorf("%s: $id %q identifies another schema too", show(n.path), id)
			}
			c.uris[abs.String()] = n
			n.uri, n.base = abs, n
		}
	}
	if c.draft7 {
		return nil
	}
	for _, kw := range []string{"$anchor", "$dynamicAnchor"} {
		a, err := str(kw)
		if err != nil {
			return err
		}
		if err := c.anchor(n, a, kw == "$dynamicAnchor"); err != nil {
			return err
		}
		if a != "" && kw == "$dynamicAnchor" {
			c.dynAnchors[a] = append(c.dynAnchors[a], n)
		}
	}
	return nil
}

func (c *checker) anchor(n *snode, name string, dynamic bool) error {
	if name == "" {
		return nil
	}
	b := n.base
	if _, dup := b.anchors[name]; dup {
		return fmt.Errorf("%s: anchor %q is defined twice", show(n.path), name)
	}
	if b.anchors == nil {
		b.anchors = make(map[string]anchorRef)
	}
	b.anchors[name] = anchorRef{n, dynamic}
	return nil
}

// keyword adds the subschemas of member k (value v) of schema n, and what
// one evaluation of k costs.
func (c *checker) keyword(n *snode, k string, v *jval) error {
	where := show(n.path + "/" + escapePointer(k))
	sub := func(v *jval, path string) (*snode, error) { return c.node(v, path, n) }
	isSchema := func(v *jval) bool { return v.kind == jObject || v.kind == jBool }
	switch {
	case k == "items" && v.kind == jArray, contains(kwList, k):
		if v.kind == jNull {
			return nil
		}
		if v.kind != jArray {
			return fmt.Errorf("%s: must be an array of schemas", where)
		}
		subs := make([]*snode, len(v.elems))
		for i, e := range v.elems {
			if !isSchema(e) {
				return fmt.Errorf("%s/%d: a schema must be an object or a boolean", where, i)
			}
			s, err := sub(e, n.path+"/"+k+"/"+strconv.Itoa(i))
			if err != nil {
				return err
			}
			subs[i] = s
			if inPlace[k] {
				n.inplace = append(n.inplace, edge{s, k})
			}
		}
		if n.list == nil {
			n.list = make(map[string][]*snode)
		}
		n.list[k] = subs
	case k == "items", contains(kwOne, k):
		if v.kind == jNull && k != "items" { // the library reads "items": null as false
			return nil
		}
		s, err := sub(v, n.path+"/"+k)
		if err != nil {
			return err
		}
		if n.one == nil {
			n.one = make(map[string]*snode)
		}
		n.one[k] = s
		if inPlace[k] {
			n.inplace = append(n.inplace, edge{s, k})
		}
	case k == "dependencies", contains(kwDict, k):
		if v.kind == jNull {
			return nil
		}
		if v.kind != jObject {
			return fmt.Errorf("%s: must be an object", where)
		}
		subs := make(map[string]*snode, len(v.keys))
		for i, name := range v.keys {
			e := v.vals[i]
			if k == "dependencies" && e.kind == jArray {
				n.w[costEval] += uint64(len(e.elems)) // names of required properties
				continue
			}
			if !isSchema(e) && !(k == "dependencies" && e.kind == jNull) {
				return fmt.Errorf("%s/%s: a schema must be an object or a boolean", where, escapePointer(name))
			}
			path := n.path + "/" + k + "/" + escapePointer(name)
			s, err := sub(e, path)
			if err != nil {
				return err
			}
			subs[name] = s
			if inPlace[k] {
				n.inplace = append(n.inplace, edge{s, k})
			}
			if k == "patternProperties" {
				insts, err := c.regexp(show(path), name)
				if err != nil {
					return err
				}
				n.w[costBytes] += uint64(insts)
			}
		}
		if n.dict == nil {
			n.dict = make(map[string]map[string]*snode)
		}
		n.dict[k] = subs
		if k != "$defs" && k != "definitions" {
			n.w[costEval] += uint64(len(v.keys)) // one evaluation visits every entry
		}
	case k == "required", k == "enum", k == "const", k == "dependentRequired", k == "type":
		// One evaluation visits every entry, and a failing one quotes
		// them all.
		n.w[costEval] += 1 + uint64(v.size)/4
		n.w[costError] += uint64(v.size)
	case numeric[k]:
		n.w[costEval] += 8 // a comparison of big.Rat values
	case k == "$id", k == "$anchor", k == "$dynamicAnchor":
		n.w[costError] += uint64(v.size) // errors name a schema by them
	}
	if k == "anyOf" || k == "oneOf" {
		// A failing one names every branch ("<anonymous schema>", or
		// its $id, counted on the branch).
		n.w[costError] += 32 * uint64(len(v.elems))
	}
	if touchesValue[k] {
		n.w[costBytes] = max(n.w[costBytes], 1)
	}
	return nil
}

// numeric are the keywords that compare numbers as big.Rat values.
var numeric = map[string]bool{"minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "multipleOf": true}

// touchesValue are the keywords whose work grows with the size of the
// value: they quote a string in their error (minLength, maxLength,
// pattern), match it, hash an array (uniqueItems), compare the value
// (enum, const), or are the ones (type, contains) whose error quoted the
// value before it was summarized.
var touchesValue = map[string]bool{"type": true, "enum": true, "const": true, "minLength": true,
	"maxLength": true, "pattern": true, "patternProperties": true, "uniqueItems": true, "contains": true}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// regexp checks one regular expression as jsonschema-go compiles it
// (regexp.Compile: Perl syntax, simplified) and counts its program against
// the schema's budget. It returns the program's size.
func (c *checker) regexp(where, expr string) (int, error) {
	c.patterns++
	if c.patterns > maxPatterns {
		return 0, fmt.Errorf("%s: more than %d regular expressions in one schema", where, maxPatterns)
	}
	if len(expr) > maxPatternBytes {
		return 0, fmt.Errorf("%s: a regular expression of %d bytes, more than the limit of %d", where, len(expr), maxPatternBytes)
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", where, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, fmt.Errorf("%s: %v", where, err)
	}
	c.insts += len(prog.Inst)
	if c.insts > maxPatternInsts {
		return 0, fmt.Errorf("%s: the schema's regular expressions compile to more than %d instructions", where, maxPatternInsts)
	}
	return len(prog.Inst), nil
}

// resolveRefs resolves n's $ref and $dynamicRef the way jsonschema-go
// does, and adds them to n's in-place subschemas. A $dynamicRef that acts
// dynamically may land on any schema with its $dynamicAnchor: it gets an
// edge to each.
func (c *checker) resolveRefs(n *snode) error {
	if n.ref != "" {
		t, _, err := c.resolveRef(n, n.ref)
		if err != nil {
			return fmt.Errorf("%s: $ref %q: %v", show(n.path), n.ref, err)
		}
		n.inplace = append(n.inplace, edge{t, "$ref"})
	}
	if n.dynRef != "" {
		t, dynamic, err := c.resolveRef(n, n.dynRef)
		if err != nil {
			return fmt.Errorf("%s: $dynamicRef %q: %v", show(n.path), n.dynRef, err)
		}
		if dynamic == "" {
			n.inplace = append(n.inplace, edge{t, "$dynamicRef"})
		}
		n.dynamic = dynamic != ""
		for _, d := range c.dynAnchors[dynamic] {
			n.inplace = append(n.inplace, edge{d, "$dynamicRef"})
		}
	}
	return nil
}

// resolveRef returns the schema ref (a $ref or $dynamicRef of n) refers
// to, and the anchor name when it names a dynamic anchor.
func (c *checker) resolveRef(n *snode, ref string) (*snode, string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, "", err
	}
	u = n.base.uri.ResolveReference(u)
	doc := *u
	doc.Fragment = ""
	target := c.uris[doc.String()]
	if target == nil {
		return nil, "", errors.New("refers outside the schema; only references within it are allowed")
	}
	frag := u.Fragment
	if frag != "" && !strings.HasPrefix(frag, "/") {
		a, ok := target.anchors[frag]
		if !ok {
			return nil, "", fmt.Errorf("no anchor %q", frag)
		}
		if a.dynamic {
			return a.n, frag, nil
		}
		return a.n, "", nil
	}
	t, err := c.pointer(target, frag)
	return t, "", err
}

// pointer follows a JSON Pointer from schema n through subschemas only,
// as jsonschema-go does; it ends on a subschema or fails.
func (c *checker) pointer(n *snode, ptr string) (*snode, error) {
	if ptr == "" {
		return n, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("JSON Pointer %q does not begin with '/'", ptr)
	}
	segs := strings.Split(ptr[1:], "/")
	for i := range segs {
		segs[i] = unescapePointer(segs[i])
	}
	for i := 0; i < len(segs); i++ {
		kw := segs[i]
		if s, ok := n.one[kw]; ok {
			n = s
			continue
		}
		list, isList := n.list[kw]
		dict, isDict := n.dict[kw]
		if (!isList && !isDict) || i+1 == len(segs) {
			return nil, fmt.Errorf("JSON Pointer %q does not lead to a subschema", ptr)
		}
		i++
		if isList {
			seg := segs[i]
			idx, err := strconv.Atoi(seg)
			if err != nil || idx < 0 || idx >= len(list) || (len(seg) > 1 && seg[0] == '0') {
				return nil, fmt.Errorf("JSON Pointer %q: no item %q in %s", ptr, seg, kw)
			}
			n = list[idx]
			continue
		}
		s, ok := dict[segs[i]]
		if !ok {
			return nil, fmt.Errorf("JSON Pointer %q: no %q in %s", ptr, segs[i], kw)
		}
		n = s
	}
	return n, nil
}

var (
	pointerEscaper   = strings.NewReplacer("~", "~0", "/", "~1")
	pointerUnescaper = strings.NewReplacer("~0", "~", "~1", "/")
)

func escapePointer(s string) string   { return pointerEscaper.Replace(s) }
func unescapePointer(s string) string { return pointerUnescaper.Replace(s) }

// order returns the schemas with every in-place subschema before the
// schemas that apply it, and the longest chain of in-place applicators
// (bounded by maxInPlaceChain), or an error naming a cycle of them.
func (c *checker) order() ([]*snode, int, error) {
	pending := make([]int, len(c.nodes))     // in-place subschemas not yet ordered
	appliedBy := make([][]int, len(c.nodes)) // reverse edges
	for _, n := range c.nodes {
		pending[n.id] = len(n.inplace)
		for _, e := range n.inplace {
			appliedBy[e.to.id] = append(appliedBy[e.to.id], n.id)
		}
	}
	chain := make([]int, len(c.nodes))
	longest := 0
	order := make([]*snode, 0, len(c.nodes))
	var ready []int
	for _, n := range c.nodes {
		if pending[n.id] == 0 {
			ready = append(ready, n.id)
		}
	}
	for len(ready) > 0 {
		id := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		n := c.nodes[id]
		for _, e := range n.inplace {
			chain[id] = max(chain[id], chain[e.to.id])
		}
		chain[id]++
		longest = max(longest, chain[id])
		if chain[id] > maxInPlaceChain {
			return nil, 0, fmt.Errorf("%s: more than %d in-place applicators ($ref, allOf, anyOf, oneOf, not, if …) apply to one value in a chain", show(n.path), maxInPlaceChain)
		}
		order = append(order, n)
		for _, p := range appliedBy[id] {
			pending[p]--
			if pending[p] == 0 {
				ready = append(ready, p)
			}
		}
	}
	if len(order) < len(c.nodes) {
		return nil, 0, c.cycle(pending)
	}
	return order, longest, nil
}

// cycle describes one cycle among the schemas order could not place (those
// with pending > 0: each has an in-place subschema that is also unplaced).
func (c *checker) cycle(pending []int) error {
	var start *snode
	for _, n := range c.nodes {
		if pending[n.id] > 0 {
			start = n
			break
		}
	}
	walk := []edge{{start, ""}}
	step := map[int]int{start.id: 0} // node → its position on the walk
	for n := start; ; {
		var next edge
		for _, e := range n.inplace {
			if pending[e.to.id] > 0 {
				next = e
				break
			}
		}
		if at, seen := step[next.to.id]; seen {
			var b strings.Builder
			b.WriteString(show(walk[at].to.path))
			for _, e := range append(walk[at+1:], next) {
				fmt.Fprintf(&b, " -%s-> %s", e.via, show(e.to.path))
			}
			return fmt.Errorf("reference cycle: %s; each step applies a subschema to the same value, so validation would never end", b.String())
		}
		step[next.to.id] = len(walk)
		walk = append(walk, next)
		n = next.to
	}
}

// cost computes the static cost of the schema, children before the
// schemas that apply them (order), and refuses one over maxSchemaLoad.
//
// For each component of the work, S(t, k) is the work that applying t to
// a value causes at one value k levels below it:
//
//	S(t, 0) = w(t) + Σ S(c, 0)                   over in-place subschemas c of t
//	S(t, k) = child(t, k-1) + Σ S(c, k)
//	child(t, j) = max(object member, array item, member name) where
//	  member = max(S(p, j) over properties p, S(additionalProperties, j))
//	           + Σ S(q, j) over patternProperties q + S(unevaluatedProperties, j)
//	  item   = max over prefixItems, items, additionalItems + S(contains, j) + S(unevaluatedItems, j)
//	  name   = S(propertyNames, j)
//
// In-place subschemas add up (allOf of two branches costs both), members
// of one object take the maximum (a value is one member). A value at depth
// k of the root receives at most S(root, k). The memo over (t, k) keeps
// the computation linear in schemas × depth although the number of paths
// through shared subschemas is exponential.
func (c *checker) cost(order []*snode, chain int) (*schemaCost, error) {
	out := c.loads(order, chain)
	for k := range out.load[costEval] {
		if l := out.at(k); l > maxSchemaLoad {
			return nil, fmt.Errorf("too costly: validating one value nested %d levels deep would take %s units of work (the limit is %d); combinators ($ref, allOf, anyOf, oneOf …) that apply the same subschemas several times multiply at every level", k, costString(l), maxSchemaLoad)
		}
	}
	return out, nil
}

// at is the work one value at depth k may cause, the most of its
// components (its error copied through every level above it).
func (c *schemaCost) at(k int) uint64 {
	errors := satMul(c.load[costError][k], uint64(k+1)*c.chain) / copyBytesPerUnit
	return max(c.load[costEval][k], c.load[costBytes][k], errors)
}

// loads computes S(root, k) for every component and depth k.
func (c *checker) loads(order []*snode, chain int) *schemaCost {
	root := c.nodes[0]
	out := schemaCost{chain: uint64(chain)}
	for _, t := range c.nodes {
		out.names = out.names || t.one["propertyNames"] != nil
	}
	var prev, cur [nCosts][]uint64
	for i := range nCosts {
		prev[i], cur[i] = make([]uint64, len(c.nodes)), make([]uint64, len(c.nodes))
	}
	for _, t := range order {
		if t.dynamic {
			// Each evaluation looks for the anchor through the
			// validator's stack, at most (maxInstanceDepth+1)·chain deep.
			t.w[costEval] += uint64(maxInstanceDepth+1) * uint64(chain)
		}
	}
	for k := 0; k <= maxInstanceDepth; k++ {
		for _, t := range order {
			for i := range nCosts {
				var l uint64
				if k == 0 {
					l = t.w[i]
				} else {
					l = t.childLoad(prev[i])
				}
				for _, e := range t.inplace {
					l = satAdd(l, cur[i][e.to.id])
				}
				cur[i][t.id] = l
			}
		}
		for i := range nCosts {
			out.load[i][k] = cur[i][root.id]
		}
		prev, cur = cur, prev
	}
	return &out
}

func costString(n uint64) string {
	if n >= satMax {
		return "more than 2^62"
	}
	return strconv.FormatUint(n, 10)
}

// childLoad is child(t, j) of cost, with S(·, j) in s.
func (t *snode) childLoad(s []uint64) uint64 {
	at := func(n *snode) uint64 {
		if n == nil {
			return 0
		}
		return s[n.id]
	}
	var props uint64
	for _, p := range t.dict["properties"] {
		props = max(props, at(p))
	}
	member := max(props, at(t.one["additionalProperties"]))
	for _, q := range t.dict["patternProperties"] {
		member = satAdd(member, at(q))
	}
	member = satAdd(member, at(t.one["unevaluatedProperties"]))

	item := max(at(t.one["items"]), at(t.one["additionalItems"]))
	for _, kw := range []string{"prefixItems", "items"} {
		for _, p := range t.list[kw] {
			item = max(item, at(p))
		}
	}
	item = satAdd(item, satAdd(at(t.one["contains"]), at(t.one["unevaluatedItems"])))

	return max(member, item, at(t.one["propertyNames"]))
}

// Saturating arithmetic: costs of refused schemas grow exponentially.
const satMax = 1 << 62

func satAdd(a, b uint64) uint64 { return min(a+b, satMax) } // a, b ≤ satMax: no overflow

func satMul(a, b uint64) uint64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > satMax/b {
		return satMax
	}
	return a * b
}
