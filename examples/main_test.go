package examples_test

import (
	"fmt"
	"os"
	"testing"
)

// compileCache is a compiled-code cache shared by the tests of this
// package: the Go example's 4 MB module is compiled once, not per test.
// Its key is made in a configuration directory of the tests' own.
var compileCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmtask-examples-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	config, err := os.MkdirTemp("", "wasmtask-examples-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", config)
	compileCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.RemoveAll(config)
	os.Exit(code)
}
