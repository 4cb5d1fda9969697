// Package mcperr decides what an MCP client is told when something fails:
// the JSON-RPC errors (codes and messages), the text of tool errors
// (isError results) and the status messages of tasks that ended with an
// error. It is part of the MCP layer: no other room writes client text;
// they return errors, whose full text goes to the server log, and
// host/internal/mcpserver answers with the words chosen here.
//
// It owns: the [Failure] a catalog reports for a call that ended without a
// result and its wording ([FailureText], [FailureTextOf]); a task's end
// ([TaskEndText]); the task engine's errors as JSON-RPC errors ([Engine]);
// -32601 errors that keep their message ([MethodNotFound]); the "limit
// reached" code ([CodeLimit]); an answer mcpevents refuses
// ([RefusedAnswer]); and the errors a session's connection writes,
// go-sdk's decode errors reworded in JSON terms ([Conn], [ClientMessage]).
// It does not own deciding that something failed or why (the catalog and
// the task engine do), nor sending the error (mcpserver and the
// connection do).
//
//	return nil, mcperr.RPC(jsonrpc.CodeInvalidParams, "unknown tool %q", name)
//	...
//	if err != nil {
//		return nil, mcperr.Engine(err, id) // "task not found: …", -32000 for a limit, …
//	}
//	...
//	text := mcperr.FailureText(tool, err) // "tool \"x\" ran out of time"
//
// No text it returns names a Go package, type or configuration field, and
// the messages are the protocol's golden bytes: a change here is a change
// of what every client reads (host/internal/mcpserver's golden tests).
//
// Its functions are pure and safe for concurrent use; it holds no state.
package mcperr
