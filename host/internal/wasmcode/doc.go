// Package wasmcode rewrites a WebAssembly module's bytes into the module
// the host compiles, and reports the facts it found while doing so. It is
// the one place that reads and writes Wasm bytecode; it imports nothing but
// the standard library (a new Wasm proposal lands here alone), and runs no
// guest code: the runtime (host/internal/wasmrt) compiles and runs what it
// writes.
//
// [Guard] is the entry point of a load. In one pass over the module it
//
//   - bounds the load before each step that would spend it (loadbounds.go):
//     section and item counts, one instance's memory beside its linear
//     memory and the least stack ([Options.MaxMemory]), each function's
//     compile work and the module's ([Options.MaxWork]) — a refusal
//     matches [ErrTooLarge];
//   - charges every function entry and loop header to a fuel counter whose
//     check it imports from [FuelModule] (fuel.go), and every bulk
//     instruction by its length, in steps (bulk.go);
//   - charges every function's stack frame to the call's memory pool, two
//     exported globals ([LeftExport], [LowExport]) the runtime sets before
//     the guest runs (stack.go);
//   - moves a start function to the [StartExport] export, bounds every
//     table, and refuses instructions beyond Wasm 2.0 and references to
//     indices the module does not define (guard.go).
//
// It returns the rewritten bytes with what one instance costs the host
// outside linear memory ([Guarded.Static], measured on wazero's engines:
// cost.go), every function's frame charge and the module's compile work.
//
// Two rewrites run beside it: [MergeDataSection] joins a module's active
// data segments into few (datamerge.go), and a pre-initialised module's
// snapshot is written by [ExposeGlobals] (which exports the mutable
// globals for the runtime to read after _initialize) and
// [Preinit.Rewrite] (which writes the memory and globals the runtime
// captured into a module that starts from them; snapshot.go). A snapshot's
// data section is bounded whatever the guest left in memory
// ([SnapshotDataSize]).
//
// Why a room of its own: the rewrite is most of the sandbox's code and none
// of it needs the engine; kept apart, it is read, fuzzed (FuzzGuard,
// FuzzMergeData, FuzzSnapshotData) and reviewed as what it is, a
// translation of bytes, and the runtime keeps to running guests.
package wasmcode
