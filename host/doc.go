// Package host is the wasmtask server and its Wasm runtime: it wires the
// sandbox (internal/wasmrt, the only user of wazero), the tool directory
// (package plugins), the task engine (package taskengine) and the MCP
// protocol (internal/mcpserver, the only user of go-sdk).
//
// Two entry points:
//
//   - [Server] serves MCP on stdio or Streamable HTTP with a watched tool
//     directory, tasks and an operator [Policy].
//   - [Runtime] loads and calls one module directly, with no server: the
//     command line (wasmtask inspect and call), tests of tool modules and
//     the hostile-guest suite use it.
//
// Calling one tool of a module directly:
//
//	rt, err := host.NewRuntime(ctx, host.RuntimeConfig{})
//	defer rt.Close(ctx)
//	m, err := rt.Load(ctx, "add", wasm)
//	res, err := m.Call(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), host.CallOptions{
//		Policy:     host.ToolPolicy{Timeout: host.Duration(5 * time.Second)},
//		OnProgress: func(p, total float64, msg string) { … },
//	})
//
// # Sandbox
//
// Deny by default: a call sees no files, no environment and no arguments
// beyond its program name, has 64 MiB of memory, 30 s of wall clock, 1 MiB of
// output and 64 KiB of log, gets crypto/rand and real clocks. The operator's
// [ToolPolicy] grants more; a module's manifest may only ask. A guest that
// traps, loops, runs out of memory or writes a bad or too large answer fails
// that call only, with a *[GuestError] naming the module, the tool and the
// cause.
//
// Known limit: the call stack is not part of the memory limit. wazero's
// compiler lets a deeply recursing guest grow its stack to about 400 MB
// before the call traps with a stack overflow (measured: ~161 MiB of host
// memory for one such call); its interpreter stops at 2000 frames. The stack
// is freed when the call ends, and [Policy].MaxInstances bounds how many
// calls can hold one at once; size it with this in mind.
//
// # Concurrency
//
// Server, Runtime and Module are safe for concurrent use; every call runs in
// a fresh instance. Close on each of them releases what it owns.
package host
