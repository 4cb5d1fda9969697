// Package linearmem holds the bytes of guests' linear memories: on Linux
// an anonymous mapping of a whole memory pool, reserved without access and
// opened page by page as the guest grows (growth never copies; the host
// holds only the pages the guest touches), kept cleared in a bounded
// cache for reuse; elsewhere a Go slice that grows by doubling. It knows
// nothing of Wasm: the runtime's allocator (wasmrt) charges what a
// backing holds to the call's memory pool.
package linearmem

// Backing holds the bytes of one instance's linear memory.
type Backing interface {
	// Grow returns the memory grown to size bytes, contents kept and new
	// bytes zero, and the bytes it now holds in all (its charge to the
	// pool), which it keeps within avail; ok is false when it cannot.
	Grow(size, avail uint64) (buf []byte, held uint64, ok bool)
	// Release gives the memory back. It runs once the guest has stopped.
	Release()
}
