package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// This file reads untrusted JSON documents (schemas) into a tree that keeps
// member order and refuses what would let two readers disagree about the
// document: duplicate member names, and nesting past a bound. The schema
// checker (schema.go) walks it.

// jkind is the kind of a JSON value.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

// jval is one JSON value. Objects keep their members in document order.
type jval struct {
	kind  jkind
	b     bool    // jBool
	s     string  // jString, or the text of a jNumber
	elems []*jval // jArray
	keys  []string
	vals  []*jval // jObject, vals[i] is the value of keys[i]
	size  int     // bytes of JSON text the value spans (approximately: with the separator before it)
}

// field returns the value of member k of an object, or nil.
func (v *jval) field(k string) *jval {
	for i, key := range v.keys {
		if key == k {
			return v.vals[i]
		}
	}
	return nil
}

// parseJSONTree reads exactly one JSON value nested at most maxDepth levels.
func parseJSONTree(b []byte, maxDepth int) (*jval, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	p := jparser{dec: dec, maxDepth: maxDepth}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

type jparser struct {
	dec      *json.Decoder
	maxDepth int
}

// value reads one value whose containers are depth levels deep. Its
// recursion is bounded by maxDepth.
func (p *jparser) value(depth int) (*jval, error) {
	start := p.dec.InputOffset()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, jsonTreeError(err)
	}
	v := &jval{}
	switch t := tok.(type) {
	case nil:
		v.kind = jNull
	case bool:
		v.kind, v.b = jBool, t
	case json.Number:
		v.kind, v.s = jNumber, string(t)
	case string:
		v.kind, v.s = jString, t
	case json.Delim:
		if depth >= p.maxDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", p.maxDepth)
		}
		switch t {
		case '[':
			v.kind = jArray
			for p.dec.More() {
				e, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, e)
			}
		case '{':
			v.kind = jObject
			seen := make(map[string]bool)
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, jsonTreeError(err)
				}
				k, _ := kt.(string)
				if seen[k] {
					return nil, fmt.Errorf("duplicate member name %q", k)
				}
				seen[k] = true
				e, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.keys = append(v.keys, k)
				v.vals = append(v.vals, e)
			}
		}
		if _, err := p.dec.Token(); err != nil { // the closing delimiter
			return nil, jsonTreeError(err)
		}
	}
	v.size = int(p.dec.InputOffset() - start)
	return v, nil
}

func jsonTreeError(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the JSON document is incomplete")
	case errors.As(err, &se):
		return fmt.Errorf("not valid JSON at byte %d", se.Offset)
	}
	return err
}

// jsonShape is what a scan of a JSON value learns about it for the cost of
// validating it: how deep it nests, and per depth how many values and
// member names start there and how many bytes lie at or below it.
type jsonShape struct {
	depth  int                          // deepest container nesting seen
	values [maxInstanceDepth + 2]uint64 // values (members' values, items) starting at each depth
	names  [maxInstanceDepth + 2]uint64 // member names starting at each depth
	bytes  [maxInstanceDepth + 2]uint64 // bytes inside values at each depth
}

// scanJSON measures b, a JSON value, in one pass without allocating. It
// stops (ok false) at the first container nested deeper than
// maxInstanceDepth. It does not check that b is valid JSON: the decoder
// that runs after it does.
func scanJSON(b []byte) (sh jsonShape, ok bool) {
	depth := 0
	inString, escaped, inScalar := false, false, false
	var objects uint64 // bit d: the container at nesting d+1 is an object
	expectName := false
	var at [maxInstanceDepth + 2]uint64 // bytes read at each nesting
	for _, c := range b {
		at[depth]++
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString, inScalar = true, false
			if expectName {
				sh.names[depth]++
				expectName = false
			} else {
				sh.values[depth]++
			}
		case '{', '[':
			inScalar = false
			sh.values[depth]++
			if depth == maxInstanceDepth {
				sh.depth = depth + 1
				return sh, false
			}
			objects &^= 1 << depth
			if c == '{' {
				objects |= 1 << depth
			}
			depth++
			sh.depth = max(sh.depth, depth)
			expectName = c == '{'
		case '}', ']':
			inScalar, expectName = false, false
			if depth > 0 {
				depth--
			}
		case ',':
			inScalar = false
			expectName = depth > 0 && objects&(1<<(depth-1)) != 0
		case ':', ' ', '\t', '\n', '\r':
			inScalar = false
		default:
			if !inScalar {
				inScalar = true
				sh.values[depth]++
			}
		}
	}
	// A value at depth k spans every byte read at nesting k or deeper.
	var sum uint64
	for k := len(at) - 1; k >= 0; k-- {
		sum += at[k]
		sh.bytes[k] = sum
	}
	return sh, true
}
