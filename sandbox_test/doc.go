// Package sandbox_test is the hostile-guest suite of wasmtask: black-box
// tests that load misbehaving WebAssembly modules into the real host
// through its public API and assert that each misbehaviour fails that call
// only, with the specific outcome. The package holds no code besides its
// tests.
//
// Every case runs a *host.Server: host.New with a fixed set of modules
// (Config.ToolsFS, an fstest.MapFS) and the policy under test. Limits are
// the server's Policy, so a case that needs other limits builds another
// server. Direct cases call Server.Call, the path MCP's tools/call takes
// (admission, then a fresh instance under the tool's policy), with an
// abi.Events of their own; MCP cases open sessions with the shared test
// client of package host/hosttest, over ServeStdio pipes or over
// Streamable HTTP (Server.Handler in an httptest.Server), and that client
// checks every message it receives for Go internals in client text.
//
//	srv, err := host.New(ctx, host.Config{
//		ToolsFS: fstest.MapFS{"spin.wasm": {Data: wasm}},
//		Policy: &host.Policy{Modules: map[string]host.ModulePolicy{ // by module (file) name
//			"spin": {Tools: map[string]host.ToolPolicy{"spin": {Timeout: host.Duration(200 * time.Millisecond)}}},
//		}},
//	})
//	...
//	_, err = srv.Call(ctx, "spin", nil, nil) // a *host.GuestError of kind host.KindTimeout
//
// # Modules
//
// Every case has its own module, written in testdata/ as WAT (wat2wasm) or
// C (clang --target=wasm32-wasi with wasi-libc) and built once per process
// by hosttest.Wasm; no binary is checked in. Without a toolchain the tests
// that need it are skipped with the reason, unless CI is "true", in which
// case they fail.
//
// # What each case proves
//
// Every runtime case runs on both of wazero's engines, the compiler and
// the interpreter (Config.Interpreter). After every case a well-behaved
// module still answers on the same server, and once the server and
// everything the case opened are closed, goroutines (runtime.NumGoroutine)
// and HeapInuse (after GC, within a generous bound) are back to their
// baseline. No case asserts on time: runaways get a short Timeout, a limit
// they meet whatever the machine's speed, and waits are on channels,
// events and notifications, never on sleeps.
//
//   - TestInfiniteLoop (spin.wat): a tight loop ends at the policy's
//     timeout (KindTimeout, errors.Is context.DeadlineExceeded) and at a
//     cancel sent once the guest runs (KindCanceled, context.Canceled).
//   - TestStackOverflow (recurse.wat): unbounded recursion is
//     KindOutOfMemory ("its call stack"), not a crash, before the timeout.
//   - TestMemoryBomb (membomb.wat): memory.grow returns -1 at the policy's
//     MemoryMiB less what the instance and its stack take, and the guest
//     goes on; a guest that then fails is KindOutOfMemory naming the limit.
//   - TestInitialMemoryOverPolicy (bigmem.wat, bigdefault.wat,
//     hugemem.wat): a module whose initial memory exceeds what the policy
//     gives its tools is a load problem (Server.Problems, ErrLoadLimit)
//     and serves no tool; it runs where the policy grants enough, also
//     above the default; a limit lowered after the load refuses each call
//     before it runs.
//   - TestCallExplosion (explode.wat): an exponential call tree with no
//     loop ends at the timeout (the host's fuel check runs at function
//     entries as well as loop headers).
//   - TestStackBomb (stackbomb.wat): recursion through frames of 128 live
//     values, ref.func in a loop, recursion after memory growth end
//     KindOutOfMemory; a stack once grown stays charged, so that memory
//     grown after it gets less.
//   - TestTableBomb (tablebomb.wat), TestManyGlobals (manyglobals.wat,
//     50000 globals put in at its marker line, as WAT cannot repeat):
//     tables at their bound and globals count against MemoryMiB; a module
//     whose tables or globals exceed it is a load problem.
//   - TestHugeOutput (stdout.wat): endless stdout and a valid but oversized
//     result are KindOutputTooLarge, and the guest is stopped at once.
//   - TestHugeStderr (stderr.wat): 16 MiB of stderr forwards at most
//     MaxLogBytes of log plus one notice; a trap after 4 MiB keeps a
//     bounded stderr tail and a bounded error message.
//   - TestBadOutput (badout.wat): not JSON, wrong shape, no content, two
//     documents, empty, unknown content type, non-object structuredContent:
//     each KindBadOutput with the reason.
//   - TestUnicodeOutput (unicode.wat): lone UTF-16 surrogate escapes and
//     bytes that are not UTF-8, in text, structuredContent values and
//     member names, reach the caller and an MCP client as U+FFFD.
//   - TestNumbersOutput (bignum.wat): 1e400, a 400-digit integer and
//     -1e309 are KindBadOutput; the largest float64 and 1e-400 pass.
//   - TestResultCounts (blocks.c): 20,000 content blocks, 150,000 values
//     and 102 levels of nesting, all within the byte limit, are refused
//     (too large, too large, invalid) under the default counts, also over
//     MCP, and pass where the policy raises the tool's limit.
//   - TestLoadingIsBounded (slowdescribe.wat, and modules generated in the
//     test): code over the policy's maxCodeMiB and a function body over
//     1 MiB are load problems naming the bound, refused before they are
//     compiled; a describe that never answers ends at the load limits; the
//     good module answers as soon as it has loaded, whatever the others do.
//     TestLoadTimeout: a load past the policy's loadTimeout is a problem
//     that says so.
//   - TestLoadCostBounded (modules generated in the test): a million
//     globals, globals past the memory limit, 100,000 functions, locals
//     live across many loops, deep loop nests, br_table and select over
//     many locals, 4 MiB of element entries, 1.2 million data segments,
//     and counts that promise more entries than their bytes hold, are each
//     a load problem naming the bound (ErrLoadLimit, or ErrCompile for the
//     malformed ones), refused before they are compiled: the process
//     allocates little more than the module's bytes to refuse them.
//   - TestSnapshotBounded (snapfill.wat): a snapshot of 24 MiB of
//     alternating bytes holds no more than the memory it copies; six such
//     modules fill the snapshot budget and the rest are problems of the
//     budget (ErrSnapshotBudget); under a limit too small for its memory
//     its _initialize runs out of memory and it is a load problem.
//     TestSlowDescribeLoads (slowok.wat): a describe that takes a second
//     loads.
//   - TestTrapAfterPartialOutput (partial.wat): half an answer then a trap
//     is KindTrap with the stderr tail; the partial stdout is not used.
//   - TestWildPointers (wild.wat): each wasmtask_v1 function given a
//     pointer/length outside memory traps the guest with a message naming
//     the function and the range; WASI fd_write answers EFAULT instead.
//   - TestForbiddenImports (import_*.wat): unknown or mistyped wasmtask_v1
//     functions, foreign modules, imported memory, another ABI version and
//     a WASI function that does not exist are load problems naming the
//     module and the import; the server serves the other modules.
//   - TestBlockedInElicit (elicitwait.wat): a guest blocked in elicit ends
//     at a cancel and at its timeout.
//   - TestNoStateBetweenCalls (state.wat): globals and memory start fresh
//     in every call, sequential or concurrent.
//   - TestCallGates (elicitwait.wat): Server.Call is admitted like
//     tools/call: beyond a tool's MaxConcurrency calls wait in a queue of
//     MaxQueue and the rest fail at once with host.ErrBusy; a module's
//     MaxInstances and the server-wide MaxInstances do the same.
//   - TestModuleCannotTakeAllInstances (elicitwait.wat): with the default
//     module cap, a module whose calls block forever leaves instance slots
//     to other modules.
//   - TestMemoryBudget (elicitwait.wat, state.wat): the memory budget holds
//     calls back and admits them when memory frees; a tool whose one call
//     could never fit fails at once (host.ErrMemoryBudget, a clear tool
//     error over MCP) and is a problem.
//   - TestGrantsBindToModules (envargs.c under two file names): grants are
//     written for a module file; the module that loses a tool name to
//     another never lends its grants to the winner, and a digest pin the
//     file does not match grants nothing and is a problem.
//   - TestMountEscapes, TestMountLinkFlippedDuringCall (fsprobe.c): "..",
//     absolute paths, symbolic links planted before the call, planted by
//     the guest, or swapped during the call cannot leave an os.Root mount;
//     a read-only mount refuses every change; granted paths work.
//   - TestEnvAndArgs (envargs.c): no environment unless granted, granted
//     variables only (Env and PassEnv), argv is the module name alone.
//   - TestClockAndRandom (clockrand.c): documents what the host gives: the
//     real wall clock, a real monotonic clock (1 ns resolution), and
//     crypto/rand bytes that differ per instance.
//   - TestPolicyFileGrants: over MCP, the same modules are denied a mount
//     and environment without a policy and granted them by a policy file
//     read with host.LoadPolicy.
//   - TestCompileCacheHostileEntries (normal.wat, state.wat): an entry of
//     the compile cache replaced by a named pipe, a symbolic link, a
//     directory in wazero's own layout, a sparse file past its bound, a
//     file of another user, a truncated or forged entry, another module's
//     entry, or one written with another key is refused with a log line
//     naming the module and why; the module is compiled again (counted by
//     the entries stored), served, and its entry replaced by one the next
//     server reads without compiling. Compiler only: the interpreter keeps
//     no code on disk, and TestCompileCacheInterpreter shows it leaves the
//     cache alone. TestCompileCacheKeyRefused: a key others may read, or
//     one inside the cache, stops the server from starting, naming it.
//   - TestMCPHostileCalls: over MCP a runaway, a stack overflow and an
//     out-of-memory guest are tool errors (isError) naming the cause; a
//     runaway task ends failed with the reason in tasks/result; a task
//     blocked in elicit is input_required (waited for on
//     notifications/tasks/status) until tasks/cancel makes it cancelled;
//     another session is served throughout and afterwards.
//   - TestMCPToolErrors: every other hostile failure (bad output, output
//     too large, traps with stderr, wild pointers, a call explosion) is a
//     tool error worded for the client, and the session goes on.
//   - TestMCPConcurrencyBounded: task calls beyond MaxConcurrency wait in a
//     queue of MaxQueue, the rest fail at once as busy; MaxInstances leaves
//     room for other modules.
//   - TestMCPManySessions: concurrent sessions over stdio and Streamable
//     HTTP, each with a runaway, all end and release their resources.
//
// # Measurements
//
// Measurements are benchmarks; they assert outcomes, never times or sizes:
//
//	go test -run '^$' -bench . -benchtime 200x ./sandbox_test/
//
// BenchmarkRunawaySurvival reports p50/p99/max of how long a runaway
// survives its deadline or cancel; BenchmarkBlockedInstances the host
// memory and goroutines per instance blocked in elicit;
// BenchmarkStackOverflow the host memory one stack overflow allocates
// (the guest's stack, charged to MemoryMiB with linear memory);
// BenchmarkPeakRSS the peak resident memory of one call of each memory
// case over its grant, each in a process of its own (-benchtime 1x);
// BenchmarkDeadlineOverrun p50/p99/max of how long every guest that only
// its deadline stops (loops, call trees, host-call floods) runs past it;
// BenchmarkLoadWhileWorstLoads when a good module answers while the most
// expensive module the default limits admit compiles, and when that load
// ends; BenchmarkLoadPeak the peak RSS and time of the load of the worst
// module of each class the default bounds admit, each in a process of its
// own (-benchtime 1x); BenchmarkOutputRSS the peak resident memory per MiB
// of a 61.8 MiB result served over Streamable HTTP, as 2.4 million
// one-character blocks (with the counts unlimited, and under the defaults),
// as 10,000 blocks and as one block, each in a process of its own
// (-benchtime 1x).
package sandbox_test
