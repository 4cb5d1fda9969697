package examples_test

import (
	"encoding/json"
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

// TestABIMarkdownCPrimitives builds section 14's C module — the block is
// examples/c/prims.c, byte for byte — with the C command of ABI.md's build
// table and wasmtask.h beside it, and serves it over MCP: its tool links
// the template's resources, the resource and the template's resources
// read as the block says (a day it has no notes for is not found), and the
// prompt renders its argument.
func TestABIMarkdownCPrimitives(t *testing.T) {
	doc := abiMD(t)
	block := codeBlock(t, doc, "### A module in C", "```c\n")
	src, err := os.ReadFile("c/prims.c")
	if err != nil {
		t.Fatal(err)
	}
	if block != string(src) {
		t.Fatalf("ABI.md section 14's C block differs from examples/c/prims.c: copy the file into the block")
	}
	s := serveMCP(t, serveModule(t, "prims.wasm", buildC(t, doc, []byte(block), "wasmtask.h")))

	if got := s.toolSupport(); len(got) != 1 || got["week"] != "forbidden" {
		t.Errorf("tools/list: got %v, want week (forbidden)", got)
	}
	var week struct {
		Content []struct{ Type, Text, URI, Name string } `json:"content"`
	}
	if err := s.toolCall("week", map[string]any{}, "", nil).Decode(&week); err != nil {
		t.Fatalf("tools/call week: %v", err)
	}
	days := []string{"monday", "tuesday", "wednesday", "thursday", "friday"}
	if len(week.Content) != 1+len(days) || week.Content[0].Text != "The notes of the week:" {
		t.Fatalf("week: got %+v, want a text and %d resource links", week.Content, len(days))
	}
	for i, day := range days {
		if c := week.Content[1+i]; c.Type != "resource_link" || c.URI != "notes://days/"+day || c.Name != day {
			t.Errorf("week's link %d: got %+v, want a resource_link to notes://days/%s", i, c, day)
		}
	}

	if got := s.resources(); asJSON(got) != `["notes://readme"]` {
		t.Errorf("resources/list: got %v, want notes://readme", got)
	}
	if got := s.templates(); asJSON(got) != `["notes://days/{day}"]` {
		t.Errorf("resources/templates/list: got %v, want notes://days/{day}", got)
	}
	if got := s.prompts(); asJSON(got) != `["plan"]` {
		t.Errorf("prompts/list: got %v, want plan", got)
	}
	for _, tt := range []struct{ uri, want string }{
		{"notes://readme", "One note per working day: notes://days/monday to notes://days/friday."},
		{"notes://days/wednesday", "Review two pull requests."},
		{"notes://days/friday", "Retrospective."},
	} {
		got := s.readResource(tt.uri)
		if len(got) != 1 || got[0].URI != tt.uri || got[0].MIMEType != "text/plain" || got[0].Text != tt.want {
			t.Errorf("resources/read %s: got %s, want the text %q", tt.uri, asJSON(got), tt.want)
		}
	}
	for _, uri := range []string{"notes://days/sunday", "notes://days/mon%22day"} {
		if m := s.call("resources/read", map[string]any{"uri": uri}); m.Code() != -32002 {
			t.Errorf("resources/read %s: got %s, want the resource-not-found error -32002", uri, m.Raw)
		}
	}

	p := s.getPrompt("plan", map[string]string{"day": "thursday"})
	if p.Description != "A plan for thursday" || len(p.Messages) != 1 || p.Messages[0].Role != "user" ||
		p.Messages[0].Content.Type != "text" || p.Messages[0].Content.Text != "My notes for thursday: Release day. Plan my day." {
		t.Errorf("prompts/get plan thursday: got %s", asJSON(p))
	}
	for _, args := range []map[string]string{{"day": "sunday"}, {"day": "fri\"day"}, {}} {
		if m := s.call("prompts/get", map[string]any{"name": "plan", "arguments": args}); m.Code() != -32602 {
			t.Errorf("prompts/get plan %v: got %s, want error -32602", args, m.Raw)
		}
	}
}

// buildC builds the C source src with the C command of doc's build table,
// as a plugin author would, with the files of examples/c named in beside
// (wasmtask.h) copied next to it, and returns the module.
func buildC(t *testing.T, doc string, src []byte, beside ...string) []byte {
	t.Helper()
	_, command := buildRow(t, doc, "C")
	needToolchain(t, exampleFor(t, "c"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool.c"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range beside {
		b, err := os.ReadFile(filepath.Join("c", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), b)
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
	mainRS := codeBlock(t, doc, "The same tool as a new Rust crate", "```rust\n")
	wasm := buildABIMarkdownCrate(t, doc, mainRS, nil)
	if len(wasm) > 1<<20 {
		t.Errorf("the hello tool is %d bytes: the release profile does not strip the standard library's debug info", len(wasm))
	}
	s := serveMCP(t, serveModule(t, "hello.wasm", wasm))
	r := s.callTool("hello", map[string]any{}, "hello")
	if r.Text() != "Hello from Rust!" || r.IsError {
		t.Errorf("hello: got %+v, want the text Hello from Rust!", r)
	}
}

// TestABIMarkdownRustBindings builds the same new crate on the Rust
// bindings as ABI.md says a tool author does without cloning: the one file
// examples/rust/wasmtask/src/lib.rs copied in as src/wasmtask.rs, and
// ABI.md's main.rs on it.
func TestABIMarkdownRustBindings(t *testing.T) {
	needToolchain(t, exampleFor(t, "rust"))
	doc := abiMD(t)
	mainRS := codeBlock(t, doc, "The same crate on the bindings instead", "```rust\n")
	bindings, err := os.ReadFile("rust/wasmtask/src/lib.rs")
	if err != nil {
		t.Fatal(err)
	}
	wasm := buildABIMarkdownCrate(t, doc, mainRS, map[string][]byte{"wasmtask.rs": bindings})
	s := serveMCP(t, serveModule(t, "hello.wasm", wasm))
	if r := s.callTool("hello", map[string]any{"name": "Ada"}, "hello"); r.Text() != "Hello, Ada!" || r.IsError {
		t.Errorf("hello Ada: got %+v, want the text Hello, Ada!", r)
	}
	if r := s.callTool("hello", map[string]any{}, "hello"); r.Text() != "Hello, Rust!" || r.IsError {
		t.Errorf("hello: got %+v, want the text Hello, Rust!", r)
	}
}

// buildABIMarkdownCrate runs section 10's commands for a new Rust crate:
// cargo new, main.rs and the other src files given, the release profile
// appended to Cargo.toml, cargo build. It returns the module.
func buildABIMarkdownCrate(t *testing.T, doc, mainRS string, src map[string][]byte) []byte {
	t.Helper()
	const heading = "The same tool as a new Rust crate"
	script := codeBlock(t, doc, heading, "```sh\n")
	profile := codeBlock(t, doc, heading, "```toml\n")
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
	runIn(t, dir, commands[0])
	crate := filepath.Join(dir, "hello")
	writeFile(t, filepath.Join(crate, "src", "main.rs"), []byte(mainRS))
	for name, text := range src {
		writeFile(t, filepath.Join(crate, "src", name), text)
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
	runIn(t, crate, commands[1])
	wasm, err := os.ReadFile(filepath.Join(crate, "target", "wasm32-wasi", "release", "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// TestABIMarkdownAssemblyScriptProject builds section 10's new
// AssemblyScript project from ABI.md's text — the bindings file copied into
// assembly/, its index.ts, its asc command — with the packages section 1's
// npm install names, and calls the tool through the host. The packages are
// the ones npm ci installed in examples/assemblyscript, which the test
// checks are the versions that install line pins.
func TestABIMarkdownAssemblyScriptProject(t *testing.T) {
	needToolchain(t, exampleFor(t, "assemblyscript"))
	doc := abiMD(t)
	install := codeBlock(t, doc, "A new project installs exactly those versions", "```sh\n")
	lock, err := os.ReadFile("assemblyscript/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	var pinned struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(lock, &pinned); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"assemblyscript", "@assemblyscript/wasi-shim"} {
		want := name + "@" + pinned.Packages["node_modules/"+name].Version
		if !strings.Contains(install, " "+want) {
			t.Errorf("ABI.md's npm install %q does not pin %s, the version package-lock.json holds", strings.TrimSpace(install), want)
		}
	}

	const heading = "The same tool as a new AssemblyScript project"
	indexTS := codeBlock(t, doc, heading, "```ts\n")
	build := strings.TrimSpace(codeBlock(t, doc, heading, "```sh\n"))
	if !strings.HasPrefix(build, "npx asc ") || strings.Contains(build, "\n") {
		t.Fatalf("ABI.md's AssemblyScript build %q: want one npx asc command", build)
	}
	bindings, err := os.ReadFile("assemblyscript/assembly/wasmtask.ts")
	if err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs("assemblyscript/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "assembly", "wasmtask.ts"), bindings)
	writeFile(t, filepath.Join(dir, "assembly", "index.ts"), []byte(indexTS))
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	runIn(t, dir, build)
	wasm, err := os.ReadFile(filepath.Join(dir, "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	s := serveMCP(t, serveModule(t, "hello.wasm", wasm))
	if r := s.callTool("hello", map[string]any{"name": "Ada"}, "hello"); r.Text() != "Hello, Ada!" || r.IsError {
		t.Errorf("hello Ada: got %+v, want the text Hello, Ada!", r)
	}
	if r := s.callTool("hello", map[string]any{}, "hello"); r.Text() != "Hello, AssemblyScript!" || r.IsError {
		t.Errorf("hello: got %+v, want the text Hello, AssemblyScript!", r)
	}
}

// runIn runs one shell command from ABI.md in dir.
func runIn(t *testing.T, dir, command string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ABI.md's %q: %v\n%s", command, err, out)
	}
}

// writeFile writes name, creating its directory.
func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
