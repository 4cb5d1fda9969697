package hosttest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildWasmtask builds the wasmtask command of the module whose root is
// moduleRoot into t's temporary directory and returns the binary's path;
// env is the go command's environment (nil: the test's own). Under -short
// it skips t: the quick run leaves out the tests that build the binary.
//
// Under the race detector the binary is built with -race as well: the test
// binaries were built that way, so the go command finds every dependency
// compiled in its cache and only links, where a plain build would compile
// them all a second time (minutes on a cold cache).
func BuildWasmtask(t testing.TB, moduleRoot string, env []string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the wasmtask binary: not in -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building the wasmtask binary needs the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "wasmtask")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goBin, append(args, "./cmd/wasmtask")...)
	cmd.Dir = moduleRoot
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", cmd.Args[1:], err, out)
	}
	return bin
}
