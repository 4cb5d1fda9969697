package abi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanResult(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want "": in unchanged
	}{
		{"clean", `{"a":"b\u00e9\ud83d\ude00","c":[1,-2.5e3,true,null]}`, ""},
		{"lone high", `{"a":"x\ud800y"}`, `{"a":"x\ufffdy"}`},
		{"lone low", `{"a":"\udc00"}`, `{"a":"\ufffd"}`},
		{"high at end", `{"a":"\uD800"}`, `{"a":"\ufffd"}`},
		{"high, high, low", `{"a":"\ud800\ud800\udc00"}`, `{"a":"\ufffd\ud800\udc00"}`},
		{"high then escape", `{"a":"\ud800\n"}`, `{"a":"\ufffd\n"}`},
		{"in a key", `{"k\udfff":1}`, `{"k\ufffd":1}`},
		{"invalid bytes", "{\"a\":\"x\xff\xfey\"}", `{"a":"x\ufffd\ufffdy"}`},
		{"encoded surrogate", "{\"a\":\"\xed\xa0\x80\"}", `{"a":"\ufffd\ufffd\ufffd"}`},
		{"truncated rune", "{\"a\":\"\xe2\x82\"}", `{"a":"\ufffd\ufffd"}`},
		{"two strings, one dirty", `{"a":"ok","b":"\ud800","c":"ok"}`, `{"a":"ok","b":"\ufffd","c":"ok"}`},
		{"number at the float64 maximum", `{"n":1.7976931348623157e308}`, ""},
		{"long number below the maximum", `{"n":` + strings.Repeat("9", 308) + `}`, ""},
		{"underflow is zero", `{"n":1e-400}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cleanResult([]byte(tc.in), ResultLimits{})
			if err != nil {
				t.Fatalf("cleanResult: %v", err)
			}
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want {
				t.Errorf("cleanResult(%q) = %q, want %q", tc.in, got, want)
			}
			if !utf8.Valid(got) {
				t.Errorf("output %q is not UTF-8", got)
			}
		})
	}
	for _, tc := range []struct {
		name, in string
		lim      ResultLimits
		want     string
		tooLarge bool
	}{
		{"infinite number", `{"n":1e400}`, ResultLimits{}, "the number 1e400 is outside the range of a 64-bit float", false},
		{"negative infinite", `{"n":[-1E+309]}`, ResultLimits{}, "-1E+309 is outside", false},
		{"too many digits", `{"n":` + strings.Repeat("9", 309) + `}`, ResultLimits{}, "(309 characters) is outside", false},
		{"too deep", strings.Repeat("[", 65) + strings.Repeat("]", 65), ResultLimits{}, "nested deeper than 64 levels", false},
		{"deep within a raised limit", strings.Repeat("[", 65) + strings.Repeat("]", 64), ResultLimits{MaxDepth: 100}, "incomplete", false},
		{"depth capped", strings.Repeat("[", 129) + strings.Repeat("]", 129), ResultLimits{MaxDepth: 1000}, "nested deeper than 128 levels", false},
		{"blocks", `{"content":[{},{},{}]}`, ResultLimits{MaxBlocks: 2}, "more than 2 content blocks", true},
		{"values", `{"a":[1,2],"b":{"c":3}}`, ResultLimits{MaxValues: 5}, "more than 5 JSON values", true},
		{"syntax", `{"a":tru}`, ResultLimits{}, "not valid JSON at byte 9", false},
		{"control character", "{\"a\":\"\x01\"}", ResultLimits{}, "not valid JSON at byte 7", false},
		{"bad escape", `{"a":"\x"}`, ResultLimits{}, "not valid JSON", false},
		{"short unicode escape", `{"a":"\u12"}`, ResultLimits{}, "not valid JSON", false},
		{"leading zero", `{"a":01}`, ResultLimits{}, "not valid JSON", false},
		{"incomplete", `{"a":[1,`, ResultLimits{}, "incomplete", false},
		{"trailing", `{} {}`, ResultLimits{}, "trailing data", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cleanResult([]byte(tc.in), tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("cleanResult(%.60s) = %v, want an error containing %q", tc.in, err, tc.want)
			}
			if got := errors.Is(err, ErrResultTooLarge); got != tc.tooLarge {
				t.Errorf("errors.Is(%v, ErrResultTooLarge) = %v, want %v", err, got, tc.tooLarge)
			}
		})
	}
}

// FuzzCleanResult holds cleanResult to encoding/json: it accepts only
// JSON, refuses JSON only for a limit or a number beyond float64, and what
// it returns is valid UTF-8 JSON that decodes to what the input decodes to
// (encoding/json replaces bad Unicode with U+FFFD as it does) and needs
// no second cleaning.
func FuzzCleanResult(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":[1,2.5e-3,true,null]}}`,
		`{"a":"\ud800"}`, `{"\udc00x":"\ud83d\ude00"}`, `{"a":"\ud800\ud800\udc00\u0041"}`,
		"{\"a\":\"\xff\xc3\"}", "{\"a\":\"\xed\xa0\x80\"}",
		`{"n":1e400}`, `{"n":-0.0e-999}`, `{"n":` + strings.Repeat("1", 320) + `}`, `[1E308,2e308]`,
		strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70),
		strings.Repeat(`[`, 129), `{"content":[` + strings.Repeat(`{},`, 20) + `{}]}`,
		`{"a":tru}`, `{} x`, `"\u12"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := ResultLimits{MaxBlocks: 16, MaxValues: 256}
		out, err := cleanResult(b, lim)
		valid := json.Valid(b)
		if err != nil {
			if valid && !isLimitOrRange(err) {
				t.Fatalf("cleanResult refused valid JSON %q: %v", b, err)
			}
			return
		}
		if !valid {
			t.Fatalf("cleanResult accepted %q, which is not JSON", b)
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("cleanResult(%q) = %q: not valid UTF-8 JSON", b, out)
		}
		again, err := cleanResult(out, lim)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("cleaning %q again gave %q, %v", out, again, err)
		}
		var want, got any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("encoding/json cannot decode %q: %v", b, err)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("encoding/json cannot decode the output %q: %v", out, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("cleanResult(%q) = %q decodes to %v, want %v", b, out, got, want)
		}
	})
}

func isLimitOrRange(err error) bool {
	msg := err.Error()
	return errors.Is(err, ErrResultTooLarge) || strings.Contains(msg, "nested deeper") || strings.Contains(msg, "range of a 64-bit float")
}
