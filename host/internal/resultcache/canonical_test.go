package resultcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestCanonicalSpellings(t *testing.T) {
	same := [][]string{
		{`{"b":1,"a":[true,null,"x"]}`, ` { "a" : [ true , null , "x" ] , "b" : 1.0 } `, `{"a":[true,null,"\u0078"],"b":10e-1}`},
		{`{"n":100}`, `{"n":1e2}`, `{"n":1.00E+2}`, `{"n":0.001e5}`},
		{`{"n":0.5}`, `{"n":5e-1}`, `{"n":0.50}`},
		{`{"s":"é\n"}`, `{"s":"\u00e9\u000a"}`},
		{``, `null`, `{}`, ` {} `},
	}
	for _, group := range same {
		want, err := Canonical([]byte(group[0]))
		if err != nil {
			t.Fatalf("%s: %v", group[0], err)
		}
		for _, s := range group[1:] {
			got, err := Canonical([]byte(s))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("Canonical(%s) = %s, %v; want %s (as %s)", s, got, err, want, group[0])
			}
		}
	}
	different := [][2]string{
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`},
		{`{"n":0}`, `{"n":-0}`},
		{`{"n":1}`, `{"n":"1"}`},
		{`{"a":{"b":1}}`, `{"a":{"b":[1]}}`},
		{`{"s":"a\"b"}`, `{"s":"a\\\\b"}`},
		{`{"n":1e400}`, `{"n":1e401}`},
	}
	for _, d := range different {
		a, errA := Canonical([]byte(d[0]))
		b, errB := Canonical([]byte(d[1]))
		if errA != nil || errB != nil || bytes.Equal(a, b) {
			t.Errorf("%s and %s: %s, %s (%v, %v); want two different forms", d[0], d[1], a, b, errA, errB)
		}
	}
	// Member order is by UTF-16 code units (RFC 8785): U+FB01 sorts after
	// U+1F600, whose first unit is a high surrogate 0xD83D.
	got, _ := Canonical([]byte(`{"ﬁ":1,"😀":2,"a":3}`))
	if want := `{"a":3,"😀":2,"ﬁ":1}`; string(got) != want {
		t.Errorf("order: %s, want %s", got, want)
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, s := range []string{
		`{"a":1,"a":2}`,        // duplicate member
		`{"s":"\ud83d\ude00"}`, // surrogate escapes: Go would decode lone ones to U+FFFD
		"{\"s\":\"\xff\"}",     // invalid UTF-8
		`{"a":1} {}`,
		`{"a":`,
		`{"n":1e99999999999}`,
		string(bytes.Repeat([]byte("["), maxDepth+2)) + string(bytes.Repeat([]byte("]"), maxDepth+2)),
	} {
		if got, err := Canonical([]byte(s)); !errors.Is(err, ErrNotCanonical) {
			t.Errorf("Canonical(%.40q) = %s, %v; want ErrNotCanonical", s, got, err)
		}
	}
}

// FuzzCanonical: a canonical form is valid JSON, canonical again
// unchanged, and equal to the canonical form of its re-encoding by
// encoding/json when the value survives float64.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x"],"b":{"c":null}}`, `{"n":1e-7}`, `[]`, `"s"`, `{"z":1,"y":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Canonical(raw)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("Canonical(%q) = %q, not JSON", raw, c)
		}
		again, err := Canonical(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("Canonical(%q) = %q, but Canonical of that = %q, %v", raw, c, again, err)
		}
	})
}
