// Package resultcache holds the results of cacheable tool calls: a tool
// that declares "cache": {"cacheable": true} says a successful result
// depends only on its arguments, so a call with the same key — tenant,
// module digest, tool, canonical arguments and grants — may be answered
// without running the guest.
//
// It owns three things: the canonical form of arguments ([Canonical],
// after RFC 8785, exact on numbers), the bounded store ([Cache]: entries
// and bytes, overall and per tenant, least recently used first, lazy TTL
// expiry, cleared per module digest), and single flight ([Cache.Do]):
// concurrent identical calls run the guest once, each caller keeps its
// own cancellation, and the run stops when the last caller has gone.
//
// What may be cached (only successful results, never a call that elicited
// input, a tool with writable mounts only when the operator says so) is
// decided by the caller, which reports it in [Outcome].Cacheable.
package resultcache
