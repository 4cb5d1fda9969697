package mcpwire

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

func TestCheckParamHeaders(t *testing.T) {
	params := []abi.HeaderParam{{Name: "Region", Path: []string{"region"}, Type: "string"},
		{Name: "N", Path: []string{"opts", "n"}, Type: "integer"}, {Name: "Dry", Path: []string{"dry"}, Type: "boolean"}}
	check := func(args string, hdr map[string]string) error {
		h := http.Header{}
		for k, v := range hdr {
			h.Set(k, v)
		}
		return CheckParamHeaders(params, json.RawMessage(args), h.Values)
	}
	ok := []struct {
		args string
		hdr  map[string]string
	}{
		{`{"region":"us-west1","opts":{"n":42},"dry":true}`, map[string]string{"Mcp-Param-Region": "us-west1", "Mcp-Param-N": "42", "Mcp-Param-Dry": "true"}},
		{`{"region":"Hello, 世界"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?="}},
		{`{"region":"SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "SGVsbG8="}}, // no wrapper: literal
		{`{"region":null,"opts":{}}`, nil}, // null and absent: no header expected
		{`{"opts":{"n":-7e0}}`, map[string]string{"Mcp-Param-N": "-7"}},
	}
	for _, c := range ok {
		if err := check(c.args, c.hdr); err != nil {
			t.Errorf("%s with %v: %v, want it to match", c.args, c.hdr, err)
		}
	}
	bad := []struct {
		args string
		hdr  map[string]string
	}{
		{`{"region":"eu"}`, nil}, // value in the body, no header
		{`{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "us"}},
		{`{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}},     // bad padding
		{`{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}}, // bad alphabet
		{`{}`, map[string]string{"Mcp-Param-Region": "eu"}},                                     // header without a value
		{`{"opts":{"n":42}}`, map[string]string{"Mcp-Param-N": "42.5"}},
		{`{"opts":{"n":"42"}}`, map[string]string{"Mcp-Param-N": "42"}}, // a string is not the integer
		{`{"dry":false}`, map[string]string{"Mcp-Param-Dry": "False"}},
		// Ambiguous arguments: a guest's decoder may read the other member.
		{`{"region":"eu","REGION":"us"}`, map[string]string{"Mcp-Param-Region": "eu"}},
		{`{"region":"eu","region":"us"}`, map[string]string{"Mcp-Param-Region": "eu"}},
		{`{"Region":"eu"}`, map[string]string{"Mcp-Param-Region": "eu"}},
		{`{"opts":{"n":1e1000000}}`, map[string]string{"Mcp-Param-N": "1"}}, // huge: refused, not computed
	}
	for _, c := range bad {
		if err := check(c.args, c.hdr); err == nil {
			t.Errorf("%s with %v: accepted, want a mismatch", c.args, c.hdr)
		}
	}
}
