package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wasmtask/wasmtask/host"
)

// Call a tool directly, on the path tools/call takes: the tool's policy
// applies, and its arguments are checked against its input schema before
// it runs.
func ExampleServer_Call() {
	ctx := context.Background()
	// Limits and grants are given by module: the file add.wasm is module
	// "add", which declares the tool "add".
	srv, err := host.New(ctx, host.Config{Policy: &host.Policy{Modules: map[string]host.ModulePolicy{
		"add": {Tools: map[string]host.ToolPolicy{"add": {Timeout: host.Duration(5 * time.Second), MemoryMiB: 16}}},
	}}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	res, err := srv.Call(ctx, "add", json.RawMessage(`{"a":2,"b":40}`), nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("text:", res.Content[0].Text)
	fmt.Println("structured:", string(res.StructuredContent))

	_, err = srv.Call(ctx, "add", json.RawMessage(`{"a":"two"}`), nil)
	fmt.Println("bad arguments:", errors.Is(err, host.ErrArguments))
	_, err = srv.Call(ctx, "subtract", nil, nil)
	fmt.Println("unknown tool:", errors.Is(err, host.ErrUnknownTool))
	// Output:
	// text: 42
	// structured: {"sum":42}
	// bad arguments: true
	// unknown tool: true
}

// A server on the embedded default tools: each tool carries its task
// support, which tools/list reports as execution.taskSupport.
func ExampleNew() {
	ctx := context.Background()
	srv, err := host.New(ctx, host.Config{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	for _, t := range srv.Tools() {
		fmt.Println(t.Name, t.TaskSupport)
	}
	// Serve with srv.ServeStdio(ctx, os.Stdin, os.Stdout), or mount
	// srv.Handler() on an http.Server (endpoint host.HTTPPath).

	// Output:
	// add forbidden
	// long_job required
	// sha256 forbidden
	// slow_count optional
	// word_count forbidden
}
