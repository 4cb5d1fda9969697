package wasmrt

import "github.com/wasmtask/wasmtask/host/internal/guestio"

// memoryPlan divides a call's memory limit between what the instance needs
// outside linear memory and the stack (static) and the pool that linear
// memory, the stack and function references share (wasmcode's stack.go).
type memoryPlan struct {
	grant  uint64 // the call's memory limit, bytes
	static uint64 // instance records, globals, tables, element segments
	pool   uint64 // grant - static, or 0
}

func (m *Module) plan(mib int) memoryPlan {
	p := memoryPlan{grant: uint64(mib) << 20, static: m.static}
	if p.static < p.grant {
		p.pool = p.grant - p.static
	}
	return p
}

// Reservation returns the most host memory, in bytes, that one call of the
// module under lim may make the host allocate: its memory limit
// (lim.MemoryMiB, capped by Config.MaxMemoryMiB), which covers linear
// memory and its growth, the call stack of both engines, globals, tables
// and the instance's records, plus the call's output and log buffers
// (bounded by lim.MaxOutputBytes and lim.MaxLogBytes). It does not count
// the call's arguments, which the caller holds, nor the Go collector's
// slack: memory freed during the call is reused or returned to the system
// later. Reservation does not depend on the module's state and is safe for
// concurrent use.
func (m *Module) Reservation(lim Limits) uint64 {
	mib := min(lim.MemoryMiB, m.r.cfg.MaxMemoryMiB)
	return uint64(max(mib, 0))<<20 + guestio.BufferBytes(lim.MaxOutputBytes, lim.MaxLogBytes)
}
