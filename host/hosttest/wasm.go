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
		if missing := tc.Missing(); len(missing) > 0 {
			MissingToolchain(tb, tc.Install, "building "+filepath.Base(path)+": "+strings.Join(missing, ", ")+" is not installed")
		}
	}
	b, err := builds.get(abs)
	if err != nil {
		tb.Fatalf("hosttest: %v", err)
	}
	return b
}

// Toolchain is what building one kind of source needs.
type Toolchain struct {
	Programs []string // on PATH
	Files    []string // files that must exist (sysroots, installed packages)
	Install  string   // how to get them, for example "apt-get install wabt"
}

// The toolchains of the test modules: WAT for .wat sources, C for .c.
var (
	WAT = Toolchain{Programs: []string{"wat2wasm"}, Install: "apt-get install wabt"}
	C   = Toolchain{Programs: []string{"clang", "wasm-ld"},
		Files:   []string{"/usr/include/wasm32-wasi/stdio.h", "/usr/lib/wasm32-wasi/libc.a", "/usr/lib/wasm32-wasi/crt1-command.o"},
		Install: "apt-get install clang lld wasi-libc"}
)

var toolchains = map[string]Toolchain{".wat": WAT, ".c": C}

// Missing lists the programs and files of tc that are not here.
func (tc Toolchain) Missing() []string {
	var missing []string
	for _, p := range tc.Programs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	for _, f := range tc.Files {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	return missing
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
