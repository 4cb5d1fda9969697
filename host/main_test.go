package host

import (
	"fmt"
	"os"
	"testing"
)

// testCacheDir is the compiled-code cache every test server of the package
// shares: the embedded Go tool compiles once per test process instead of
// once per server (about 10 s under -race). Its key is made in a
// configuration directory of the tests' own, not the user's.
var testCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "host-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	config, err := os.MkdirTemp("", "host-test-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", config)
	testCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.RemoveAll(config)
	os.Exit(code)
}
