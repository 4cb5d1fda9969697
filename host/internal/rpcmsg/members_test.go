package rpcmsg

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestMembers: an object's members by their exact names; a repeated name,
// a value that is not an object, and a name check refuses are errors.
func TestMembers(t *testing.T) {
	onlyA := func(name string) error {
		if name != "a" {
			return errors.New("member " + name)
		}
		return nil
	}
	for _, tc := range []struct {
		raw   string
		check func(string) error
		want  string // the value of "a", or the error's text
	}{
		{`{"a":1,"b":[2]}`, nil, "1"},
		{`{"a":{"x":"y"}}`, onlyA, `{"x":"y"}`},
		{`{"a":1,"a":2}`, nil, `member "a" appears twice`},
		{`{"a":1,"b":2}`, onlyA, "member b"},
		{`[{"a":1}]`, nil, ErrNotObject.Error()},
		{`"a"`, nil, ErrNotObject.Error()},
		{`{"a":`, nil, ErrNotObject.Error()},
	} {
		got, err := Members(json.RawMessage(tc.raw), tc.check)
		switch {
		case err != nil && err.Error() != tc.want:
			t.Errorf("Members(%s): %v, want %s", tc.raw, err, tc.want)
		case err == nil && strings.TrimSpace(string(got["a"])) != tc.want:
			t.Errorf("Members(%s)[a] = %s, want %s", tc.raw, got["a"], tc.want)
		}
	}
}
