package mcpwire

import (
	"encoding/json"
	"testing"

	"github.com/wasmtask/wasmtask/abi"
)

// TestRenderedContentHasItsMembers checks the wire form of content blocks:
// a text block keeps "text" even when empty (MCP clients require it), and
// no block carries the members of another type.
func TestRenderedContentHasItsMembers(t *testing.T) {
	r := RenderResult(&abi.Result{Content: []abi.Content{
		{Type: "text"},
		{Type: "image", Data: "AA==", MIMEType: "image/png"},
	}})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"content":[{"type":"text","text":""},{"type":"image","data":"AA==","mimeType":"image/png"}]}`
	if string(b) != want {
		t.Errorf("rendered\n%s\nwant\n%s", b, want)
	}
	b, err = json.Marshal(RenderResult(&abi.Result{}))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"content":[]}` {
		t.Errorf("no content rendered as %s, want an empty array", b)
	}
}
