package host_test

// Interop: the official MCP TypeScript SDK client (testdata/interop, run by
// Node) drives the real `wasmtask serve` binary over stdio and over
// Streamable HTTP. The script validates every message with the SDK's own
// schemas and prints a JSON report; any failed check fails the test with
// that report.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

// interopReport is what testdata/interop/client.mjs prints.
type interopReport struct {
	Transport string `json:"transport"`
	OK        bool   `json:"ok"`
	Checks    []struct {
		Name   string          `json:"name"`
		OK     bool            `json:"ok"`
		Detail json.RawMessage `json:"detail"`
	} `json:"checks"`
	ServerStderr string `json:"serverStderr"`
}

// interopNode returns the node binary and the script directory, or skips the
// test when either is missing ([hosttest.MissingToolchain]: it fails instead
// under CI=true).
func interopNode(t *testing.T) (node, dir string) {
	t.Helper()
	const install = "Node.js 20 or later, then npm ci in host/testdata/interop"
	node, err := exec.LookPath("node")
	if err != nil {
		hosttest.MissingToolchain(t, install, "interop: node is not on PATH")
	}
	dir, err = filepath.Abs(filepath.Join("testdata", "interop"))
	if err != nil {
		t.Fatal(err)
	}
	sdk := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	if _, err := os.Stat(sdk); err != nil {
		hosttest.MissingToolchain(t, install, "interop: the MCP TypeScript SDK is not installed")
	}
	return node, dir
}

func TestInterop(t *testing.T) {
	node, dir := interopNode(t)
	bin := hosttest.BuildWasmtask(t, "..", nil)
	// One compile cache for both runs: the second start skips compiling the
	// Go-built tools.
	cache := t.TempDir()

	t.Run("stdio", func(t *testing.T) {
		runInteropScript(t, node, dir, 40, "client.mjs", "stdio", bin, "--cache-dir", cache)
	})
	t.Run("http", func(t *testing.T) {
		url := startHTTPServe(t, bin, "--cache-dir", cache)
		runInteropScript(t, node, dir, 40, "client.mjs", "http", url)
	})
}

// command is exec.Command for a process the test runs, ended before the
// test's own deadline (go test -timeout), when it has one, so that a hung
// process is interrupted (then killed) while there is still time to
// report what it printed. It adds no time limit of its own.
func command(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	ctx := context.Background()
	var grace time.Duration
	if d, ok := t.Deadline(); ok {
		grace = time.Until(d) / 20
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-2*grace))
		t.Cleanup(cancel)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = grace
	return cmd
}

// runInteropScript runs script (client.mjs or hostile.mjs) with args and
// fails t with its report when any check failed or fewer than minChecks
// ran.
func runInteropScript(t *testing.T, node, dir string, minChecks int, script string, args ...string) {
	t.Helper()
	cmd := command(t, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	var rep interopReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%s %s: no JSON report (run error: %v, report error: %v)\nstdout:\n%s\nstderr:\n%s",
			script, args[0], runErr, err, stdout.Bytes(), stderr.Bytes())
	}
	var failed []string
	for _, c := range rep.Checks {
		if !c.OK {
			failed = append(failed, fmt.Sprintf("  FAIL %s: %s", c.Name, c.Detail))
		}
	}
	if len(failed) > 0 || !rep.OK || runErr != nil {
		t.Fatalf("%s %s: %d of %d checks failed (exit: %v)\n%s\nserver stderr:\n%s\nnode stderr:\n%s",
			script, args[0], len(failed), len(rep.Checks), runErr, strings.Join(failed, "\n"), rep.ServerStderr, stderr.Bytes())
	}
	if len(rep.Checks) < minChecks {
		t.Fatalf("%s %s: only %d checks ran, want at least %d (the script ended early?)\n%s", script, args[0], len(rep.Checks), minChecks, stdout.Bytes())
	}
	t.Logf("%s: %d checks passed", rep.Transport, len(rep.Checks))
}

var listeningRE = regexp.MustCompile(`wasmtask: listening on (http://\S+)`)

// startHTTPServe starts `bin serve --http 127.0.0.1:0 args...` and returns
// the endpoint URL it prints. At cleanup it interrupts the server and fails
// the test when the server does not exit cleanly.
func startHTTPServe(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := command(t, bin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s serve: %v", bin, err)
	}

	// The reader owns the stderr pipe: it reports the URL, then keeps the
	// log's tail until the process exits and the pipe ends.
	var (
		mu   sync.Mutex
		tail []string
	)
	urlc := make(chan string, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
			mu.Lock()
			if tail = append(tail, line); len(tail) > 50 {
				tail = tail[1:]
			}
			mu.Unlock()
		}
		io.Copy(io.Discard, pipe)
	}()
	log := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(tail, "\n")
	}

	exited := make(chan error, 1)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		if err := <-exited; err != nil {
			t.Errorf("wasmtask serve --http exited with %v after interrupt\n%s", err, log())
		}
	}
	go func() {
		<-readDone // Wait must not run before the pipe is drained
		exited <- cmd.Wait()
	}()
	t.Cleanup(stop)

	select {
	case url := <-urlc:
		return url
	case err := <-exited:
		stopped = true
		t.Fatalf("wasmtask serve --http exited before listening (%v)\n%s", err, log())
	}
	return ""
}
