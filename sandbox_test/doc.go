// Package sandbox_test is the hostile-guest suite of wasmtask: black-box
// tests that load misbehaving WebAssembly modules into the real host
// through its public API (host.Runtime for direct calls, host.New and an
// MCP session over ServeStdio pipes for server-level cases) and assert
// that each misbehaviour fails that call only, with the specific outcome.
// The package holds no code besides its tests.
//
// # Modules
//
// Every case has its own module, written in testdata/ as WAT (wat2wasm) or
// C (clang --target=wasm32-wasi with wasi-libc). TestMain compiles them
// into a temporary directory; no binary is checked in. Without a toolchain
// the tests that need it are skipped with the reason, unless CI is "true",
// in which case the run fails.
//
// # What each case proves
//
// After every case a well-behaved module still answers on the same runtime
// or server, and goroutines (runtime.NumGoroutine, polled with a deadline)
// and HeapInuse (after GC, within a generous bound) return to their
// baseline. Cases where the engine matters (loops, recursion, memory,
// cancellation) run under wazero's compiler and interpreter.
//
//   - TestInfiniteLoop (spin.wat): a tight loop ends at the policy's
//     timeout (KindTimeout, errors.Is context.DeadlineExceeded) and at a
//     cancel (KindCanceled, context.Canceled).
//   - TestStackOverflow (recurse.wat): unbounded recursion is a trap
//     "stack overflow", not a crash; it logs the host memory one overflow
//     allocates (the compiler's guest stack lives outside linear memory).
//   - TestMemoryBomb (membomb.wat): memory.grow returns -1 at exactly the
//     policy's MemoryMiB and the guest goes on; a guest that then fails is
//     KindOutOfMemory naming the limit.
//   - TestInitialMemoryOverPolicy (bigmem.wat, hugemem.wat): a module whose
//     initial memory exceeds the policy is refused per call before it runs;
//     one over the runtime ceiling is refused at load.
//   - TestCallExplosion (explode.wat): an exponential call tree with no
//     loop ends at the timeout and at a cancel (wazero checks only at loop
//     headers; the host puts an empty loop at every function's entry).
//   - TestHugeOutput (stdout.wat): endless stdout and a valid but oversized
//     result are KindOutputTooLarge, and the guest is stopped at once.
//   - TestHugeStderr (stderr.wat): 16 MiB of stderr forwards at most
//     MaxLogBytes of log plus one notice; a trap after 4 MiB keeps a
//     bounded stderr tail and a bounded error message.
//   - TestBadOutput (badout.wat): not JSON, wrong shape, no content, two
//     documents, empty, unknown content type, non-object structuredContent:
//     each KindBadOutput "invalid result: …" with the reason.
//   - TestTrapAfterPartialOutput (partial.wat): half an answer then a trap
//     is KindTrap with the stderr tail; the partial stdout is not used.
//   - TestWildPointers (wild.wat): each wasmtask_v1 function given a
//     pointer/length outside memory traps the guest with a message naming
//     the function and the range; WASI fd_write answers EFAULT instead.
//   - TestForbiddenImports (import_*.wat): unknown or mistyped wasmtask_v1
//     functions, foreign modules, imported memory, another ABI version and
//     a WASI function that does not exist are refused at load, naming the
//     module and the import.
//   - TestBlockedInElicit (elicitwait.wat): a guest blocked in elicit ends
//     at a cancel and at its timeout.
//   - TestNoStateBetweenCalls (state.wat): globals and memory start fresh
//     in every call, sequential or concurrent.
//   - TestRuntimeHasNoGate: the Runtime facade does not apply
//     MaxConcurrency/MaxQueue (documented); the Server is the gated path.
//   - TestMountEscapes, TestMountLinkFlippedDuringCall (fsprobe.c): "..",
//     absolute paths, symbolic links planted before the call, planted by
//     the guest, or swapped during the call cannot leave an os.Root mount;
//     a read-only mount refuses every change; granted paths work.
//   - TestEnvAndArgs (envargs.c): no environment unless granted, granted
//     variables only (Env and PassEnv), argv is the module name alone.
//   - TestClockAndRandom (clockrand.c): documents what the host gives: the
//     real wall clock, a real monotonic clock (1 ns resolution), and
//     crypto/rand bytes that differ per instance.
//   - TestPolicyFileGrants: the same modules served by host.New are denied
//     a mount and environment without a policy and granted them by a
//     policy file read with host.LoadPolicy.
//   - TestMCPHostileCalls: over MCP a runaway, a stack overflow and an
//     out-of-memory guest are tool errors (isError) naming the cause; a
//     runaway task ends failed with the reason in tasks/result; a task
//     blocked in elicit is input_required until tasks/cancel makes it
//     cancelled; another session is served throughout and afterwards.
//   - TestMCPConcurrencyBounded: calls beyond MaxConcurrency wait in a
//     queue of MaxQueue, the rest fail at once as busy; MaxInstances leaves
//     room for other tools.
//   - TestMCPManySessions: concurrent sessions with runaways all end and
//     release their resources.
//
// # Measurements
//
// TestMeasureRunawaySurvival logs p50/p99 of how long a runaway survives
// its deadline or cancel (-sandbox.runs=200 for the reported numbers);
// TestMeasureBlockedInstances logs the host memory per instance blocked in
// elicit. Neither asserts on time or size.
package sandbox_test
