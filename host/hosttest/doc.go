// Package hosttest is the one MCP test client of wasmtask's tests, in the
// spirit of net/http/httptest: a small JSON-RPC client for a session over
// newline-delimited JSON (stdio, [Client]) or Streamable HTTP ([HTTPClient]),
// and a checker that every text a client receives is fit for a client
// ([CheckClientText]: it names no Go package, Go type or configuration
// field). Both clients run the checker on every message they receive, so
// the whole suite checks it.
//
// It also builds the Wasm fixtures of the tests once per process
// ([Wasm]), and ends a test whose toolchain is missing the same way
// everywhere ([MissingToolchain]: a skip that .ci/test reports, a failure
// under CI=true).
//
// The clients are deliberately raw: the tests check the wire (params.task,
// malformed input, error codes) that a typed SDK client would hide. They
// never sleep or time out on their own; a test that waits forever is ended
// by go test's -timeout with every goroutine's stack.
package hosttest
