package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestABIMarkdownCTool builds the complete C tool printed in abi/ABI.md and
// calls it through the host: the specification's own example works.
func TestABIMarkdownCTool(t *testing.T) {
	doc, err := os.ReadFile("../abi/ABI.md")
	if err != nil {
		t.Fatal(err)
	}
	src := codeBlock(t, string(doc), "## 10. ", "```c\n")
	if !strings.Contains(src, "int main(void)") {
		t.Fatalf("the C block of section 10 is not a program:\n%s", src)
	}
	needToolchain(t, exampleFor(t, "c"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "clang", "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-Wall", "-Werror",
		"-nodefaultlibs", "-o", filepath.Join(out, "hello.wasm"), "hello.c", "-lc")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, b)
	}

	c := serveModule(t, out, "hello.wasm")
	if got := c.toolSupport(); len(got) != 1 || got["hello"] != "forbidden" {
		t.Errorf("tools/list: got %v, want hello (forbidden)", got)
	}
	r := c.toolResult("hello", map[string]any{}, map[string]any{"progressToken": "hello"})
	if text(r) != "Hello from C!" || r["isError"] == true {
		t.Errorf("hello: got %v, want the text Hello from C!", r)
	}
	c.waitProgress("hello")
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
