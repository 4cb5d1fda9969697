// Package roundstate seals the requestState of a 2026-07-28 input round.
//
// A 2026-07-28 call (or prompts/get) that needs input answers
// input_required with its questions and a requestState the client echoes
// when it calls again with the answers. wasmtask keeps nothing between the
// rounds: the state carries the answers the tool has taken so far, so a
// later round need not repeat them. The client holds the state, so the
// host seals it: an HMAC-SHA256 over the state and what it is bound to —
// the tenant, the method, the tool or prompt name and the arguments — with
// a key only the servers know, and an expiry. A state that was altered,
// that another request issued, or that expired does not open
// ([ErrInvalid]); the MCP room refuses its request with -32602.
//
// The one job of this package is that seal: it decides nothing about
// questions or answers, which the MCP room checks as it does any answer.
package roundstate
