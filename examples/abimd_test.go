package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// abiMD returns abi/ABI.md.
func abiMD(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../abi/ABI.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// TestABIMarkdownCTool builds the complete C tool printed in abi/ABI.md
// with the C command of ABI.md's build table and calls it through the host
// over MCP: the specification's own example and command work.
func TestABIMarkdownCTool(t *testing.T) {
	doc := abiMD(t)
	block := codeBlock(t, doc, "## 10. ", "```c\n")
	if !strings.Contains(block, "int main(void)") {
		t.Fatalf("the C block of section 10 is not a program:\n%s", block)
	}
	wasm := buildC(t, doc, []byte(block))

	s := serveMCP(t, serveModule(t, "hello.wasm", wasm))
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

// buildC builds the C source src with the C command of doc's build table,
// as a plugin author would, and returns the module.
func buildC(t *testing.T, doc string, src []byte) []byte {
	t.Helper()
	_, command := buildRow(t, doc, "C")
	needToolchain(t, exampleFor(t, "c"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool.c"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-euc", command)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ABI.md's C command %q: %v\n%s", command, err, out)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, "tool.wasm"))
	if err != nil {
		t.Fatalf("ABI.md's C command %q wrote no tool.wasm: %v", command, err)
	}
	return wasm
}

// TestABIMarkdownBuildCommands checks that what ABI.md's build table says
// is what CI does: build.sh, which builds the Rust and AssemblyScript
// examples for the tests, runs those languages' commands verbatim, and
// .ci/run installs every Debian package the table names for C and Rust.
// (The C command is run by TestABIMarkdownCTool.)
func TestABIMarkdownBuildCommands(t *testing.T) {
	doc := abiMD(t)
	buildSh, err := os.ReadFile("build.sh")
	if err != nil {
		t.Fatal(err)
	}
	ciRun, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	// .ci/run collects what apt-get installs in lines pkgs+=(…).
	installed := map[string]bool{}
	for _, m := range regexp.MustCompile(`pkgs\+=\(([^)]*)\)`).FindAllSubmatch(ciRun, -1) {
		for _, p := range strings.Fields(string(m[1])) {
			installed[p] = true
		}
	}
	for _, lang := range []string{"C", "Rust", "AssemblyScript"} {
		packages, command := buildRow(t, doc, lang)
		if lang != "C" && !strings.Contains(string(buildSh), command) {
			t.Errorf("ABI.md's %s command %q is not what examples/build.sh runs", lang, command)
		}
		if lang == "AssemblyScript" {
			continue // Node comes with the machine, like the interop tests'; npm ci installs the rest
		}
		if len(packages) == 0 {
			t.Errorf("ABI.md's %s row names no Debian package", lang)
		}
		for _, p := range packages {
			if !installed[p] {
				t.Errorf("ABI.md names the Debian package %s for %s, which .ci/run does not install", p, lang)
			}
		}
	}
}

// buildRow returns the Debian packages (the words of the first code span
// of the second cell) and the build command (the first code span of the
// third cell) of lang's row in ABI.md's build table.
func buildRow(t *testing.T, doc, lang string) (packages []string, command string) {
	t.Helper()
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 3 || cells[0] != "| "+lang {
			continue
		}
		if p := codeSpan(cells[1]); p != "" {
			packages = strings.Fields(p)
		}
		if command = codeSpan(cells[2]); command == "" {
			t.Fatalf("ABI.md's build table: the %s row has no command: %s", lang, line)
		}
		return packages, command
	}
	t.Fatalf("ABI.md's build table has no %s row", lang)
	return nil, ""
}

// codeSpan returns the text of the first `code span` in s, or "".
func codeSpan(s string) string {
	_, rest, ok := strings.Cut(s, "`")
	if !ok {
		return ""
	}
	span, _, _ := strings.Cut(rest, "`")
	return span
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

// TestABIMarkdownRustTool builds section 10's new Rust crate from ABI.md's
// text — its commands, its release profile, its main.rs — with Debian's
// toolchain named by path (a rustup cargo may come first on PATH, as on
// a developer's machine), and calls the tool through the host.
func TestABIMarkdownRustTool(t *testing.T) {
	needToolchain(t, exampleFor(t, "rust"))
	doc := abiMD(t)
	const heading = "The same tool as a new Rust crate"
	script := codeBlock(t, doc, heading, "```sh\n")
	profile := codeBlock(t, doc, heading, "```toml\n")
	mainRS := codeBlock(t, doc, heading, "```rust\n")
	var commands []string
	for _, line := range strings.Split(script, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			commands = append(commands, line)
		}
	}
	if len(commands) != 2 || !strings.Contains(commands[0], "cargo new") || !strings.Contains(commands[1], "cargo build") {
		t.Fatalf("ABI.md's Rust commands %q: want a cargo new, then a cargo build", commands)
	}
	dir := t.TempDir()
	run := func(dir, command string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", command)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ABI.md's %q: %v\n%s", command, err, out)
		}
	}
	run(dir, commands[0])
	crate := filepath.Join(dir, "hello")
	if err := os.WriteFile(filepath.Join(crate, "src", "main.rs"), []byte(mainRS), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(crate, "Cargo.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("\n" + profile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	run(crate, commands[1])
	wasm, err := os.ReadFile(filepath.Join(crate, "target", "wasm32-wasi", "release", "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(wasm) > 1<<20 {
		t.Errorf("the hello tool is %d bytes: the release profile does not strip the standard library's debug info", len(wasm))
	}
	s := serveMCP(t, serveModule(t, "hello.wasm", wasm))
	r := s.callTool("hello", map[string]any{}, "hello")
	if r.Text() != "Hello from Rust!" || r.IsError {
		t.Errorf("hello: got %+v, want the text Hello from Rust!", r)
	}
}
