// Package mcphttp is wasmtask's Streamable HTTP edge: the checks every
// request passes before MCP, the sessions of the 2025-11-25 era and the
// streams their messages travel on. The MCP layer behind it ([MCP], the
// MCP room's Server) serves each session over the connection this room
// hands it; this room knows nothing of tools or tasks.
//
//	edge, err := mcphttp.New(mcphttp.Config{MCP: protocol, Auth: auth, Denied: protocol.AuditDenied})
//	...
//	mux.Handle("/", edge) // serves /mcp and, with Auth, the metadata document
//	...
//	edge.Close() // ends every session (its requests answered first)
//
// # The front (front.go, authn.go)
//
// Before anything reads a request's body, the front checks its method,
// Host (Config.AllowedHosts; without them a loopback listener takes
// loopback names only), Origin (the endpoint's own or
// Config.AllowedOrigins), content type and, with Config.Auth, its bearer
// token (go-sdk's auth middleware; the tenant becomes the TokenInfo's
// UserID); then the tenant's request rate, the caps on sessions (total,
// per tenant) and on requests in flight (per session, per tenant). A
// refusal is a status code and one line, reported to Config.Denied (the
// audit line and the refusal metric), and changes nothing. Each write of
// a response has its own deadline (Config.WriteTimeout), so a stream lives
// as long as its client reads it.
//
// # Sessions (session.go, conn.go)
//
// A POST without Mcp-Session-Id must hold an initialize: it opens a
// session (a fresh random ID, bound to the tenant that opened it; another
// tenant's request on it is refused with 403) whose connection goes to
// MCP.Connect. Any other request without a session gets 400 and a JSON-RPC
// error naming initialize; an unknown session 404. A body holds one
// message (JSON-RPC batches are refused: MCP has none since 2025-06-18).
// The Mcp-Protocol-Version header, when present, must be one of go-sdk's
// mcp.SupportedProtocolVersions (or 2026-07-28 and later, below). DELETE
// ends the session: the MCP layer releases its blocked requests, which are
// answered, then it closes. A session with no POST in flight for
// Config.SessionTimeout ends the same way.
//
// The session's connection (conn) is an mcp.Connection of our own: each
// POST hands it one message. A request's POST waits for its answer and is
// answered as one JSON body when the answer is the first thing written for
// it; it becomes an event stream when something precedes the answer (a
// progress notification, a log message, a question to the client), or
// after two seconds without an answer, so a client waiting for a long
// call sees its POST accepted. What the MCP layer writes for a request
// goes on that request's stream (it names the request with
// conn.WithRequest); what belongs to no request (notifications/tasks/status,
// tools/list_changed) goes on the session's one GET stream, or nowhere
// when none is open. A POST that ends before its answer (the client went
// away) cancels its request as a notifications/cancelled would. Responses
// and notifications from the client are answered 202.
//
// # 2026-07-28 (modern.go)
//
// A request whose Mcp-Protocol-Version is 2026-07-28 or later opens no
// session: go-sdk's stateless handler serves it, as one JSON body when it
// asks for no progress or calls a tool that reports none
// (MCP.MayReportProgress), else on an event stream; its handler ends with
// its POST. The task methods of that era need Mcp-Name = params.taskId
// (-32020), which go-sdk checks for tools/call only.
//
// # Connections (listener.go)
//
// [LimitConnections] wraps the listener host.Server.Serve accepts on: at
// most a total and a per-address number of connections open at once, and
// at either bound the connection idle the longest (as net/http's ConnState
// hook reports it) is closed to admit a new one; a new connection from an
// address whose connections are all busy is closed unanswered.
//
// # go-sdk workarounds (v1.8.0) and the upstream change that retires each
//
//   - go-sdk's StreamableServerTransport serves only the methods go-sdk
//     knows unless its own handler connected it (the hook is unexported):
//     outside that handler every custom method (tasks/*) is refused with
//     400. The session table and the connection are therefore ours
//     (session.go, conn.go), on go-sdk's exported mcp.Connection. Retired by
//     an exported way to connect a StreamableServerTransport to a server.
//   - 2026-07-28 requests stay with go-sdk's stateless handler (their
//     header and _meta checks, subscriptions/listen, and the era's
//     validation are go-sdk's): go-sdk words the errors of params it
//     cannot decode with Go types, and it writes them itself, so the
//     answers of that path alone pass a byte-level rewording
//     (errorRewriter, through MCP.ClientMessage); and it picks JSON or an
//     event stream per handler, so a second handler with JSONResponse
//     serves the requests that can receive nothing before their answer.
//     Retired by a per-request response mode and decode errors worded in
//     JSON terms.
package mcphttp
