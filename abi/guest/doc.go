// Package guest is the Go SDK for writing wasmtask tools: it turns a few
// declarations and typed handlers into a WASI preview1 command that speaks
// ABI v1 (see ../ABI.md). Build a tool with
//
//	GOOS=wasip1 GOARCH=wasm go build -o tool.wasm .
//
// A complete tool:
//
//	type greetArgs struct {
//		Name string `json:"name"`
//	}
//
//	func main() {
//		guest.Run(guest.Tool{
//			Name:        "greet",
//			Description: "Greets someone.",
//			InputSchema: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
//			Handler: guest.Handle(func(c *guest.Call, in greetArgs) (guest.Result, error) {
//				return guest.Text("Hello, " + in.Name + "!"), nil
//			}),
//		})
//	}
//
// # In your module
//
// The SDK is part of the module github.com/wasmtask/wasmtask. Until the
// module is published, a tool's module points at a clone:
//
//	go mod init example.com/mytool
//	go mod edit -require=github.com/wasmtask/wasmtask@v0.0.0 -replace=github.com/wasmtask/wasmtask=../wasmtask
//	go mod tidy
//
// After the first release, go get github.com/wasmtask/wasmtask@latest
// instead, with no replace directive.
//
// The host's own dependencies (wazero, the MCP SDK, …) stay out of the
// tool's go.sum and build: the module graph is pruned at wasmtask, and
// this package imports only the standard library and
// github.com/wasmtask/wasmtask/abi.
//
// # What it owns
//
// The package reads the one request on stdin, answers "describe" with the
// manifest built from the [Tool] declarations, dispatches "call" to the
// tool's [Handler], and writes the [Result]. A handler's error becomes a
// tool error (isError: true) whose text is the error's message; a panic in a
// handler becomes a tool error too. [Call] gives the handler the optional
// host functions: progress, status, log and elicitation.
//
// It does not validate arguments against the input schema (the host does),
// and it has no state between calls: the host runs a fresh instance per call.
//
// # Pre-initialised builds
//
// Built as a reactor with the build tag wasmtask_preinit,
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -tags wasmtask_preinit -o tool.wasm .
//
// a tool is pre-initialisable (ABI.md section 13): the host runs the Go
// runtime's start-up and every package initialiser once, at load, and each
// call starts a fresh instance from the state they left, then runs main.
// In such a build the package also prepares encoding/json while the
// packages initialise, so that calls do not rebuild its per-type caches:
// for its own request and result types, for the argument type of every
// handler built with [Handle] in a package-level variable or an init
// function, and for the types a tool names with [Warm] (what a handler
// passes to [Structured], say). An initialiser must not call a [Call]
// method or depend on a call: there is none yet.
//
// # Platforms
//
// On GOOS=wasip1 the host functions are Wasm imports from "wasmtask_v1".
// Everywhere else (so that go vet and host-side tests compile) they are
// stubs: progress and status do nothing, log writes to stderr, and elicit
// reports [ErrElicitUnsupported].
//
// # Concurrency
//
// One instance serves one request. A [Call] may be used from several
// goroutines of its handler; host functions are called one at a time.
package guest
