package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wasmtask/wasmtask/host"
	"github.com/wasmtask/wasmtask/host/defaulttools"
)

// Call one tool of a module directly, without a server, under a policy.
func ExampleModule_Call() {
	ctx := context.Background()
	rt, err := host.NewRuntime(ctx, host.RuntimeConfig{})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	wasm, _ := defaulttools.FS.ReadFile("add.wasm")
	m, err := rt.Load(ctx, "add", wasm)
	if err != nil {
		panic(err)
	}
	for _, t := range m.Tools() {
		fmt.Println("tool:", t.Name, t.TaskSupport)
	}

	res, err := m.Call(ctx, "add", json.RawMessage(`{"a":2,"b":40}`), host.CallOptions{
		Policy: host.ToolPolicy{Timeout: host.Duration(5 * time.Second), MemoryMiB: 16},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("result:", string(res.StructuredContent))

	_, err = m.Call(ctx, "add", json.RawMessage(`{"a":"two"}`), host.CallOptions{})
	fmt.Println("bad arguments:", err != nil)
	// Output:
	// tool: add forbidden
	// result: {"sum":42}
	// bad arguments: true
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
