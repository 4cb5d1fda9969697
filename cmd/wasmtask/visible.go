package main

import (
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"
)

// visibleWriter writes what a guest may have written (a tool's title,
// description and schema, its progress, status and log messages, its
// result, errors quoting its output) so that an operator's terminal shows
// it and does not obey it: control characters (C0 but newline and tab,
// DEL, C1), Unicode format characters (bidirectional overrides, invisible
// marks) and bytes that are not UTF-8 are written as escapes (see
// visible).
//
// runInspect and runCall wrap their streams in one; only the progress
// bar's own terminal codes go to the raw stream (progressBar.raw). serve
// logs through log/slog's text handler, which quotes such values.
type visibleWriter struct{ w io.Writer }

func (v visibleWriter) Write(p []byte) (int, error) {
	if clean(p) {
		return v.w.Write(p)
	}
	if _, err := v.w.Write(visible(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// clean reports whether p needs no escape (the common case: no copy).
func clean(p []byte) bool {
	for _, c := range p {
		if c >= utf8.RuneSelf || c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// visible returns p with every character an operator's terminal could
// obey replaced by an escape: \u001b, \u202e (valid in a JSON string
// too), or \xff for a byte that is not UTF-8 (which encoding/json never
// writes).
func visible(p []byte) []byte {
	out := make([]byte, 0, len(p)+16)
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && n == 1:
			out = fmt.Appendf(out, `\x%02x`, p[0])
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case r < 0x20, r >= 0x7f && r <= 0x9f, unicode.Is(unicode.Cf, r) && r != '\u200d':
			// C0 and C1 controls, DEL, and format characters:
			// bidirectional overrides and isolates, zero-width spaces
			// and marks. The zero-width joiner stays: emoji sequences
			// need it.
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[:n]...)
		}
		p = p[n:]
	}
	return out
}
