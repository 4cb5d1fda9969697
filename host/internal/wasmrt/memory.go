package wasmrt

import "fmt"

// What one instance makes the host allocate outside linear memory and the
// call stack, per item, measured on both engines of wazero v1.12.0 (the
// larger of the two, rounded up; RATIONALE.md "Why does a call's memory
// limit cover its stack, tables and globals?" has the figures).
const (
	// instanceBytes is the fixed cost of one instance: wazero's module
	// instance, engine and system context, the first stack segment, the
	// goroutine that watches the call's context, the call's own records.
	instanceBytes = 64 << 10
	// globalBytes is the cost of one global (its instance record and the
	// engine's pointer to it).
	globalBytes = 96
	// functionBytes is the cost of one function (the interpreter keeps a
	// record of every function in every instance).
	functionBytes = 48
	// refBytes is the cost of one function reference made at
	// instantiation, from an element segment entry or a global's initial
	// value (the compiler engine allocates one for each).
	refBytes = refFuncBytes
	// tableEntryBytes is the size of one table entry (a host pointer).
	tableEntryBytes = 8
)

// minStackBytes is the least pool one instance of a module must have beside
// its initial linear memory and static bytes for the module to load
// (loadbounds.go): a module that cannot push a frame cannot describe itself.
const minStackBytes = 1 << 20

// tableBytes is what a table of min entries that may grow to max takes at
// most: growing copies the entries into a slice up to 1.25 times the new
// length while the old one is still held.
func tableBytes(min, max uint64) uint64 {
	if max == min {
		return min * tableEntryBytes
	}
	return max * tableEntryBytes * 9 / 4
}

// staticBytes is what one instance of the module makes the host allocate
// outside linear memory and the stack.
func (m *moduleInfo) staticBytes() uint64 {
	return instanceBytes +
		m.globals*globalBytes +
		uint64(len(m.funcs))*functionBytes +
		m.tableBytes +
		m.passiveElems*tableEntryBytes +
		m.elemRefs*refBytes +
		m.load.dataSegs*dataSegmentBytes
}

// memoryPlan divides a call's memory limit between what the instance needs
// outside linear memory and the stack (static) and the pool that linear
// memory, the stack and function references share (stack.go).
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

func sizeString(b uint64) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%.4g MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.4g KiB", float64(b)/(1<<10))
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
	return uint64(max(mib, 0))<<20 + ioBytes(lim)
}

// ioBytes bounds the buffers of one call's output and log: stdout grows by
// doubling up to MaxOutputBytes, stderr keeps a tail and a partial line of
// up to MaxLogBytes each and forwards lines of at most that.
func ioBytes(lim Limits) uint64 {
	return 2*uint64(max(lim.MaxOutputBytes, 0)) + 3*uint64(max(lim.MaxLogBytes, 0))
}
