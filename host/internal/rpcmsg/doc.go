// Package rpcmsg decodes one JSON-RPC 2.0 message into go-sdk's jsonrpc
// types, with the standard library, for the transports of our own (stdio's
// line reader, the HTTP edge's POST bodies).
//
// It reads a message as go-sdk's jsonrpc.DecodeMessage does — member names
// matched exactly, "jsonrpc" must be "2.0", a message with "method" is a
// request, one without must carry an ID — but without a fresh 32 KiB
// decoder buffer per message, which on the hot path of a small tool call
// was half of what the call allocated (RATIONALE: "Why do the transports
// decode JSON-RPC messages themselves?"). Params, results and error data
// stay raw: go-sdk decodes them where it always does.
//
// [Members] reads one object's members as exactly as the rooms that answer
// a request before go-sdk must (repeated names refused), so that they and
// go-sdk never read two different requests from one body.
package rpcmsg
