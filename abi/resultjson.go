package abi

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// This file reads a result document once, before it is decoded: it
// checks that the bytes are one JSON value, bounds what decoding them can
// cost (nesting, values, content blocks), refuses numbers no client can
// read, and rewrites the strings that are not valid Unicode. What leaves
// it is JSON every MCP client reads the same way.

// ResultLimits bound a result document by counts, beside its bytes (which
// the host bounds while the module writes them), for [DecodeResult]. A
// zero field means its default. Content blocks are counted as the items of
// the arrays that are members of the result object.
type ResultLimits struct {
	// MaxBlocks bounds the content blocks. Default [DefaultResultBlocks].
	MaxBlocks int
	// MaxDepth bounds the nesting of objects and arrays, the result
	// object being level 1. Default [DefaultResultDepth], at most
	// [MaxResultDepth].
	MaxDepth int
	// MaxValues bounds the JSON values of the document: every object
	// member and array item (and the result object itself). Default
	// [DefaultResultValues].
	MaxValues int
}

// Defaults of [ResultLimits].
const (
	DefaultResultBlocks = 10_000
	DefaultResultDepth  = 64
	DefaultResultValues = 100_000
)

// ErrResultTooLarge is wrapped, beside [ErrResult], by the error of a
// result with more content blocks or values than its limits allow. It is
// a constant: a guest module that links this package carries no code to
// initialise it (the checked-in modules stay as they are built).
const ErrResultTooLarge = sentinelError("abi: result over its limits")

// sentinelError is an error that needs no initialisation.
type sentinelError string

func (e sentinelError) Error() string { return string(e) }

// orDefaults returns l with its zero fields set to their defaults and the
// depth capped at MaxResultDepth.
func (l ResultLimits) orDefaults() ResultLimits {
	if l.MaxBlocks <= 0 {
		l.MaxBlocks = DefaultResultBlocks
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultResultDepth
	}
	l.MaxDepth = min(l.MaxDepth, MaxResultDepth)
	if l.MaxValues <= 0 {
		l.MaxValues = DefaultResultValues
	}
	return l
}

// limitError is a result over one of its count limits.
type limitError string

func (e limitError) Error() string { return ErrResult.Error() + ": " + string(e) }

func (e limitError) Is(target error) bool { return target == ErrResult || target == ErrResultTooLarge }

// cleanResult checks that b is exactly one JSON value (surrounding white
// space allowed) within lim, with every number finite as a float64, and
// returns it with each string that holds a lone UTF-16 surrogate escape or
// bytes that are not UTF-8 rewritten, each of those replaced by U+FFFD
// (as encoding/json decodes them). It returns b itself when nothing needs
// rewriting. Content blocks are the items of the arrays that are members
// of the top-level object ("content"). One pass, recursion bounded by
// lim.MaxDepth; it allocates only to rewrite.
func cleanResult(b []byte, lim ResultLimits) ([]byte, error) {
	s := resultScanner{b: b, lim: lim.orDefaults()}
	s.space()
	err := s.value(1)
	if s.space(); err == nil && s.i < len(b) {
		err = errors.New("trailing data after the JSON value")
	}
	var le limitError
	if errors.As(err, &le) {
		return nil, le
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrResult, err)
	}
	if s.out == nil {
		return b, nil
	}
	return append(s.out, b[s.copied:]...), nil
}

type resultScanner struct {
	b      []byte
	i      int // next byte to read
	lim    ResultLimits
	values int
	blocks int
	out    []byte // the rewritten document so far; nil while nothing is rewritten
	copied int    // b[:copied] is in out
}

func (s *resultScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// syntax is the error at the current byte.
func (s *resultScanner) syntax() error {
	if s.i >= len(s.b) {
		return errors.New("the JSON document is incomplete")
	}
	return fmt.Errorf("not valid JSON at byte %d", s.i+1)
}

// value reads one value whose containers are level levels deep (the
// top-level value's are level 1).
func (s *resultScanner) value(level int) error {
	s.values++
	if s.values > s.lim.MaxValues {
		return limitError(fmt.Sprintf("more than %d JSON values, the limit for this tool", s.lim.MaxValues))
	}
	if s.i >= len(s.b) {
		return s.syntax()
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		if level > s.lim.MaxDepth {
			return fmt.Errorf("JSON nested deeper than %d levels", s.lim.MaxDepth)
		}
		return s.container(level)
	case c == '"':
		return s.str()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.syntax()
}

// container reads an object or an array at level.
func (s *resultScanner) container(level int) error {
	object := s.b[s.i] == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		return nil
	}
	for {
		if object {
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return s.syntax()
			}
			if err := s.str(); err != nil {
				return err
			}
			s.space()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return s.syntax()
			}
			s.i++
			s.space()
		} else if level == 2 {
			// An item of an array that is a member of the result
			// object: a content block.
			s.blocks++
			if s.blocks > s.lim.MaxBlocks {
				return limitError(fmt.Sprintf("more than %d content blocks, the limit for this tool", s.lim.MaxBlocks))
			}
		}
		if err := s.value(level + 1); err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.b) {
			return s.syntax()
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.space()
		case end:
			s.i++
			return nil
		default:
			return s.syntax()
		}
	}
}

