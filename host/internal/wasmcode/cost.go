package wasmcode

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
	refBytes = RefFuncBytes
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

// FormatSize writes b bytes as the rewriter's and the runtime's messages
// do: in MiB from 1 MiB on, in KiB below.
func FormatSize(b uint64) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%.4g MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.4g KiB", float64(b)/(1<<10))
}
