// Package guestio holds the readers and writers behind one call's WASI
// streams: stdout collected up to a limit ([Output]), stderr kept as a
// bounded tail and forwarded line by line ([Log]), and stdin and the random
// source read in bounded chunks ([Reader]). Each refuses to work once its
// call's context is done: WASI's fd_write and random_get loop over lengths
// the guest chooses, and wazero checks for cancellation only in guest code,
// so only an error from the host side ends such a loop.
//
// It knows nothing of Wasm or wazero: the runtime (wasmrt) binds these
// values to a module configuration, resets them for each call, and reads
// what the guest wrote once it has stopped. None of them is safe for
// concurrent use; one call's guest goroutine uses them.
//
//	out := guestio.Output{Ctx: callCtx, Max: lim.MaxOutputBytes, Over: cancel, Pooled: true}
//	// … the guest writes to &out …
//	if !out.Exceeded() {
//		use(out.Bytes())
//	}
//	guestio.PutOutput(out.Bytes())
package guestio
