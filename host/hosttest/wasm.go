package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Wasm returns the module built from the source file at path (relative to
// the test's package directory): ".wat" with wat2wasm (Debian wabt), ".c"
// with clang for wasm32-wasi and wasi-libc (Debian clang lld wasi-libc).
// Each source is built once per test process. A missing toolchain skips the
// test ([MissingToolchain]; under CI=true it fails); a source that does not
// build fails it.
func Wasm(tb testing.TB, path string) []byte {
	tb.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		tb.Fatal(err)
	}
	if tc, ok := toolchains[filepath.Ext(abs)]; ok {
		if missing := tc.missing(); missing != "" {
			MissingToolchain(tb, tc.install, "building "+filepath.Base(path)+": "+missing+" is not installed")
		}
	}
	b, err := builds.get(abs)
	if err != nil {
		tb.Fatalf("hosttest: %v", err)
	}
	return b
}

// toolchain is what building one kind of source needs.
type toolchain struct {
	programs []string // on PATH
	files    []string // sysroot files
	install  string   // the Debian packages that provide them
}

var toolchains = map[string]toolchain{
	".wat": {programs: []string{"wat2wasm"}, install: "apt-get install wabt"},
	".c": {programs: []string{"clang", "wasm-ld"}, files: []string{"/usr/lib/wasm32-wasi/libc.a"},
		install: "apt-get install clang lld wasi-libc"},
}

// missing names the first program or file of tc that is not here, or "".
func (tc toolchain) missing() string {
	for _, p := range tc.programs {
		if _, err := exec.LookPath(p); err != nil {
			return p
		}
	}
	for _, f := range tc.files {
		if _, err := os.Stat(f); err != nil {
			return f
		}
	}
	return ""
}

// builds caches built modules by source path for the life of the process.
var builds = &buildCache{m: map[string]*build{}}

type buildCache struct {
	mu sync.Mutex
	m  map[string]*build
}

type build struct {
	once sync.Once
	wasm []byte
	err  error
}

func (c *buildCache) get(src string) ([]byte, error) {
	c.mu.Lock()
	b := c.m[src]
	if b == nil {
		b = &build{}
		c.m[src] = b
	}
	c.mu.Unlock()
	b.once.Do(func() { b.wasm, b.err = compile(src) })
	return b.wasm, b.err
}

func compile(src string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "hosttest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "m.wasm")
	var cmd *exec.Cmd
	switch filepath.Ext(src) {
	case ".wat":
		cmd = exec.Command("wat2wasm", src, "-o", out)
	case ".c":
		// -nodefaultlibs: Debian's clang lacks the wasm32 compiler-rt
		// builtins unless libclang-rt-dev-wasm32 is installed; the test
		// modules need none.
		cmd = exec.Command("clang", "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-nodefaultlibs", src, "-lc", "-o", out)
	default:
		return nil, fmt.Errorf("building %s: unknown source kind", src)
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %v: %s", filepath.Base(src), err, strings.TrimSpace(string(msg)))
	}
	return os.ReadFile(out)
}
