// Command wasmtask is an MCP server whose tools are WebAssembly modules, and
// a workbench for tool authors.
//
//	wasmtask serve [--http ADDR] [--tools DIR] [--policy FILE]
//	wasmtask inspect FILE.wasm
//	wasmtask call FILE.wasm TOOL --args JSON
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

const usage = `usage: wasmtask <command> [arguments]

Commands:
  serve     serve MCP on stdio or Streamable HTTP (wasmtask serve -h)
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
	if err != nil {
		fmt.Fprintf(os.Stderr, "wasmtask: %v\n", err)
		os.Exit(1)
	}
}
