package examples_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// TestABIMarkdownCTool builds the complete C tool printed in abi/ABI.md and
// calls it through the host over MCP: the specification's own example
// works.
func TestABIMarkdownCTool(t *testing.T) {
	doc, err := os.ReadFile("../abi/ABI.md")
	if err != nil {
		t.Fatal(err)
	}
	block := codeBlock(t, string(doc), "## 10. ", "```c\n")
	if !strings.Contains(block, "int main(void)") {
		t.Fatalf("the C block of section 10 is not a program:\n%s", block)
	}
	src := filepath.Join(t.TempDir(), "hello.c")
	if err := os.WriteFile(src, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}

	s := serveMCP(t, serveModule(t, "hello.wasm", hosttest.Wasm(t, src)))
	if got := s.toolSupport(); len(got) != 1 || got["hello"] != "forbidden" {
		t.Errorf("tools/list: got %v, want hello (forbidden)", got)
	}
	r := s.callTool("hello", map[string]any{}, "hello")
	if r.Text() != "Hello from C!" || r.IsError {
		t.Errorf("hello: got %+v, want the text Hello from C!", r)
	}
	if len(s.progress("hello")) == 0 {
		t.Error("hello: no progress notification")
	}
}

// codeBlock returns the first fenced block opening with fence after the
// heading in doc.
func codeBlock(t *testing.T, doc, heading, fence string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, heading)
	if !ok {
		t.Fatalf("no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, fence)
	if !ok {
		t.Fatalf("no %q block after %q", strings.TrimSpace(fence), heading)
	}
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("unterminated block after %q", heading)
	}
	return block
}
