package mcpwire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/wasmtask/wasmtask/abi"
)

// maxIntegerBytes bounds an integer header parameter as written: a safe
// JavaScript integer (±2^53) has 16 digits; the bound keeps the exact
// comparison cheap.
const maxIntegerBytes = 32

// ParamHeaderPrefix starts the name of the header a tool argument is
// mirrored into (SEP-2243): Mcp-Param-{Name}.
const ParamHeaderPrefix = "Mcp-Param-"

// CheckParamHeaders checks the Mcp-Param-* headers of a 2026-07-28
// tools/call over HTTP against its arguments, for the tool's
// x-mcp-header parameters: a parameter present and not null needs its
// header, equal to its value once decoded (=?base64?…?= is standard
// Base64 of the UTF-8 value, padding and alphabet checked); an absent or
// null one must have none. values returns a header's values (none when
// absent). The error says which header fails, for a -32020 HeaderMismatch.
func CheckParamHeaders(params []abi.HeaderParam, args json.RawMessage, values func(name string) []string) error {
	if len(params) == 0 {
		return nil
	}
	for _, p := range params {
		header := ParamHeaderPrefix + p.Name
		got := values(header)
		raw, present, err := lookup(args, p.Path)
		if err != nil {
			return fmt.Errorf("header mismatch: %s: %v", header, err)
		}
		if !present || string(raw) == "null" {
			if len(got) > 0 {
				return fmt.Errorf("header mismatch: %s is sent for parameter %q, which the arguments do not have", header, strings.Join(p.Path, "."))
			}
			continue
		}
		if len(got) == 0 {
			return fmt.Errorf("header mismatch: missing %s header for parameter %q", header, strings.Join(p.Path, "."))
		}
		if len(got) > 1 {
			return fmt.Errorf("header mismatch: %s is sent %d times", header, len(got))
		}
		v, ok := decodeHeaderValue(got[0])
		if !ok {
			return fmt.Errorf("header mismatch: %s is not valid: invalid Base64 or characters", header)
		}
		if !sameValue(p.Type, v, raw) {
			return fmt.Errorf("header mismatch: %s does not match parameter %q of the arguments", header, strings.Join(p.Path, "."))
		}
	}
	return nil
}

// lookup is the value at path in an arguments object. An object on the
// path that repeats the member, or has one that differs from it only in
// case, is ambiguous (a guest's decoder may read the other one): err.
func lookup(args json.RawMessage, path []string) (v json.RawMessage, present bool, err error) {
	v = args
	for _, k := range path {
		var found bool
		v, found, err = member(v, k)
		if err != nil || !found {
			return nil, false, err
		}
	}
	return v, true, nil
}

// member is the member name of obj (not found when obj is not an
// object), read in one pass over its members.
func member(obj json.RawMessage, name string) (v json.RawMessage, found bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false, nil
	}
	seen := 0
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false, nil
		}
		k, _ := t.(string)
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return nil, false, nil
		}
		if strings.EqualFold(k, name) {
			seen++
			if k == name {
				v, found = val, true
			}
		}
	}
	switch {
	case seen > 1:
		return nil, false, fmt.Errorf("the arguments name %q more than once (or in two cases)", name)
	case seen == 1 && !found:
		return nil, false, fmt.Errorf("the arguments name %q in another case", name)
	}
	return v, found, nil
}

// decodeHeaderValue is a header's value as sent: plain visible ASCII
// (with spaces and tabs), or =?base64?…?= around standard Base64.
func decodeHeaderValue(h string) (string, bool) {
	if inner, ok := strings.CutPrefix(h, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			b, err := base64.StdEncoding.Strict().DecodeString(inner)
			return string(b), err == nil
		}
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", false
		}
	}
	return h, true
}

// sameValue reports whether a header's decoded value v is raw, the
// argument, of type typ: the same string, the same integer in decimal, or
// true/false.
func sameValue(typ, v string, raw json.RawMessage) bool {
	switch typ {
	case "string":
		var s string
		return json.Unmarshal(raw, &s) == nil && s == v
	case "boolean":
		var b bool
		return json.Unmarshal(raw, &b) == nil && (b && v == "true" || !b && v == "false")
	case "integer":
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] == '"' || len(raw) > maxIntegerBytes || len(v) > maxIntegerBytes {
			return false
		}
		body, ok1 := new(big.Rat).SetString(string(raw))
		head, ok2 := new(big.Int).SetString(v, 10)
		return ok1 && ok2 && body.IsInt() && body.Num().Cmp(head) == 0
	}
	return false
}
