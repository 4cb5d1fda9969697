package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// hostileResult is one result a module writes, for hostile.mjs.
type hostileResult struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`      // the result echo_result writes
	Want      string         `json:"want"`           // "ok" or "toolError"
	Tool      string         `json:"tool,omitempty"` // default echo_result
}

// hostileResults are results a module may write; each either reaches the
// client as written or becomes a tool error, and the TypeScript client
// must accept whatever the server sends.
func hostileResults() []hostileResult {
	text := func(blocks ...map[string]any) map[string]any {
		c := make([]any, len(blocks))
		for i, b := range blocks {
			c[i] = b
		}
		return map[string]any{"content": c}
	}
	block := func(kv ...string) map[string]any {
		b := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			b[kv[i]] = kv[i+1]
		}
		return b
	}
	structured := func(name string, result map[string]any, want string) hostileResult {
		return hostileResult{Name: name, Tool: "echo_structured", Arguments: result, Want: want}
	}
	return []hostileResult{
		{"plain text", text(block("type", "text", "text", "hi")), "ok", ""},
		{"empty text", text(block("type", "text", "text", "")), "ok", ""},
		{"text member missing", text(block("type", "text")), "ok", ""},
		{"no content blocks", map[string]any{"content": []any{}}, "ok", ""},
		{"valid png", text(block("type", "image", "data", "iVBORw0KGgo=", "mimeType", "image/png")), "ok", ""},
		{"image bad base64", text(block("type", "image", "data", "%%%", "mimeType", "image/png")), "toolError", ""},
		{"image without mimeType", text(block("type", "image", "data", "AA==")), "toolError", ""},
		{"image mimeType not a string", map[string]any{"content": []any{map[string]any{"type": "image", "data": "AA==", "mimeType": 7}}}, "toolError", ""},
		{"audio declared as image", text(block("type", "audio", "data", "AA==", "mimeType", "image/png")), "toolError", ""},
		{"png declared as jpeg", text(block("type", "image", "data", "iVBORw0KGgo=", "mimeType", "image/jpeg")), "toolError", ""},
		{"unknown block type", text(block("type", "video", "data", "AA==")), "toolError", ""},
		{"text not a string", map[string]any{"content": []any{map[string]any{"type": "text", "text": 5}}}, "toolError", ""},
		{"content not an array", map[string]any{"content": "hello"}, "toolError", ""},
		{"content missing", map[string]any{"isError": false}, "toolError", ""},
		{"isError not boolean", map[string]any{"content": []any{}, "isError": "yes"}, "toolError", ""},
		{"structuredContent array", map[string]any{"content": []any{}, "structuredContent": []any{1}}, "toolError", ""},
		{"structuredContent string", map[string]any{"content": []any{}, "structuredContent": "x"}, "toolError", ""},
		{"nested too deep", map[string]any{"deep": 200}, "toolError", ""},
		{"control characters in text", text(block("type", "text", "text", "a\x00b\x1b[31mc")), "ok", ""},
		{"long text", text(block("type", "text", "text", strings.Repeat("x", 100_000))), "ok", ""},
		// The client checks structuredContent against the outputSchema it
		// listed, and requires it unless isError.
		structured("structured as declared", map[string]any{"content": []any{}, "structuredContent": map[string]any{"n": 1}}, "ok"),
		structured("structured missing", map[string]any{"content": []any{}}, "toolError"),
		structured("structured of the wrong type", map[string]any{"content": []any{}, "structuredContent": map[string]any{"n": "one"}}, "toolError"),
		structured("structured without a required member", map[string]any{"content": []any{}, "structuredContent": map[string]any{}}, "toolError"),
		structured("tool error without structured", map[string]any{"content": []any{map[string]any{"type": "text", "text": "failed"}}, "isError": true}, "toolError"),
	}
}

// TestInteropHostileResults runs hostile.mjs: the official TypeScript SDK
// client calls a module that writes each of hostileResults, over stdio and
// Streamable HTTP.
func TestInteropHostileResults(t *testing.T) {
	node, dir := interopNode(t)
	bin := hosttest.BuildWasmtask(t, "..", nil)
	tools := t.TempDir()
	// badlist's schemas would fail the client's tools/list: the server
	// must refuse the module (the script checks that tools/list passes).
	for _, m := range []string{"echoresult", "badlist"} {
		wasm := hosttest.Wasm(t, filepath.Join("testdata", "hostile", m+".c"))
		if err := os.WriteFile(filepath.Join(tools, m+".wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases, err := json.Marshal(hostileResults())
	if err != nil {
		t.Fatal(err)
	}
	casesFile := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(casesFile, cases, 0o644); err != nil {
		t.Fatal(err)
	}
	n := len(hostileResults()) + 2
	t.Run("stdio", func(t *testing.T) {
		runInteropScript(t, node, dir, n, "hostile.mjs", casesFile, "stdio", bin, "--tools", tools, "--cache-dir", "")
	})
	t.Run("http", func(t *testing.T) {
		url := startHTTPServe(t, bin, "--tools", tools, "--cache-dir", "")
		runInteropScript(t, node, dir, n, "hostile.mjs", casesFile, "http", url)
	})
}
