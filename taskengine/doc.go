// Package taskengine runs opaque units of work as tasks and keeps their
// state and outcomes for a while. It owns the task state machine, the task
// store (an LRU per owner, bounded per owner and in total, with per-task
// TTL), task ownership, list cursors, waiting for results, cancellation,
// input requests, and concurrency limits. It knows nothing of Wasm, MCP or JSON: a [Work] function returns
// an opaque [Outcome], and a [Task] is a plain snapshot that callers render
// in whatever wire shape they speak (the MCP 2025-11-25 task, or the newer
// tasks extension, from the same store).
//
//	e, _ := taskengine.New(taskengine.Config{})
//	defer e.Close()
//	t, _ := e.Submit(owner, taskengine.SubmitOptions{TTL: time.Minute}, work)
//	t, out, err := e.Wait(ctx, owner, t.ID) // blocks until terminal
//
// # Lifecycle
//
// A task starts [StatusWorking]. While its work runs it moves between
// working and [StatusInputRequired] (the latter while at least one
// [Run.RequestInput] call awaits an answer), and ends in exactly one of
// [StatusCompleted], [StatusFailed] or [StatusCancelled]. Terminal states
// never change; any other transition is refused with [ErrIllegalTransition]
// (see [Status.CanBecome]). How a task ends:
//
//   - work returns an Outcome: failed if Outcome.Err is set or
//     Outcome.Failed is true, completed otherwise; [Engine.Wait] returns
//     the Outcome exactly as the work returned it;
//   - work panics (or calls runtime.Goexit): failed, Err wraps [ErrPanic];
//   - [Engine.Cancel]: cancelled before Cancel returns, Err is
//     [ErrCancelled]; whatever the work returns later is discarded;
//   - the run time limit, min(Config.MaxRunTime, granted TTL) from
//     creation, passes: failed at that instant, Err is [ErrDeadline]
//     (which wraps [context.DeadlineExceeded]), even if the work has not
//     noticed yet;
//   - [Engine.Close]: cancelled, Err is [ErrClosed].
//
// Err here is both the Outcome.Err that [Engine.Wait] returns and the
// [Task.Err] of every later snapshot; callers branch on it with [errors.Is].
// The engine writes no text for clients: [Task.StatusMessage] is only ever
// what the work set through [Run], and it is left as it was when the
// engine ends a task. Wording an ending for a client (or a protocol) is
// the caller's job, from Task.Err; the engine's error strings name the
// package and are meant for Go callers and logs.
//
// Work runs in its own goroutine on a context built from
// context.Background() (never from the submitter's request), with the run
// time limit as deadline. The context ends when the task is cancelled, runs
// out of time, or the engine closes; [context.Cause] says which. Work must
// return soon after its context ends: the engine counts a task as running,
// for the limits below, until its work returns.
//
// Tasks report progress and status messages through [Run]; consumers see
// every change through [Engine.Watch], whose first value is the current
// state. To block until a task needs input or ends (what an MCP
// tasks/result handler needs), read the subscription until a snapshot is
// [StatusInputRequired] (then [Engine.PendingInput] and [Engine.Answer]) or
// terminal (then [Engine.Wait] returns at once). [Engine.OnChange] delivers
// the same changes to a function called under the engine's lock, for a
// consumer that forwards them without a goroutine per task.
//
// # Ownership and security
//
// Every task belongs to the opaque owner string given to Submit (an
// authenticated principal, a session, or "" where requestors cannot be told
// apart). Every method that names a task takes the owner too. Tasks are
// indexed by (owner, ID) together, so a lookup with the wrong owner is an
// ordinary miss: another owner's task, an unknown ID and an expired task all
// give [ErrNotFound] through the same code path. Task IDs are 26 base32
// characters from crypto/rand (130 bits). [Engine.List] shows only the
// owner's tasks; its cursors are bound to the owner and to this engine
// (HMAC under a per-engine random key, then encrypted so they reveal no
// counters) and any other cursor is [ErrBadCursor].
//
// # Retention and limits
//
// The engine retains at most Config.MaxTasks tasks, running and finished,
// and at most Config.MaxResultBytes of outcomes (the sum of Outcome.Size).
// Each owner has its own share of both: at most MaxTasksPerOwner retained
// tasks (default MaxTasks/4, at least 1), MaxResultBytesPerOwner of
// outcomes (default MaxResultBytes/4) and MaxRunningPerOwner running tasks
// (default 32). [Config.Limits], if set, gives an owner its own bounds in
// their place ([OwnerLimits]; a zero field means the Config default), which
// is how a server gives each tenant its quotas. The engine-wide bounds hold
// whatever the owners' bounds add up to.
//
// Each owner's finished tasks sit in that owner's own LRU (golang-lru/v2)
// and are evicted least recently used first ([Engine.Get], Wait, Cancel,
// Watch, PendingInput and Answer count as use; List does not). Running
// tasks are never evicted, and one owner's tasks are never evicted to make
// room for another's: an owner can only ever push out its own results.
// Precisely:
//
//   - Submit fails with [ErrOwnerLimit] if the owner has its MaxRunning
//     running tasks. If the owner holds its MaxTasks tasks, its least
//     recently used finished task is evicted; if all of them are running,
//     Submit fails with ErrOwnerLimit. If the engine holds MaxTasks tasks,
//     the submitting owner's least recently used finished task is evicted;
//     if it has none, Submit fails with [ErrFull], however many finished
//     tasks other owners hold. A failed Submit evicts nothing.
//   - When work returns an outcome of Size bytes that alone exceeds the
//     owner's MaxResultBytes or the engine's, the outcome is not kept: the
//     task fails with [ErrTooLarge]. Otherwise the owner's least recently
//     used finished tasks are evicted until both the owner's bytes and the
//     engine's fit. If even evicting all of them would not make the
//     engine's fit, because of other owners' results, the server's result
//     store is full: the outcome is not kept and the task fails with
//     ErrTooLarge too, and nothing is evicted.
//
// Bounds that [Config.Limits] lowers for an owner are enforced the same
// way: its task count at its next Submit, its bytes when its next task
// finishes; nothing is evicted in between.
//
// Each task expires at its own TTL, measured from creation; from then on it
// behaves as unknown. Expiry is lazy: every call into the engine first drops
// the tasks whose TTL has passed (a heap ordered by expiry keeps this
// O(log n) per task), so there is no sweeper goroutine, and an idle engine
// holds expired outcomes, within the same bounds, until its next call.
// Because the run time limit is at most the TTL, a task is terminal by the
// time it expires.
//
// # Concurrency
//
// All methods of [Engine], [Run] and [Subscription] are safe for concurrent
// use. One mutex guards the store; no method blocks while holding it, and
// Work runs without it. Wait blocks on a per-task channel closed at the
// terminal transition, so any number of waiters cost nothing but their own
// goroutines and none outlive their context or Close. A Subscription's
// channel holds one snapshot and coalesces (the latest wins), so a slow
// reader never blocks the engine and nothing buffers without bound.
//
// The engine starts one goroutine per task for the work, and one more when
// a task's context ends before its work returns (to apply the deadline).
// [Engine.Close] cancels all running work, wakes every waiter with
// [ErrClosed], closes every subscription, and returns only when all of
// these goroutines have exited.
//
// # Replicas
//
// Several engines (replicas of one server) answer for each other's tasks
// when they share a [SharedStore] of task records and a [Peers] control
// channel (Config.Shared and Config.Peers; the server's are NATS JetStream,
// tests use memory). Each interface is small and declared here, where it
// is consumed. Every task is recorded in the store; a lookup that misses
// locally reads it there. The runner is the only writer of a task's record
// while the task runs (its engine owns the state machine); any replica may
// write it once, to fail a task whose runner lost its lease. Writes are
// compare-and-set on the record's revision, so that second writer and the
// runner never overwrite each other: whichever comes second sees the
// other's record.
//
//   - Submit creates the record before it returns (a handle the client
//     holds always resolves), then every change is written by one of a few
//     writer goroutines, coalesced: a task's record is written with its
//     latest state, at most one write per task in flight.
//   - A task that is not terminal and whose runner no longer holds its
//     lease (Peers.Alive) is failed with [ErrReplicaLost], in the store, by
//     whoever notices first.
//   - Cancel and Answer for another replica's task are control requests to
//     its runner (Peers.Ask), which applies them to its own engine and
//     writes the record before it replies: the caller's next read sees it.
//   - Wait and Watch on another replica's task follow the record
//     (SharedStore.Watch) and check the runner's lease every LivenessCheck.
//
// Every method that may reach the store or a peer (Submit, Get, Wait,
// Cancel, List, PendingInput, Answer, Watch) takes the caller's context
// first: the call ends when it does, with that context's error, and
// Config.SharedTimeout caps each call into the store when the caller's
// context has no nearer deadline. The engine's own writes (a task's
// changes, the outcome) use the engine's context, bounded the same way
// and, once Close begins, by its drain. A store that fails makes the
// engine fail closed: [ErrShared], never a guess.
package taskengine
