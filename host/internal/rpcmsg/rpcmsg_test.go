package rpcmsg_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/wasmtask/wasmtask/host/internal/rpcmsg"
)

var seeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":"a","method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
	`{"jsonrpc":"2.0","id":null,"method":"m","params":null}`,
	`{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no","data":[1]}}`,
	`{"jsonrpc":"2.0","id":7,"error":null,"result":{}}`,
	`{"JSONRPC":"2.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","ID":1,"Method":"m"}`,
	`{"jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":true,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"m"}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`{"jsonrpc":"2.0","id":1,"error":{"Code":5,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1.5}}`,
	`[]`, `"s"`, `null`, `{}`,
}

// TestDecodeAsGoSDK: every seed decodes as go-sdk's decoder reads it.
func TestDecodeAsGoSDK(t *testing.T) {
	for _, s := range seeds {
		same(t, []byte(s))
	}
}

// FuzzDecode: on any input that is one JSON value, Decode agrees with
// go-sdk's decoder on whether it is a message and on what it says.
func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { same(t, data) })
}

func same(t *testing.T, data []byte) {
	t.Helper()
	if !json.Valid(data) {
		return // the transports refuse those before decoding
	}
	if bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) > 900 {
		return // both bound nesting at 1000 (TestDecodeRefuses), counted alike only away from the bound
	}
	want, werr := jsonrpc.DecodeMessage(data)
	got, gerr := rpcmsg.Decode(data)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s: go-sdk says %v, Decode says %v", data, werr, gerr)
	}
	if werr != nil {
		return
	}
	switch w := want.(type) {
	case *jsonrpc.Request:
		g, ok := got.(*jsonrpc.Request)
		if !ok || g.ID != w.ID || g.Method != w.Method || !bytes.Equal(g.Params, w.Params) {
			t.Fatalf("%s: got %#v, want %#v", data, got, want)
		}
	case *jsonrpc.Response:
		g, ok := got.(*jsonrpc.Response)
		if !ok || g.ID != w.ID || !bytes.Equal(g.Result, w.Result) || (g.Error == nil) != (w.Error == nil) {
			t.Fatalf("%s: got %#v, want %#v", data, got, want)
		}
		if w.Error != nil {
			we, ge := w.Error.(*jsonrpc.Error), g.Error.(*jsonrpc.Error)
			if we.Code != ge.Code || we.Message != ge.Message || !bytes.Equal(we.Data, ge.Data) {
				t.Fatalf("%s: error %#v, want %#v", data, ge, we)
			}
		}
	}
}

// TestDecodeRefuses: what Decode refuses, worded without Go's terms: the
// nesting bound go-sdk's decoder has, a version that is not the string
// "2.0", an id that is neither a string nor a number.
func TestDecodeRefuses(t *testing.T) {
	deep := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`
	for _, tc := range []struct{ in, want string }{
		{deep, "nested more than 1000 levels deep"},
		{`{"jsonrpc":"1.0","id":1,"method":"m"}`, `invalid message version tag "1.0"; expected "2.0"`},
		{`{"jsonrpc":2,"id":1,"method":"m"}`, `invalid message version tag 2; expected "2.0"`},
		{`{"id":1,"method":"m"}`, `invalid message version tag (none); expected "2.0"`},
		{`{"jsonrpc":"2.0","id":1e400,"method":"m"}`, "the id must be a string or a number"},
		{`{"jsonrpc":"2.0","id":{},"method":"m"}`, "the id must be a string or a number"},
	} {
		if _, err := rpcmsg.Decode([]byte(tc.in)); err == nil || err.Error() != tc.want {
			t.Errorf("Decode(%.60s): %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := jsonrpc.DecodeMessage([]byte(deep)); err == nil {
		t.Error("go-sdk's decoder took the deep message: the bound is no longer the same")
	}
	ok := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", 999) + `"[{\""` + strings.Repeat("]", 999) + `}`
	if _, err := rpcmsg.Decode([]byte(ok)); err != nil {
		t.Errorf("Decode at 1000 levels, brackets in a string: %v", err)
	}
}
