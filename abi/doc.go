// Package abi is the contract between the wasmtask host and a tool module:
// the ABI version, the names of the export and of the optional host imports,
// and the JSON message types that cross the boundary, with pure functions to
// decode and validate them. It imports only the standard library and has no
// mutable state. The full specification, written for tool authors in any
// language, is ABI.md in this directory.
//
// # ABI v1 in short
//
// A tool module is a WASI preview1 command (it exports "_start"). The host
// runs a fresh instance for every request:
//
//   - stdin holds exactly one JSON [Request], then end of file;
//   - for {"abi":1,"method":"describe"} the module writes its [Manifest] to
//     stdout; the host does this once at load time, in the sandbox, with tight
//     limits, and validates the answer with [DecodeManifest];
//   - for {"abi":1,"method":"call","tool":…,"arguments":{…}} it writes one
//     [Result] (an MCP CallToolResult) to stdout; [DecodeResult] validates it;
//   - exit code 0 means stdout holds the answer; any other exit, a trap, or
//     output that does not decode is a tool error reported with the module's
//     name, the cause and the tail of stderr;
//   - stderr is captured (bounded) as the tool's log.
//
// A module may import any of the functions of import module [ImportModule]
// ("wasmtask_v1") to report progress, set its status message, log, or ask the
// user for input (elicit + reply). A module that imports none still works. A
// module importing from "wasmtask_v<N>" with N ≠ 1, or whose manifest says
// another "abi", is refused at load with a message that names both versions.
//
// The Go guest SDK, in package abi/guest, builds with GOOS=wasip1 GOARCH=wasm
// and makes a tool a few lines.
package abi
