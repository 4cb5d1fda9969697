// Package mcpconn is the connection every MCP session's transport passes
// through on its way to go-sdk (host/internal/mcpstdio's, the HTTP room's
// session connection): on jsonrpc.Message values, it does what go-sdk
// v1.8.0 cannot be asked to do for a session.
//
//	c := mcpconn.New(transportConn, mcpconn.Options{Word: clientError, Answer: answerOwn})
//	ss, err := server.Connect(ctx, c.Transport(), nil)
//	...
//	relay := mcpconn.NewStatusRelay()
//	go relay.Run(sessionCtx, c.NotifyTaskStatus)
//	...
//	c.ExpectTask(reqID, task.ID) // before the response that announces it is written
//	relay.Follow(engine, owner, task.ID, render)
//
// It owns, per session: the IDs of the requests in flight (a request
// reusing one still unanswered, whoever answers it, is refused:
// [ErrIDInFlight], [ErrTooManyInFlight]); the lifting of a tools/call's
// params.task past go-sdk's decoder (mcpwire.LiftTaskParams, with the
// request's ID); the hand-off of each request to Options.Answer before
// go-sdk, the exact reading of the requests answered that way
// ([CallParams], [TaskParams]) and their end when notifications/cancelled
// names one ([Conn.Track]); the routing of a handler's writes to its
// request's stream ([Conn.WithRequest]); and notifications/tasks/status
// ([StatusRelay], [Conn.NotifyTaskStatus]), each task's held until the
// response that announced the task is written ([Conn.ExpectTask]).
//
// It does not decide which requests are answered before go-sdk, nor
// answer them, nor render a task, nor word any text a client reads: the
// MCP room (host/internal/mcpserver) does, through Options.Word and the
// render func of Follow. It decodes no bytes (the transports do) and
// knows nothing of HTTP.
//
// # Concurrency
//
// A Conn is safe for concurrent use: go-sdk reads from one goroutine and
// writes from many. A StatusRelay takes changes from the engine's
// callbacks, which must not block, and writes them from the one goroutine
// that runs Run; when Run returns, the relay ends every callback it
// registered.
//
// # go-sdk workarounds (v1.8.0) and the upstream change that retires each
//
//   - No tasks (go-sdk issue #626): params.task, which go-sdk drops when it
//     decodes tools/call, is lifted into a private _meta key
//     ("io.wasmtask/lifted-task", stripped from client input first) before
//     go-sdk reads the message. Retired by native task support in go-sdk.
//   - No API to send a custom notification (notifications/tasks/status):
//     the Conn writes it on the session's connection. Retired by a
//     ServerSession.Notify(method, params) API.
//   - Params go-sdk cannot decode are refused in encoding/json's wording:
//     every error response the Conn writes passes Options.Word. Retired by
//     go-sdk wording decode errors in JSON terms.
package mcpconn
