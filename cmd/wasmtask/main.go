// Command wasmtask is an MCP server whose tools are WebAssembly modules, and
// a workbench for tool authors.
//
//	wasmtask serve [--http ADDR] [--tools DIR] [--policy FILE]
//	wasmtask inspect FILE.wasm
//	wasmtask call FILE.wasm TOOL --args JSON
//	wasmtask read FILE.wasm URI
//	wasmtask prompt FILE.wasm NAME [--arg NAME=VALUE]...
//	wasmtask complete FILE.wasm prompt:NAME|template:URITEMPLATE ARG [VALUE]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"testing/fstest"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

const usage = `usage: wasmtask <command> [arguments]

Commands:
  serve     serve MCP on stdio or Streamable HTTP (wasmtask serve -h)
  inspect   check a tool module and show its tools, resources and prompts (wasmtask inspect -h)
  call      run one call of a tool module (wasmtask call -h)
  read      read one resource of a module (wasmtask read -h)
  prompt    render one prompt of a module (wasmtask prompt -h)
  complete  complete an argument of a module's prompt or resource template (wasmtask complete -h)
  hash-token  read a bearer token on stdin, print the digest a tenant file stores
  store-keys  print a new key file for --store-keys (keep it secret)
  version   print the version (also --version)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = runServe(args)
	case "inspect":
		err = runInspect(context.Background(), args, os.Stdout, os.Stderr)
	case "call":
		// Ctrl-C cancels the call; the guest stops and the command exits.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		err = runCall(ctx, args, terminal{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, tty: isTerminal(os.Stderr)})
		stop()
	case "read", "prompt", "complete":
		run := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
			"read": runRead, "prompt": runPrompt, "complete": runComplete}[cmd]
		// Ctrl-C cancels the request, as it does a call.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		err = run(ctx, args, os.Stdout, os.Stderr)
		stop()
	case "store-keys":
		fmt.Print(host.NewStoreKeys())
		return
	case "hash-token":
		err = runHashToken(os.Stdin, os.Stdout)
	case "-version", "--version", "version":
		fmt.Println("wasmtask", version)
		return
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "wasmtask: unknown command %q\n%s", cmd, usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if errors.Is(err, errProblems) || errors.Is(err, errToolError) || errors.Is(err, errAnswerError) || errors.Is(err, errLogged) {
		os.Exit(1) // already reported on stdout
	}
	if err != nil {
		// The error may quote a guest (its output, its stderr).
		fmt.Fprintf(visibleWriter{os.Stderr}, "wasmtask: %v\n", err)
		os.Exit(1)
	}
}

// runFlags are the flags of the commands that run a module once: call,
// read, prompt and complete.
type runFlags struct {
	timeout  *time.Duration
	memMiB   *int
	interp   *bool
	cacheDir *string
}

// addRunFlags defines the runFlags on fs; what names the run in their help.
func addRunFlags(fs *flag.FlagSet, what string) runFlags {
	return runFlags{
		timeout:  fs.Duration("timeout", host.DefaultTimeout, "wall-clock limit of the "+what),
		memMiB:   fs.Int("memory-mib", host.DefaultMemoryMiB, "memory limit of the "+what+" in `MiB`"),
		interp:   fs.Bool("interpreter", false, "run in wazero's interpreter instead of its compiler"),
		cacheDir: fs.String("cache-dir", defaultCacheDir(), "compiled-code cache `DIR`; empty disables"),
	}
}

// open serves the module in file (openModule) under the limits the flags
// give, and fails with its first problem, explained.
func (f runFlags) open(ctx context.Context, file string) (srv *host.Server, name string, err error) {
	srv, name, _, err = openModule(ctx, file, moduleOptions{
		cacheDir:    *f.cacheDir,
		interpreter: *f.interp,
		policy:      &host.Policy{Defaults: host.ToolPolicy{MemoryMiB: *f.memMiB, Timeout: host.Duration(*f.timeout)}},
	})
	if err != nil {
		return nil, "", err
	}
	if ps := srv.Problems(); len(ps) > 0 {
		srv.Close()
		err := fmt.Errorf("%s: %w", file, ps[0].Err)
		if hint := explain(ps[0].Err); hint != "" {
			return nil, "", fmt.Errorf("%w\n%s", err, hint)
		}
		return nil, "", err
	}
	return srv, name, nil
}

// moduleOptions are how the commands load a module.
type moduleOptions struct {
	cacheDir    string
	interpreter bool
	policy      *host.Policy
}

// openModule serves the one module in file with a server of its own: the
// commands load and call a module exactly as `wasmtask serve` would. The
// module's name is the file's base name without ".wasm".
func openModule(ctx context.Context, file string, o moduleOptions) (srv *host.Server, name string, wasm []byte, err error) {
	wasm, err = os.ReadFile(file)
	if err != nil {
		return nil, "", nil, err
	}
	name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	srv, err = host.New(ctx, host.Config{
		ToolsFS:     fstest.MapFS{name + ".wasm": {Data: wasm, Mode: 0o444}},
		Policy:      o.policy,
		CacheDir:    usableCacheDir(o.cacheDir, func(err error) { fmt.Fprintf(os.Stderr, "wasmtask: compile cache disabled: %v\n", err) }),
		Interpreter: o.interpreter,
	})
	return srv, name, wasm, err
}
