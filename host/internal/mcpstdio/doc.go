// Package mcpstdio is the stdio transport: an mcp.Connection over
// newline-delimited JSON-RPC on a process's stdin and stdout, which the MCP
// room serves as one session (behind its task decorator, as every
// transport).
//
// It replaces go-sdk's own io connection because a line that is not JSON,
// not a JSON-RPC message, or too long gets a JSON-RPC error and the
// session goes on (go-sdk's connection ends the session on the first such
// line). Batches are answered with -32600: JSON-RPC batching is not part
// of MCP since 2025-06-18. Messages are decoded by package rpcmsg, as the
// HTTP edge decodes them.
//
// At the end of input the connection waits, bounded, until the requests
// it read are answered before it reports EOF, so that a client that
// writes its requests and closes its end still gets every answer.
package mcpstdio
