package host

import (
	"fmt"
	"os"
	"testing"
)

// testCacheDir is the compiled-code cache every test server of the package
// shares: the embedded Go tool compiles once per test process instead of
// once per server (about 10 s under -race).
var testCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "host-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
