package examples_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// example is one example module: its language (an argument of build.sh),
// the module file it builds, and what its toolchain needs.
type example struct {
	lang   string
	module string
	tools  []string // programs that must be on PATH
	files  []string // files that must exist (sysroots)
}

var examples = []example{
	{lang: "go", module: "demo.wasm", tools: []string{"go"}},
	{lang: "c", module: "sha256.wasm", tools: []string{"clang", "wasm-ld"},
		files: []string{"/usr/include/wasm32-wasi/stdio.h", "/usr/lib/wasm32-wasi/libc.a", "/usr/lib/wasm32-wasi/crt1-command.o"}},
	{lang: "wat", module: "add.wasm", tools: []string{"wat2wasm"}},
}

const defaultTools = "../host/defaulttools"

// needToolchain skips the test when ex's toolchain is missing, except under
// CI=true, where a missing toolchain fails it: CI must prove every module.
func needToolchain(t *testing.T, ex example) {
	t.Helper()
	var missing []string
	for _, tool := range ex.tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	for _, f := range ex.files {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "the " + ex.lang + " toolchain is missing: " + strings.Join(missing, ", ") +
		" (Debian: golang, clang lld wasi-libc, wabt)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// buildDir builds ex from its sources with build.sh into a fresh directory,
// which then holds ex.module alone, and returns the directory.
func buildDir(t *testing.T, ex example) string {
	t.Helper()
	needToolchain(t, ex)
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", "build.sh", "-o", dir, ex.lang)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build.sh -o %s %s: %v\n%s", dir, ex.lang, err, out)
	}
	return dir
}

// exampleFor returns the example of language lang.
func exampleFor(t *testing.T, lang string) example {
	t.Helper()
	for _, ex := range examples {
		if ex.lang == lang {
			return ex
		}
	}
	t.Fatalf("no example %q", lang)
	return example{}
}

// build builds ex from its sources and returns the module's bytes.
func build(t *testing.T, ex example) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(buildDir(t, ex), ex.module))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEmbeddedModulesMatchSources rebuilds every example and compares it
// byte for byte with the module embedded in host/defaulttools: what the
// server runs by default is what these sources say.
func TestEmbeddedModulesMatchSources(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.lang, func(t *testing.T) {
			got := build(t, ex)
			want, err := os.ReadFile(filepath.Join(defaultTools, ex.module))
			if err != nil {
				t.Fatalf("%v: run examples/build.sh and commit host/defaulttools", err)
			}
			if !bytes.Equal(got, want) {
				recorded, _ := os.ReadFile(filepath.Join(defaultTools, "toolchains.txt"))
				t.Fatalf("rebuilt %s (%d bytes) differs from host/defaulttools/%s (%d bytes): "+
					"run examples/build.sh and commit the result, or use the toolchains it was built with:\n%s",
					ex.module, len(got), ex.module, len(want), recorded)
			}
		})
	}
}

// TestNoStrayModules fails on a module in host/defaulttools that no example
// builds: it would be embedded without sources.
func TestNoStrayModules(t *testing.T) {
	names, err := filepath.Glob(filepath.Join(defaultTools, "*.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ex := range examples {
		want = append(want, ex.module)
	}
	for _, n := range names {
		if !slices.Contains(want, filepath.Base(n)) {
			t.Errorf("host/defaulttools/%s is built by no example (want only %q)", filepath.Base(n), want)
		}
	}
	if len(names) != len(want) {
		t.Errorf("got %d modules in host/defaulttools, want %d", len(names), len(want))
	}
}
