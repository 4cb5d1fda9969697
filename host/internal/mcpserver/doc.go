// Package mcpserver is wasmtask's MCP protocol layer: it serves the host's
// tool [Catalog] over any connection with the official go-sdk, and adds
// tasks on top of it, backed by one taskengine.Engine, in both protocol
// eras: the 2025-11-25 task protocol and the 2026-07-28 tasks extension
// (io.modelcontextprotocol/tasks). It serves stdio (ServeStdio) on the
// stdio transport's connection (host/internal/mcpstdio); Streamable HTTP
// is the HTTP room's (host/internal/mcphttp), which owns the sessions and
// hands each one's connection to [Server.Connect]. It never touches HTTP.
// Every session's connection passes through host/internal/mcpconn, and a
// running tool's events (progress, logs, questions) reach the client
// through host/internal/mcpevents.
//
//	s, err := mcpserver.New(mcpserver.Config{Catalog: current, Engine: engine, Logger: logger})
//	...
//	go s.ServeStdio(ctx, os.Stdin, os.Stdout) // or, over HTTP:
//	edge, err := mcphttp.New(mcphttp.Config{MCP: s, Denied: s.AuditDenied})
//	...
//	s.ToolsChanged() // after a reload that changed the tool list
//	...
//	s.Drain(ctx)     // on shutdown: no new calls, wait for those in flight
//	s.Close()        // then engine.Close()
//
// It owns: capability and tools/list rendering (capabilities.tasks,
// execution.taskSupport), tools/call dispatch through the catalog (plain or
// task, the taskSupport rules, the argument size), the resources, resource
// templates, prompts and completions of a catalog that serves them
// (primitives.go: paged lists, who sees what, subscriptions), tasks/get, tasks/result,
// tasks/list, tasks/cancel, tasks/update, sessions and who requests, task
// ownership, which requests are answered before go-sdk, the audit log
// (task creation, completion, cancellation, retrieval) and every text a
// client reads (worded by host/internal/mcperr). It does not own HTTP
// (mcphttp does), the session connection's bookkeeping (mcpconn does), a
// tool's events and questions on their way to the client and its answers
// back (mcpevents does), running tools, nor parsing and validating their
// arguments (the Catalog does, once, inside the call's admission and
// deadline), nor the task store, its limits and TTLs (taskengine does).
//
// # Client-facing text
//
// Other rooms return errors; this layer words them, with the words of
// host/internal/mcperr. A failed call is an mcperr.Failure (kind, detail,
// the tool's stderr tail) that mcperr turns into the tool error's text; a
// task the engine ended carries its reason (taskengine.Task.Err) and its
// status message is mcperr's; go-sdk's own errors for params it cannot
// decode, which quote Go types, are reworded as jsonrpc.Message values by
// the connection every transport goes through (mcpconn.Conn, with
// mcperr.Conn); an answer mcpevents refuses is a RefusedAnswer worded by
// mcperr. No text a client reads names a Go package, type or
// configuration field; the full error goes to the server log.
//
// # Tasks
//
// A tools/call with params.task on an optional or required tool is submitted
// to the engine and answered at once with a CreateTaskResult; the tool runs
// from the engine's own context, detached from the request. tasks/result
// blocks until the task is terminal and returns exactly what tools/call
// would have (the CallToolResult with the related-task _meta, or the same
// JSON-RPC error); an isError result makes the task failed. A cancelled task
// answers tasks/result with -32603. A task's progress, logs and questions
// travel as mcpevents says (a waiting tasks/result delivers its questions,
// on its stream). A 2026-07-28 answer that fails its check
// (mcpwire.CheckAnswer, CheckSampleAnswer, CheckRootsAnswer) is refused
// with -32602 naming its key (the input round answers the error;
// tasks/update answers none of its responses and the question stays
// open).
//
// # Resources, prompts and completion (primitives.go)
//
// A catalog that implements [Primitives] serves them; each request reads
// the current catalog once, is filtered by Config.Visible (a hidden
// declaration is absent from lists and unknown to requests, and never
// runs) and, for reads, prompts and completions, runs through the catalog
// as a call does. Lists are paged by an opaque offset cursor (listPage).
// A read of what nothing visible serves is MCP's -32002; a module's own
// protocol error keeps its code. go-sdk keeps resource subscriptions and
// delivers notifications/resources/updated; the Server records the URIs
// followed too (bounded per session and per subscriptions/listen request)
// so that ResourcesUpdated can name the ones a catalog swap changed.
//
// A call may also ask its client for a model's message and for its roots
// (mcpevents: abi.Asker) when the client declared sampling or roots: a
// plain 2025-11-25 call on its stream, a task through its input requests,
// a 2026-07-28 request in its input rounds. A tool that declares
// `requires` is refused with -32021 to a client that lacks one.
//
// # 2026-07-28 (modern.go, mrtr.go)
//
// A request whose own _meta names protocol 2026-07-28 or later is served
// statelessly: over HTTP by go-sdk's stateless handler (in the HTTP room), on the
// same server, chosen by the MCP-Protocol-Version header; on stdio by the
// same connection. It records no session. Its era and capabilities come
// from its _meta alone. tools/call creates a task for a tool whose task
// support allows it when the request declares the extension (a required
// tool without it: -32021) and answers a flat CreateTaskResult; tasks/get
// renders the task with the payload of its status (inputRequests, result,
// error; a tool error is completed, a protocol error failed);
// tasks/update answers pending input requests, ignoring unknown keys
// unread; tasks/cancel is an idempotent ack; tasks/result and tasks/list
// are -32601. Over HTTP the task methods need Mcp-Name = params.taskId
// (-32020). No progress or log notifications. A plain call whose tool
// asks a question answers input_required and is run again, fresh, with
// the answers (mrtr.go, mcpevents.Round), as is a prompts/get whose
// prompt asks; the result's requestState, sealed by roundstate and bound
// to the tenant, method, name and arguments, carries the answers taken
// so far, and one that does not open is -32602. A tool's x-mcp-header
// parameters are held to their Mcp-Param-* headers (-32020; the HTTP
// room refuses a mismatch with HTTP 400 first, through
// CheckParamHeaders). A tool with taskStart
// begin_task runs that way until it calls begin_task, when its task is
// created. Either era reads the other's tasks of the same owner;
// anonymous 2026-07-28 tasks over HTTP share one owner, their IDs being
// the handles.
//
// notifications/tasks/status is sent for each status change of a
// 2025-11-25 task (mcpconn.StatusRelay), after the response that announced
// the task: on stdio, and over Streamable HTTP on the session's GET stream
// when one is open (the spec makes it optional; clients also poll with
// tasks/get).
//
// # Ownership and security
//
// A task belongs to the auth user (go-sdk's auth.TokenInfo.UserID, read
// from the request's extra by the receiving middleware, or where the
// request is answered before go-sdk) when one is known, so it can be
// fetched again from a new session of the same user; otherwise to the
// session that created it. Requests for another owner's task get -32602,
// exactly as for an unknown or expired ID, and tasks/list shows only the
// requestor's tasks. Task IDs are 130-bit random (taskengine). The maximum
// TTL and the running tasks per requestor come from the engine's Config;
// exceeding the latter gives JSON-RPC error -32000 with a clear message.
//
// # Robustness
//
// Every request go-sdk serves goes through a middleware that recovers
// panics (-32603), and so does every request answered before go-sdk.
// A request reusing the ID of one still unanswered on its session is
// refused with -32600 by its connection, whichever path serves the first.
// Task methods accept a missing or null params (tasks/list needs none).
// On stdio, a line that is not JSON (-32700), a batch or an invalid message
// (-32600), or a line over MaxMessageBytes (-32600) is answered and the
// session goes on. Arguments that are not an object or exceed
// MaxArgumentBytes get -32602; arguments failing the tool's input schema are
// a tool error (isError), as MCP 2025-11-25 asks. A task is announced by
// request ID: the code that creates it tells the connection which
// response carries it (mcpconn.Conn.ExpectTask), and the task's status
// notifications wait for that response.
//
// # Requests answered before go-sdk (ownanswers.go)
//
// Of a 2025-11-25 session, tools/call, tasks/get, tasks/cancel and the
// tasks/result of a task this replica holds that has ended are answered
// as the connection reads them, by the same handlers go-sdk would call, in
// a goroutine of the Server: go-sdk decodes each request's params several
// times with a fresh 32 KiB buffer. Only requests go-sdk would read alike
// are taken (mcpconn.CallParams, mcpconn.TaskParams); the rest, and every
// request of a 2026-07-28 session, are go-sdk's.
//
// # Concurrency and lifecycle
//
// A Server is safe for concurrent use. Each session has a context that ends
// when the session ends (stdio EOF, HTTP DELETE, idle timeout) or the Server
// closes; blocked tasks/result and plain tool calls watch it, so neither
// session close nor Close waits for a task. Tasks outlive their session
// until their TTL. Drain refuses new tool calls and waits for the calls,
// tasks and waiting tasks/result requests in flight. Close ends every
// session — a stdio session first answers the requests the close released
// (bounded) — and waits for the goroutines the Server started (stdio status
// notifiers, requests answered before go-sdk); it does not close the Engine, which belongs to the caller.
// When stdin ends, a stdio session answers what it can within a bound and
// ends, even with a request that would wait longer.
//
// # go-sdk workarounds (v1.8.0) and the upstream change that retires each
//
//   - No API to send notifications/tools/list_changed: go-sdk sends it only
//     when its own tool registry changes, so ToolsChanged replaces one
//     placeholder registration (never listed, never called: our middleware
//     answers tools/list and tools/call from the catalog); go-sdk delivers
//     it to 2025-11-25 sessions and to 2026-07-28 subscriptions/listen
//     streams alike. Retired by an exported list-changed notification on
//     the server.
//   - The same for resources and prompts: ResourcesChanged and
//     PromptsChanged replace a placeholder resource and prompt (never
//     listed nor read: the middleware answers those methods). Retired by
//     the same exported notification.
//   - go-sdk's ReadResourceResult and GetPromptResult leave out resultType
//     in a 2026-07-28 answer (they do not take the complete type go-sdk
//     sets on the other results): those two are rendered with mcpwire's
//     own types, which carry it. Retired by go-sdk setting it on them.
//   - go-sdk's resource subscriptions cannot be read: the Server keeps its
//     own record of the URIs followed beside go-sdk's. Retired by an
//     accessor for a server's subscriptions.
//   - No tasks at all (go-sdk issue #626): tasks/* are custom methods
//     (AddReceivingCustomMethod), capabilities.tasks and execution.taskSupport
//     are added by rewriting the initialize and tools/list results in a
//     receiving middleware, and tools/call is answered by that middleware;
//     params.task, which go-sdk drops, is lifted by the session connection
//     (mcpconn). Retired by native task support in go-sdk (#626).
//   - Params go-sdk cannot decode are refused before any middleware with
//     encoding/json's wording (Go type and field names): the session
//     connection passes the errors it writes through mcperr.Conn. Retired by
//     go-sdk wording decode errors in JSON terms.
//   - Custom method handlers get no RequestExtra (auth info): the middleware
//     puts the requestor in the context. Retired by passing the request (or
//     its Extra) to AddReceivingCustomMethod handlers.
//   - A missing params reaches custom handlers as a nil pointer and go-sdk
//     does not recover handler panics: nil checks and a recovering
//     middleware. Retired by recovery in go-sdk's handler dispatch.
//   - A transport outside go-sdk cannot tell which request a write belongs
//     to (go-sdk keeps the request ID in an unexported context key): the
//     middleware asks the connection to name the request by its
//     RequestExtra (WithRequest), so progress, logs and questions travel on
//     their request's stream. Retired by an exported accessor for the
//     request ID of a handler's context.
//   - ServerSession.Close waits for in-flight requests without cancelling
//     them, so a parked tasks/result would block it: the session's own
//     context is cancelled first (Connect's end, Close). Retired by
//     cancelling in-flight handlers on Close.
//   - go-sdk replaces the message of every -32601 error with
//     `method not found: "tools/call"`: our -32601 errors use a type that is
//     not errors.Is-equal to its sentinel so the explanation survives
//     (mcperr.MethodNotFound).
//     Retired by keeping handler-provided messages.
//   - go-sdk's stdio connection ends the session on the first line that is
//     not a valid message: we use our own (host/internal/mcpstdio). Retired by
//     answering bad frames with -32700/-32600 in go-sdk's ioConn.
//
// The session connection (mcpconn) and the HTTP room list their own.
package mcpserver
