package strictjson

import (
	"strings"
	"testing"
)

type doc struct {
	Name  string            `json:"name"`
	Limit int               `json:"limitMiB"`
	Items []item            `json:"items"`
	ByKey map[string]item   `json:"byKey"`
	Extra map[string]string `json:"extra"`
}

type item struct {
	MaxMiB int `json:"maxMiB"`
}

// TestDecode: what Decode takes, and what it refuses, with where and why.
func TestDecode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name":"a","limitMiB":1,"items":[{"maxMiB":2}],"byKey":{"Any":{"maxMiB":3}},"extra":{"K":"v"}}`, ""},
		{`{"LimitMiB":1}`, `line 1, column 2: unknown field "LimitMiB" in the document (did you mean "limitMiB"?)`},
		{"{\"items\":[\n{\"maxMib\":2}]}", `line 2, column 2: unknown field "maxMib" in "items[0]" (did you mean "maxMiB"?)`},
		{`{"byKey":{"a":{"MAXMIB":1}}}`, `unknown field "MAXMIB" in "byKey.a"`},
		{`{"nope":1}`, `line 1, column 2: unknown field "nope"`},
		{`{"limitMiB":"x"}`, `"limitMiB" must be an integer, not a string`},
		{`{"limitMiB":1.5}`, `"limitMiB" must be an integer, not a number`},
		{`{"name":1} {}`, `"name" must be a string, not a number`},
		{`{} {}`, "trailing data"},
		{`{"name":`, "the document ends before its value does"},
	} {
		var d doc
		err := Decode([]byte(tc.in), nil, &d)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Decode(%s): %v", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Decode(%s): %v, want %q", tc.in, err, tc.want)
		}
	}
}
