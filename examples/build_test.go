package examples_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// example is one example module: its language (an argument of build.sh),
// the module file it builds, whether the server embeds it, and what its
// toolchain needs.
type example struct {
	lang     string
	module   string
	embedded bool // built into host/defaulttools
	// toolchain is what building it needs, and how to get it on Debian.
	toolchain hosttest.Toolchain
	// probe, when set, reports what else is missing, or "".
	probe func() string
	// checkedIn is where a module that is not embedded is checked in
	// (relative to examples/), or "".
	checkedIn string
}

var (
	goToolchain = hosttest.Toolchain{Programs: []string{"go"}, Install: "golang"}
	examples    = []example{
		{lang: "go", module: "demo.wasm", embedded: true, toolchain: goToolchain},
		{lang: "c", module: "sha256.wasm", embedded: true, toolchain: hosttest.C},
		{lang: "wat", module: "add.wasm", embedded: true, toolchain: hosttest.WAT},
		{lang: "rust", module: "wordfreq.wasm", probe: rustWASIStd, toolchain: hosttest.Toolchain{
			Programs: []string{"cargo", "rustc"}, Install: "apt-get install rustc cargo libstd-rust-dev-wasm32"}},
		{lang: "assemblyscript", module: "caesar.wasm", toolchain: hosttest.Toolchain{
			Programs: []string{"node", "npx"},
			Files:    []string{"assemblyscript/node_modules/.bin/asc", "assemblyscript/node_modules/@assemblyscript/wasi-shim/asconfig.json"},
			Install:  "Node.js 20 or later with npm, then npm ci in examples/assemblyscript"}},
		{lang: "conformance", module: "conformance.wasm", checkedIn: "conformance/tools", toolchain: goToolchain},
		{lang: "go-preinit", module: "demo-preinit.wasm", checkedIn: "go/preinit", toolchain: goToolchain},
	}
)

// TestCheckedInModulesMatchSources rebuilds the modules checked in outside
// host/defaulttools — the conformance suite's fixture tools, which
// examples/conformance/run.sh serves, and the pre-initialised Go demo —
// and compares them with the checked-in ones.
func TestCheckedInModulesMatchSources(t *testing.T) {
	for _, ex := range examples {
		if ex.checkedIn == "" {
			continue
		}
		t.Run(ex.lang, func(t *testing.T) {
			got := build(t, ex)
			path := filepath.Join(ex.checkedIn, ex.module)
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("rebuilt %s (%d bytes) differs from examples/%s (%d bytes): "+
					"run examples/build.sh -o examples/%s %s and commit the result", ex.module, len(got), path, len(want), ex.checkedIn, ex.lang)
			}
		})
	}
}

// rustWASIStd reports what is missing for build.sh to build for
// wasm32-wasi: a rustc that knows the target (Rust 1.84 and later call it
// wasm32-wasip1 only) with its standard library (Debian's
// libstd-rust-dev-wasm32, or rustup's target). Like build.sh, it takes the
// first rustc on PATH that has both, else Debian's /usr/bin/rustc.
func rustWASIStd() string {
	var tried []string
	for _, rustc := range []string{"rustc", "/usr/bin/rustc"} {
		out, err := exec.Command(rustc, "--print", "target-libdir", "--target", "wasm32-wasi").Output()
		if err != nil {
			version, _ := exec.Command(rustc, "--version").Output()
			tried = append(tried, fmt.Sprintf("%s is %s", rustc, strings.TrimSpace(string(version))))
			continue
		}
		dir := strings.TrimSpace(string(out))
		if libs, _ := filepath.Glob(filepath.Join(dir, "libstd-*.rlib")); len(libs) > 0 {
			return ""
		}
		tried = append(tried, "no wasm32-wasi standard library in "+dir)
	}
	return "no rustc here has the wasm32-wasi target with its standard library, which Rust 1.83 and older have (" + strings.Join(tried, "; ") + ")"
}

const defaultTools = "../host/defaulttools"

// needToolchain skips the test when ex's toolchain is missing, except under
// CI=true, where a missing toolchain fails it: CI must prove every module.
// Under -short it always skips: building from source is the slow part.
func needToolchain(t *testing.T, ex example) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the " + ex.lang + " example from source: not in -short")
	}
	missing := ex.toolchain.Missing()
	msg := "the " + ex.lang + " toolchain is missing: " + strings.Join(missing, ", ")
	if ex.probe != nil && len(missing) == 0 {
		m := ex.probe()
		if m == "" {
			return
		}
		msg = "the " + ex.lang + " toolchain cannot build the example: " + m
	}
	if len(missing) == 0 && ex.probe == nil {
		return
	}
	hosttest.MissingToolchain(t, ex.toolchain.Install, msg)
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

// built holds the modules build has built in this test process, by
// language: each example is built from its sources once per process.
var built sync.Map

// build builds ex from its sources and returns the module's bytes.
func build(t *testing.T, ex example) []byte {
	t.Helper()
	if b, ok := built.Load(ex.lang); ok {
		return b.([]byte)
	}
	b, err := os.ReadFile(filepath.Join(buildDir(t, ex), ex.module))
	if err != nil {
		t.Fatal(err)
	}
	built.Store(ex.lang, b)
	return b
}

// TestEmbeddedModulesMatchSources rebuilds every example and compares it
// byte for byte with the module embedded in host/defaulttools: what the
// server runs by default is what these sources say.
func TestEmbeddedModulesMatchSources(t *testing.T) {
	for _, ex := range examples {
		if !ex.embedded {
			continue
		}
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
		if ex.embedded {
			want = append(want, ex.module)
		}
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
