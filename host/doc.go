// Package host is the wasmtask server and its Wasm runtime: it wires the
// sandbox (internal/wasmrt, the only user of wazero), the tool directory
// (package plugins), the task engine (package taskengine), the MCP
// protocol (internal/mcpserver, its message shapes in internal/mcpwire)
// and its transports (internal/mcpstdio, internal/mcphttp; the MCP rooms
// are the only users of go-sdk).
//
// One entry point, [Server], used by the command line (serve, inspect,
// call, read, prompt, complete), by the tests of tool modules and by the
// hostile-guest suite alike:
//
//	srv, err := host.New(ctx, host.Config{ToolsDir: "./tools", Policy: policy})
//	defer srv.Close()
//	res, err := srv.Call(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), events) // directly
//	rr, err := srv.ReadResource(ctx, "notes://today")                         // a resource (GetPrompt, Complete alike)
//	err = srv.ServeStdio(ctx, os.Stdin, os.Stdout)                            // or MCP on stdio
//	err = srv.Serve(listener)                                                 // or Streamable HTTP
//
// # One catalog, one call path
//
// Every reload (and the first load) builds one immutable catalog: for each
// served tool its declaration (decoded and normalised once, when the module
// was loaded), its compiled module, the limits and grants the operator's
// policy resolves to for the file that serves it, and its share of the
// admission. One atomic pointer publishes it. MCP's tools/list renders it
// and tools/call dispatches through it; [Server.Tools] and `wasmtask
// inspect` report it; [Server.Call] and tools/call run the same path:
// admission, then one fresh instance, where the arguments are parsed and
// validated once. A request holds the catalog it read until it is answered
// (a task until its work ends), so a reload never closes a module under a
// call that was dispatched to it.
//
// # Admission
//
// One controller admits every call before its instance exists. It bounds
// together the calls of a tool (its policy's maxConcurrency), of a module
// (the module's maxInstances and maxMemoryMiB, by default a quarter of the
// server's instances and memory budget), of an authenticated tenant (its
// maxInstances and maxMemoryMiB, by default half of the server's), of the
// server (maxInstances), and the memory they reserve (the memory budget:
// each call reserves its tool's memory limit plus its output and log
// buffers, as the runtime computes them, wasmrt's Module.Reservation, and
// the sum over running calls stays within [Policy].MemoryBudgetMiB, by
// default half of the memory the process may use). A call that cannot
// start waits in a bounded queue until a slot frees or its context ends;
// one beyond a queue is refused at once ([ErrBusy]); one that could never
// fit the budget fails at once ([ErrMemoryBudget]). When a slot frees, the
// tenant running the fewest calls goes next, then the module running the
// fewest, then the oldest call: a module or tenant that runs nothing takes
// the next slot to free, so one flooding party neither holds more than its
// share nor makes a newcomer wait behind its queue.
//
// # Grants belong to modules
//
// The policy grants environment and directories, and sets limits, by
// module — the file name without ".wasm", optionally pinned to the file's
// digest — never by tool name, which any file may declare. A tool name
// stays with the file that served it: while the file is there, and for
// [Policy].NameGrace after it was removed, so that a redeploy gets it back;
// [ModulePolicy].ToolNames binds names to a file for good. Another file
// that declares such a name is refused, and the problem names both files
// (package plugins' Rules and ConflictError); two new files that declare
// one name are decided by file name. The tool gets exactly what the policy
// writes for the file that serves it.
// A pin the file does not match gives no grants and default limits, and is
// a [Problem].
//
// # Lifecycle
//
// Like net/http's Server: [Server.Serve] and [Server.ServeStdio] serve until
// [Server.Shutdown] (stop accepting, drain calls and tasks, answer the
// waiting tasks/result requests, then close) or [Server.Close] (stop now).
// Either makes the Serve methods return [ErrServerClosed], and when it
// returns every goroutine the server started is gone.
//
// # Operating
//
// [Server.Handler] serves the probes [HealthPath] and [ReadyPath] next to
// the MCP endpoint; [Server.MetricsHandler] serves Prometheus metrics from
// the server's own registry, meant for an address of its own. Most figures
// are read at scrape time from the part that owns them; calls are counted
// in the one call path. [Server.Rescan] rescans the tool directory and
// [Server.SetPolicy] applies a new policy's per-module and per-tool parts
// to the next calls (the CLI does both on SIGHUP).
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
// The memory limit covers what one call makes the host allocate for the
// guest: linear memory and its growth, the call stack of either engine,
// tables, globals and the instance's records (see wasmrt's package doc).
//
// # Concurrency
//
// A Server is safe for concurrent use; every call runs in a fresh instance.
package host
