// Package mcpevents carries what a running tool says to its MCP client —
// progress, status, logs and questions (the abi.Events the catalog's call
// reports to) — and the client's answers back, in both protocol eras.
//
//	var waiters mcpevents.Waiters // one per server
//	var limits mcpevents.Limiter  // one per session
//	c := mcpevents.Client{Session: ss, SessionID: id, SessionContext: sessionCtx,
//		CanElicit: canElicit, Limits: &limits, Waiters: &waiters, Log: logger}
//	res, hit, err := catalog.Call(ctx, who, tool, args, mcpevents.NewCall(ctx, c, token, tool))
//	...
//	ev := mcpevents.NewTask(c, run, token, tool) // the events of a task's work
//	...
//	t, out, err := waiters.Wait(ctx, engine, ss, owner, taskID) // tasks/result
//
// It owns: the events of a plain call ([Call]: on the request's own
// stream), of a task's work ([Task]: progress with the request's progress
// token and the related-task _meta, on the stream of a waiting
// tasks/result when there is one; questions that make the task
// input_required), and of one round of a 2026-07-28 call ([Round]:
// questions answered from the round's inputResponses, the first without
// an answer ending the round, and begin_task); the delivery of a task's
// questions by the tasks/result requests waiting on it ([Waiters]); the
// answers of tasks/update ([AnswerInputs]); and the per-session bounds on
// questions ([Limiter]).
//
// It does not decide when a call is a task or a round, create tasks, nor
// word what a client reads: the MCP room (host/internal/mcpserver) does,
// and words a [RefusedAnswer] as the request's error. The errors it
// returns to a tool reach the guest as a code only, and the server log.
//
// # Questions and answers
//
// A 2025-11-25 question is an elicitation/create request: from a plain
// call, on the call's stream; from a task, the task becomes input_required
// and a waiting tasks/result sends it (with the related-task _meta), on
// its stream, the reply going back to the task's work and the task to
// working. A 2026-07-28 server sends no requests: a plain call's questions
// end its round (input_required), a task's wait in tasks/get. A client
// without the elicitation capability makes Elicit fail at once with an
// error that is errors.ErrUnsupported.
//
// Every answer, in either era, passes mcpwire.CheckAnswer before the tool
// sees it: the action, MCP's shape of an answer (at most 64 KiB) and the
// question's requestedSchema, the content encoded anew. A 2026-07-28 answer
// that fails is a [RefusedAnswer] (the request that carried it is refused
// and the question stays open); a 2025-11-25 response cannot be refused,
// so the question fails (the guest's elicit returns -1).
//
// # Bounds
//
// On top of the runtime's per-call bounds, a session (one user) has at
// most [MaxOpenElicits] questions open at once, and starts at most
// [SessionElicitBurst] at a time, then one every [SessionElicitEvery],
// whichever call or task asks; a refused question is an error to the tool
// that errors.Is abi.ErrElicitLimit.
//
// # Concurrency
//
// Every type is safe for concurrent use. The goroutines that deliver a
// task's questions belong to the Waiters.Wait that started them, which
// returns once they have ended.
package mcpevents