func (s *resultScanner) literal(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		for k := 0; k < len(word) && s.i < len(s.b) && s.b[s.i] == word[k]; k++ {
			s.i++
		}
		return s.syntax()
	}
	s.i += len(word)
	return nil
}

// number reads a number (JSON's grammar) and refuses one whose magnitude
// a float64 cannot hold: clients read numbers as doubles, and each would
// read it as something else (Infinity, an error, a rounded copy).
func (s *resultScanner) number() error {
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return s.syntax()
	}
	simple := true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.syntax()
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		simple = false
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.syntax()
		}
	}
	text := s.b[start:s.i]
	if simple && len(text) <= 300 {
		return nil // under 1e300 without an exponent
	}
	if f, err := strconv.ParseFloat(string(text), 64); err != nil && math.IsInf(f, 0) {
		return fmt.Errorf("the number %s is outside the range of a 64-bit float", quoteNumber(text))
	}
	return nil
}

// quoteNumber is text for an error message, shortened when long.
func quoteNumber(text []byte) string {
	if len(text) > 24 {
		return fmt.Sprintf("%s… (%d characters)", text[:16], len(text))
	}
	return string(text)
}

// str reads a string. One that holds a lone surrogate escape (\ud800
// without a low surrogate after it, or a low one alone) or bytes that are
// not UTF-8 is written to out with each replaced by \ufffd.
func (s *resultScanner) str() error {
	start := s.i
	s.i++ // the opening quote
	dirty := false
	for {
		if s.i >= len(s.b) {
			return s.syntax()
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if dirty {
				s.rewrite(start, s.i)
			}
			return nil
		case c < 0x20:
			return s.syntax()
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.i++
				return s.syntax()
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				r, ok := hex4(s.b, s.i+2)
				if !ok {
					s.i += 2
					return s.syntax()
				}
				s.i += 6
				switch {
				case r >= 0xD800 && r < 0xDC00:
					if lowSurrogate(s.b, s.i) {
						s.i += 6 // a pair
					} else {
						dirty = true
					}
				case r >= 0xDC00 && r < 0xE000:
					dirty = true
				}
			default:
				s.i++
				return s.syntax()
			}
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 {
				dirty = true
			}
			s.i += n
		}
	}
}

// hex4 reads the four hex digits of a \u escape at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if len(b)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// lowSurrogate reports whether b[i:] starts with the \u escape of a low
// surrogate.
func lowSurrogate(b []byte, i int) bool {
	if len(b)-i < 6 || b[i] != '\\' || b[i+1] != 'u' {
		return false
	}
	r, ok := hex4(b, i+2)
	return ok && r >= 0xDC00 && r < 0xE000
}

// rewrite writes the string b[start:end], a valid JSON string but for
// lone surrogates and bytes that are not UTF-8, to out with each of those
// replaced by \ufffd.
func (s *resultScanner) rewrite(start, end int) {
	if s.out == nil {
		s.out = make([]byte, 0, len(s.b)+16)
	}
	s.out = append(s.out, s.b[s.copied:start]...)
	const replacement = `\ufffd`
	for i := start; i < end; {
		c := s.b[i]
		switch {
		case c == '\\' && s.b[i+1] == 'u':
			r, _ := hex4(s.b, i+2)
			switch {
			case r >= 0xD800 && r < 0xDC00:
				if lowSurrogate(s.b, i+6) {
					s.out = append(s.out, s.b[i:i+12]...)
					i += 12
					continue
				}
				s.out = append(s.out, replacement...)
			case r >= 0xDC00 && r < 0xE000:
				s.out = append(s.out, replacement...)
			default:
				s.out = append(s.out, s.b[i:i+6]...)
			}
			i += 6
		case c == '\\':
			s.out = append(s.out, s.b[i:i+2]...)
			i += 2
		case c < utf8.RuneSelf:
			s.out = append(s.out, c)
			i++
		default:
			r, n := utf8.DecodeRune(s.b[i:end])
			if r == utf8.RuneError && n == 1 {
				s.out = append(s.out, replacement...)
			} else {
				s.out = append(s.out, s.b[i:i+n]...)
			}
			i += n
		}
	}
	s.copied = end
}
