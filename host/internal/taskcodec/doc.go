// Package taskcodec encodes the MCP layer's task values for a task store
// that replicas share: the task's [Meta] (the tool it runs), its outcome
// (a CallToolResult, a JSON-RPC error or an mcperr.Failure), the input
// requests its tool asked and their answers. A replica decodes them into
// the same values, so it renders a task exactly as the replica that ran it.
//
//	cfg := taskengine.Config{Shared: store, Peers: store, Codec: taskcodec.New()}
//	...
//	engine.Submit(ctx, owner, taskengine.SubmitOptions{Meta: &taskcodec.Meta{Tool: tool, Attrs: attrs}}, work)
//
// It owns the stored form of those values (JSON) and nothing else: the
// engine owns the store and its records, host/internal/mcpserver creates
// and renders the tasks, host/internal/mcperr words their failures. What
// it decodes is the engine's and the store's bytes, never a client's.
//
// The codec holds no state and is safe for concurrent use.
package taskcodec
