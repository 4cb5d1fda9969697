package resultcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNotCanonical marks arguments that have no canonical form a cache key
// may use: invalid JSON or UTF-8, a surrogate escape, a duplicate member,
// or nesting deeper than maxDepth. Such a call is not cached.
var ErrNotCanonical = errors.New("arguments have no canonical form")

// maxDepth bounds the nesting Canonical walks.
const maxDepth = 256

// Canonical returns the canonical form of the JSON text raw, in the
// manner of RFC 8785 (JSON Canonicalization Scheme): no insignificant
// whitespace, object members sorted by the UTF-16 code units of their
// names, strings in one escaping. Two spellings of one value — member
// order, whitespace, "1", "1.0", "10e-1" — have one form, and two
// different values never share one:
//
//   - Numbers are normalised as exact decimals, not rounded through
//     float64 as RFC 8785 does: 9007199254740993 and 9007199254740992 are
//     different arguments to a tool that reads them as text or integers,
//     and a cache must not answer one with the other's result. -0 stays
//     distinct from 0 for the same reason.
//   - Text whose decoding would lose information (invalid UTF-8, a
//     \uD800–\uDFFF escape, which Go decodes to U+FFFD) and objects with
//     a duplicate member (which a guest may read either way) have no
//     canonical form: ErrNotCanonical.
//
// An empty raw (no arguments) is the canonical "{}", as a tool sees it.
func Canonical(raw []byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}"), nil
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrNotCanonical)
	}
	if hasSurrogateEscape(raw) {
		return nil, fmt.Errorf("%w: surrogate escape", ErrNotCanonical)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	if err := canonicalValue(dec, &out, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: text after the value", ErrNotCanonical)
	}
	return out.Bytes(), nil
}

func hasSurrogateEscape(raw []byte) bool {
	for i := 0; i+5 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] == 'u' && (raw[i+2] == 'd' || raw[i+2] == 'D') && strings.ContainsRune("89abcdefABCDEF", rune(raw[i+3])) {
			return true
		}
		i++ // skip the escaped character, so "\\\\u" is not an escape
	}
	return false
}

func canonicalValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrNotCanonical, maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return canonicalObject(dec, out, depth)
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := canonicalValue(dec, out, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ]
				return fmt.Errorf("%w: %v", ErrNotCanonical, err)
			}
			out.WriteByte(']')
			return nil
		}
		return fmt.Errorf("%w: unexpected %v", ErrNotCanonical, v)
	case string:
		writeString(out, v)
	case json.Number:
		n, err := canonicalNumber(string(v))
		if err != nil {
			return err
		}
		out.WriteString(n)
	case bool:
		out.WriteString(map[bool]string{true: "true", false: "false"}[v])
	case nil:
		out.WriteString("null")
	}
	return nil
}

func canonicalObject(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	type member struct {
		name  string
		units []uint16
		value []byte
	}
	var members []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNotCanonical, err)
		}
		name, _ := tok.(string)
		if seen[name] {
			return fmt.Errorf("%w: duplicate member %q", ErrNotCanonical, name)
		}
		seen[name] = true
		var v bytes.Buffer
		if err := canonicalValue(dec, &v, depth+1); err != nil {
			return err
		}
		members = append(members, member{name, utf16.Encode([]rune(name)), v.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // }
		return fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.units, b.units) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.name)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

// writeString writes s as RFC 8785 does: only '"', '\\' and control
// characters escaped, the short escapes where JSON has them.
func writeString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			out.WriteByte('\\')
			out.WriteRune(r)
		case r == '\b':
			out.WriteString(`\b`)
		case r == '\f':
			out.WriteString(`\f`)
		case r == '\n':
			out.WriteString(`\n`)
		case r == '\r':
			out.WriteString(`\r`)
		case r == '\t':
			out.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(out, `\u%04x`, r)
		default:
			out.WriteRune(r)
		}
	}
	out.WriteByte('"')
}

// canonicalNumber writes the exact decimal value of the JSON number s as
// an integer when it is one of at most 21 digits, else as d.ddde±x with
// no trailing zeros. math/big parses the decimal exactly; the exponent is
// bounded by the argument size limit of the caller.
func canonicalNumber(s string) (string, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, ok := new(big.Int).SetString(strings.TrimPrefix(s[i+1:], "+"), 10)
		if !ok || !e.IsInt64() || e.Int64() > 1<<30 || e.Int64() < -(1<<30) {
			return "", fmt.Errorf("%w: number %q", ErrNotCanonical, s)
		}
		mant, exp = s[:i], int(e.Int64())
	}
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		exp -= len(mant) - i - 1
		mant = mant[:i] + mant[i+1:]
	}
	digits := strings.TrimLeft(mant, "0")
	if digits == "" {
		if neg {
			return "-0", nil
		}
		return "0", nil
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	// value = digits × 10^exp
	sign := ""
	if neg {
		sign = "-"
	}
	if exp >= 0 && len(digits)+exp <= 21 {
		return sign + digits + strings.Repeat("0", exp), nil
	}
	sci := exp + len(digits) - 1 // value = d.ddd × 10^sci
	frac := ""
	if len(digits) > 1 {
		frac = "." + digits[1:]
	}
	return fmt.Sprintf("%s%s%se%d", sign, digits[:1], frac, sci), nil
}
