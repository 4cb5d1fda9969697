// Package wasmrt runs wasmtask tool modules in wazero. It is the only
// package of wasmtask that imports wazero; no wazero type leaves it.
//
// It owns: compiling a module, checking it against ABI v1 (package abi) at
// load, asking it to describe itself, decoding its manifest and checking
// and compiling its tools' input and output schemas — every load-time fact,
// computed once, here — and
// running each call in a fresh, sandboxed instance with the call's limits.
// It does not own which modules exist or their digests (package plugins
// loads each digest once), the sandbox's numbers (package host's policy
// hands complete Limits down; wasmrt keeps no defaults), tasks (package
// taskengine), the rewrite of a module's bytes before it is compiled —
// fuel, stack bounds, bulk instructions, load bounds, data merging and
// snapshot bytes, in host/internal/wasmcode — JSON Schemas
// (host/internal/schema), or the readers and writers behind a call's
// stdin, stdout, stderr and random source (host/internal/guestio). wasmrt
// runs what wasmcode wrote: it defines the fuel check the rewrite imports,
// sets the memory pool's globals, captures a snapshot's state from a live
// instance.
//
//	rt, err := wasmrt.New(ctx, wasmrt.Config{MaxMemoryMiB: 256, MaxCodeMiB: 32, MaxSnapshotMiB: 1024})
//	defer rt.Close(ctx)
//	m, err := rt.Load(ctx, "add", wasm, loadLim) // bound, compile, check imports/exports, describe
//	defer m.Close(ctx)
//	res, err := m.Call(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), lim, events)
//
// # Load
//
// Load refuses, with an error that says what to change: bytes that are not
// Wasm ([ErrNotWasm]); modules the host cannot read or wazero cannot
// compile, or that use instructions beyond Wasm 2.0, indices they do not
// define, more than 8 tables or 10000 locals in a function ([ErrCompile]);
// modules whose load would cost more than its bounds (see Load bounds,
// [ErrTooLarge]); imports
// from "wasmtask_v<N>" with N ≠ 1 (abi.ErrVersion, naming both versions);
// unknown or mistyped "wasmtask_v1" or WASI functions, imports from modules
// other than WASI preview1 and wasmtask_v1, or no "_start" export
// ([ErrABI]); a describe run that fails (a [*GuestError] with tool
// "describe", run within the Limits given to Load and never with more
// memory); a manifest that
// abi.DecodeManifest refuses; an inputSchema or outputSchema that the
// schema checker or github.com/google/jsonschema-go refuses ([ErrSchema]).
//
// A call's arguments are parsed once, in Module.Call, and validated against
// the compiled schema before any guest runs ([*ArgumentsError]), within the
// call's Timeout; the request the guest reads is then written around them,
// not encoded again. The guest's stdout is decoded once, by
// abi.DecodeResult within Limits.Result (a result over its counts is
// [KindOutputTooLarge], any other bad result [KindBadOutput]). A result of
// a tool that declares an outputSchema must carry structuredContent that
// conforms, unless it is a tool error ([KindBadOutput]).
//
// # Schemas
//
// The schemas a module declares are compiled at load and applied at each
// call by the schema room (host/internal/schema), which bounds their cost;
// a schema it refuses makes the load fail with [ErrSchema].
//
// Load also merges the module's active data segments into as few as
// possible (wasmcode.MergeDataSection): instantiation applies each
// segment, and a Go-built tool has tens of thousands.
//
// A module that exports "_initialize" beside "_start" is pre-initialised
// (snapshot.go, ABI.md section 13): Load runs _initialize once within the
// Limits given to Load, with the host functions trapping, and compiles a
// module whose data and globals are the state it left; calls run _start
// on fresh instances of that module. The snapshot's data is encoded
// within a plain copy of the memory it holds (at most four segments a
// page), and held against Config.MaxSnapshotMiB, shared by every module of
// the Runtime, until the module is freed ([Runtime.SnapshotBytes]); one
// that does not fit what is left is [ErrSnapshotBudget].
//
// Load does not share modules: plugins.Build loads each content digest once
// and keeps the Module across reloads. Each Module has a wazero runtime and
// compilation cache of its own, so its compiled code is freed, all of it,
// when it is closed and its last call has ended. With Config.CacheDir the
// compiled code is also kept on disk, a file per module, by the package
// compilecache: bounded by Config.MaxCacheMiB with the least recently used
// evicted, shared safely by several processes, every entry authenticated
// with the key in Config.CacheKeyFile before wazero is given it, in a
// private directory of that one compile. An entry that fails a check is
// logged (Config.Logger), removed, and the module compiled again; one
// wazero cannot read is removed and the module compiled in memory.
//
// # Load bounds
//
// Everything a module makes the host allocate or compute while it is
// loaded is bounded, each bound checked before the step it bounds
// (wasmcode.Guard), and a module past one is refused with [ErrTooLarge]
// naming it:
//
//   - its counts — types, imports, functions, globals, exports, element
//     and data entries — before any section is read into memory, each
//     weighed in bytes of code by what it costs wazero, against a compile
//     work of Config.MaxCodeMiB; a count larger than the bytes that could
//     hold its entries is malformed ([ErrCompile]): wazero's decoder would
//     allocate for it first, so no module the host cannot read reaches
//     wazero;
//   - what one instance takes — initial memory, tables at their bound,
//     globals, element and data segments, and a minimal stack — against
//     the memory limit of the Limits given to Load, before the code is
//     instrumented: a module that cannot run under its limit is a load
//     problem, not a module whose every call fails;
//   - each function, as the instrumentation walks it: its body at most
//     wasmcode.MaxFunctionBytes, its compile work (which grows with its blocks
//     squared, and with its locals squared times its blocks) and its
//     locals times blocks (the memory of its compile) within fixed bounds,
//     and the module's work in all within Config.MaxCodeMiB.
//
// The load's context bounds the whole load: the compile runs on two
// workers, so that wazero checks the context between functions (within a
// function it cannot be interrupted, which the function bounds cap), and a
// compile, describe or _initialize that returns after the deadline fails
// even when the context's timer has not fired yet.
//
// Every failure at a load limit matches [ErrLoadLimit]: [ErrTooLarge],
// describe or _initialize ending at their time, memory or output limit, a
// deadline passed while compiling, a snapshot larger than the whole of
// Config.MaxSnapshotMiB. The same bytes under the same limits fail the
// same way, so a loader need not try them again until either changes.
// [ErrSnapshotBudget] (the budget spent by other modules) does not match
// it.
//
// # Calls and the sandbox
//
// Each call instantiates the compiled module anonymously (so calls of one
// module run side by side) and runs "_start" with: stdin = one JSON
// abi.Request then EOF; stdout collected up to Limits.MaxOutputBytes (the
// write that passes it fails and ends the call: [KindOutputTooLarge]);
// stderr forwarded line by line to Events.Log and its tail kept for errors,
// both bounded by Limits.MaxLogBytes; args = the module's name only; no
// environment and no files unless Limits grant them; crypto/rand as the
// random source; real wall clock and monotonic clock; sleeps that end when
// the call does. The instance is closed on every exit path.
//
// Mounts are opened with os.Root: symbolic links and ".." cannot lead out
// of the granted directory. Read-only mounts refuse every write; writable
// mounts go through os.Root for every path operation.
//
// # Memory
//
// Limits.MemoryMiB (capped by Config.MaxMemoryMiB) bounds everything one
// call makes the host allocate for the guest, not only its linear memory:
//
//   - what an instance takes outside linear memory and the stack, counted
//     at load (memory.go): tables at the maximum the host gives them,
//     globals, element segments, the instance's records;
//   - the call stack: Load instruments every function to charge a bound of
//     its frame on entry and give it back on exit (wasmcode's stack.go), with the
//     stack's high-water mark kept, since neither engine gives a grown
//     stack back; a ref.func in the compiler engine allocates for good and
//     is charged for good;
//   - linear memory, through an experimental wazero memory allocator (on
//     Linux an anonymous mapping opened as the guest grows: no copy, only
//     touched pages resident).
//
// The stack and linear memory share what the first item leaves (the
// pool): memory.grow past it returns -1 to the guest; a frame past it
// traps. A call that ends so is [KindOutOfMemory], and so is one that
// reaches the interpreter's own frame limit. [Module.Reservation] gives
// the admission of calls the bytes one call may hold at most.
//
// # Cancellation
//
// Load instruments every guest to stop itself (fuel.go): function entries
// and loop headers count the instructions they run on a counter, and about
// every 128k instructions the guest calls a host function that ends it
// when the call's context is canceled or its Limits.Timeout has passed. A
// loop-free call tree is counted at its function entries. A bulk
// instruction (memory.fill, memory.copy, table.copy, …) is charged by its
// length: it becomes a call of an appended function that does its work in
// steps of 64 KiB or 4,096 entries and checks the fuel between them
// (wasmcode's bulk.go). That host call is also where Go can preempt the goroutine for
// its garbage collector, and it yields to the scheduler once per
// millisecond of guest work, so that spinning guests take turns with every
// other goroutine. The
// runtime is not built WithCloseOnContextDone, in either engine: it made
// every loop iteration of compiled code leave native code, and a tight
// loop ran about 20 times slower (BenchmarkSpin).
// Host functions that block (elicit, and the sleep
// behind WASI poll_oneoff) watch the context and end the guest with
// sys.ExitError when it is done, never returning into a dead call. Errors:
// [KindCanceled] (errors.Is context.Canceled) or [KindTimeout]
// (errors.Is context.DeadlineExceeded).
//
// # Host functions
//
// Module "wasmtask_v1" provides progress, status, log, elicit and reply with
// the types documented in package abi, as GoModuleFunc (no reflection).
// A pointer/length pair outside the guest's memory traps the guest with a
// message naming the function and the range. Messages of progress and
// status are truncated to 4 KiB; elicit requests over 64 KiB, not valid, or
// whose requestedSchema is not the flat form MCP allows are
// abi.ElicitBadRequest. elicit returns the byte length of the reply
// JSON (abi.ElicitReply); reply(buf, cap) copies it when cap suffices and
// returns its length either way (0 with no reply pending).
//
// # Concurrency and lifecycle
//
// Runtime and Module are safe for concurrent use. The abi.Events of one
// call are called from the goroutine running that call, one at a time.
// Module Close does not wait: calls in flight finish, then the module is
// released (Done reports it). Module Abort closes it and ends its calls in
// flight ([ErrAborted]). Runtime Close ends every running call
// (KindCanceled wrapping ErrClosed) and frees all compiled code.
package wasmrt
