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
	linkSize := int64(5)
	r := RenderResult(&abi.Result{Content: []abi.Content{
		{Type: "text"},
		{Type: "image", Data: "AA==", MIMEType: "image/png"},
		{Type: "resource_link", URI: "docs://a", Name: "a", Title: "A", Description: "the a", MIMEType: "text/plain", Size: &linkSize},
		{Type: "resource", Resource: &abi.ResourceContents{URI: "docs://a", MIMEType: "text/plain"}},
		{Type: "resource", Resource: &abi.ResourceContents{URI: "docs://b", Blob: "AA=="}},
	}})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"content":[{"type":"text","text":""},{"type":"image","data":"AA==","mimeType":"image/png"},` +
		`{"type":"resource_link","mimeType":"text/plain","uri":"docs://a","name":"a","title":"A","description":"the a","size":5},` +
		`{"type":"resource","resource":{"uri":"docs://a","mimeType":"text/plain","text":""}},` +
		`{"type":"resource","resource":{"uri":"docs://b","blob":"AA=="}}]}`
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
