package hosttest

import (
	"os"
	"path/filepath"
	"testing"
)

// SkipLogEnv names the environment variable that .ci/test sets to a file:
// [MissingToolchain] appends to it the package and the install hint of
// each test it skips, and .ci/test ends the run with one line naming them.
const SkipLogEnv = "WASMTASK_SKIPPED"

// MissingToolchain ends a test that needs a toolchain this machine lacks
// (why says which; install says how to get it, for example "apt-get
// install wabt"). Under CI=true it fails the test: CI installs every
// toolchain (.ci/run). Otherwise it skips the test, after recording the
// test's package and install in the file $WASMTASK_SKIPPED names, if any.
func MissingToolchain(tb testing.TB, install, why string) {
	tb.Helper()
	msg := why + " (" + install + ")"
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	if log := os.Getenv(SkipLogEnv); log != "" {
		// One write of one short line to a file opened for appending:
		// the test processes of a run append to it side by side.
		if f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, err = f.WriteString(packageDir() + "\t" + install + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				tb.Logf("recording the skip in %s: %v", log, err)
			}
		}
	}
	tb.Skip(msg)
}

// packageDir is the test's package directory relative to its module root
// (go test runs a test binary in its package's directory).
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil {
				return wd
			}
			return filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}
