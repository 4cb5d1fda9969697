// Package mcpwire holds the MCP messages wasmtask writes and reads beyond
// go-sdk's types, as Go values, and the pure work on them: tools as both
// protocol eras list them, CallToolResult and its content, the tasks of
// the 2025-11-25 protocol and of the 2026-07-28 tasks extension with their
// params and results and the related-task _meta, the input requests of a 2026-07-28 round and their
// keys, the check of a client's answer to a tool's question
// ([CheckAnswer]), and the lifting of a tools/call's params.task past
// go-sdk's decoder ([LiftTaskParams]).
//
// It serves nothing and keeps no state: the MCP room
// (host/internal/mcpserver) decides what to send and words the errors a
// client sees, but for the refusals of CheckAnswer and
// DecodeElicitResult, which say what in an answer does not fit its
// question.
package mcpwire
