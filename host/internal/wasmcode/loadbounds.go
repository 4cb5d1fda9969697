package wasmcode

import (
	"errors"
	"fmt"
)

// What a module makes the host allocate and compute while it is loaded is
// bounded before the step that would spend it: Guard checks the
// module's counts before it reads any section into memory, what one
// instance takes before it instruments the code, and each function's
// compile work as it walks it, so that neither the instrumentation nor
// wazero's decoder, compiler or instantiation ever start on a module past
// a bound. The bounds scale with what the operator allows: the module's
// compile work with Options.MaxWork (the operator's MaxCodeMiB), what one
// instance takes with Options.MaxMemory (the memory limit of the load).
//
// Compile work is counted in bytes of code: one unit is what wazero's
// compiler spends on one byte of dense instrumented code (about 0.1 µs and
// 6 bytes of memory; the interpreter about the same time and 33 bytes, its
// code being kept as it compiles it). Each item of a module weighs what it
// cost wazero in the worst shape measured, the larger of its time and its
// memory in that unit (RATIONALE.md, "Why these bounds on loading?", has
// the measurements):
//
//   - a function body: its bytes, plus joins²/2 and slots²×joins/16, where
//     slots are its parameters and locals and joins its blocks, loops and
//     ifs as instrumented. wazero's compiler runs two passes that grow with
//     them: loop detection walks the dominator tree from every block
//     (joins × depth), and the elimination of redundant block parameters
//     iterates over every local live at every join (a function whose
//     locals all live across every loop is the worst case: 10,000 locals
//     across 100 loops compiled for 61 s, 30 locals across 30,000 loops
//     for 127 s). Real functions stay far below: the largest of the Go
//     demo costs 0.3 MiB, of a C module built by zig 3.3 MiB.
//   - a type 64, an import 32, a function 512 (its compiled records and
//     trampolines), a global 64, an export 16, an element segment 48 and
//     every byte of the element section 16 (an entry takes at least one),
//     a data segment 32. Data bytes are not work: they are copied once.
//
// One function may cost maxFunctionWork, and hold maxFunctionValues slots ×
// joins (the memory of its compile: the block parameters of one function
// took 460 bytes each); the module Options.MaxWork in all.
const (
	typeWork        = 64
	importWork      = 64
	functionWork    = 512
	globalWork      = 64
	exportWork      = 24
	elemSegmentWork = 48
	elemByteWork    = 16
	dataSegmentWork = 32

	// maxFunctionWork bounds one function's compile work: a compile cannot
	// be interrupted within a function (wazero checks its context between
	// functions), so this bounds how far a load can overrun its deadline.
	maxFunctionWork = 8 << 20
	// maxFunctionValues bounds one function's slots × joins.
	maxFunctionValues = 1 << 17
	// maxSections bounds a module's sections: custom sections may repeat,
	// and each is a record in the guard and in wazero's decoder.
	maxSections = 1 << 10
	// dataSegmentBytes is what one data segment takes in every instance
	// (wazero keeps a slice of each segment per instance, for memory.init).
	dataSegmentBytes = 24
)

// loadBounds are the bounds of one load that the operator's numbers set.
type loadBounds struct {
	work   uint64 // compile work of the module (Options.MaxWork); 0: no bound
	memory uint64 // memory limit of one instance, bytes; 0: no bound
}

// loadCost is what Guard has counted of a module's load so far.
type loadCost struct {
	bounds   loadBounds
	work     uint64 // compile work so far
	pages    uint64 // initial linear memory, pages
	dataSegs uint64 // data segments
}

// errMalformed marks a section the bounds check could not read; the
// first pass says what is wrong with it.
var errMalformed = errors.New("malformed")

// checkCounts charges the work of a module's counts before any section is
// read into memory: every count of a vector wazero's decoder allocates for
// is checked against its section's size (a count larger than the bytes
// that could hold its entries is malformed: wazero would allocate for it
// before reading them) and weighed. It also reads the initial memory and
// checks the data section, which the rest of the guard does not read.
func (m *moduleInfo) checkCounts(secs []section) error {
	c := &m.load
	for _, s := range secs {
		var n uint64
		var weight uint64
		var err error
		switch s.id {
		case secType:
			n, err = vecCount(s.payload)
			weight = typeWork
		case secImport:
			n, err = vecCount(s.payload)
			weight = importWork
		case secFunction:
			n, err = vecCount(s.payload)
			weight = functionWork
		case secGlobal:
			n, err = vecCount(s.payload)
			weight = globalWork
		case secExport:
			n, err = vecCount(s.payload)
			weight = exportWork
		case secElement:
			var segs uint64
			segs, err = vecCount(s.payload)
			c.work += segs*elemSegmentWork + uint64(len(s.payload))*elemByteWork
		case secMemory:
			c.pages, err = memoryPages(s.payload)
		case secData:
			n, err = dataSegments(s.payload)
			weight = dataSegmentWork
			c.dataSegs = n
		}
		if err != nil {
			return fmt.Errorf("%s section: %w", sectionName(s.id), err)
		}
		c.work += n * weight
		if c.bounds.work > 0 && c.work > c.bounds.work {
			return fmt.Errorf("%s section: %w: its compile may cost as much as %s of code, more than the limit of %s",
				sectionName(s.id), ErrTooLarge, FormatSize(c.work), FormatSize(c.bounds.work))
		}
	}
	return nil
}

// checkInstance refuses a module one instance of which cannot fit its
// memory limit: what the instance takes outside linear memory and the
// stack (staticBytes, tables at their maximum), its initial linear memory
// and minStackBytes of stack. It runs after the first pass has counted
// the module's globals, functions and element entries.
func (m *moduleInfo) checkInstance(secs []section) error {
	c := &m.load
	if c.bounds.memory == 0 {
		return nil
	}
	for _, s := range secs {
		if s.id == secTable {
			var err error
			if _, m.tableBytes, err = boundTables(s.payload); err != nil {
				return fmt.Errorf("table section: %w", err)
			}
		}
	}
	static := m.staticBytes()
	linear := c.pages * PageSize
	if need := static + linear + minStackBytes; need > c.bounds.memory {
		return fmt.Errorf("%w: one instance needs %s (%s of initial linear memory, %s for tables, globals and the instance, %s of stack), more than the memory limit of %s",
			ErrTooLarge, FormatSize(need), FormatSize(linear), FormatSize(static), FormatSize(minStackBytes), FormatSize(c.bounds.memory))
	}
	return nil
}

// chargeFunction charges the compile work of a function of body size
// bytes, which w has walked (see above).
func (m *moduleInfo) chargeFunction(w *walker, size uint32) error {
	c := &m.load
	slots := w.slots
	joins := w.blocks + 2*uint64(w.loops) + 4 // the loops' wrapping, the entry's checks and block
	if w.loops > 0 {
		joins += uint64(len(w.calls)) // a check after each call
	}
	if values := slots * joins; values > maxFunctionValues {
		return fmt.Errorf("%w: its %d locals and parameters across %d blocks and loops make %d values for the compiler, more than %d",
			ErrTooLarge, slots, joins, values, maxFunctionValues)
	}
	work := uint64(size) + joins*joins/2 + slots*slots*joins/16
	if work > maxFunctionWork {
		return fmt.Errorf("%w: its compile may cost as much as %s of code (%d bytes, %d locals and parameters across %d blocks and loops), more than the %s one function may",
			ErrTooLarge, FormatSize(work), size, slots, joins, FormatSize(maxFunctionWork))
	}
	c.work += work
	if c.bounds.work > 0 && c.work > c.bounds.work {
		return fmt.Errorf("%w: with it the module's compile may cost as much as %s of code, more than the limit of %s",
			ErrTooLarge, FormatSize(c.work), FormatSize(c.bounds.work))
	}
	return nil
}

// vecCount reads the count of a vector section and checks it against the
// section's size: every entry takes at least one byte.
func vecCount(p []byte) (uint64, error) {
	r := reader{b: p}
	n := r.u32()
	if r.err != nil || uint64(n) > uint64(len(r.b)) {
		return 0, fmt.Errorf("%w: bad count", errMalformed)
	}
	return uint64(n), nil
}

// memoryPages reads the initial size of the memory a memory section
// defines (the ABI allows at most one).
func memoryPages(p []byte) (uint64, error) {
	r := reader{b: p}
	n := r.u32()
	if n == 0 && r.err == nil {
		return 0, nil
	}
	flags := r.byte()
	pages := r.u32()
	if flags&1 != 0 {
		r.u32()
	}
	if r.err != nil || n != 1 || flags > 1 || len(r.b) != 0 {
		return 0, fmt.Errorf("%w: not one memory of 32-bit limits", errMalformed)
	}
	return uint64(pages), nil
}

// dataSegments checks a data section the way wazero's decoder reads it and
// returns its number of segments: a segment's length past the bytes left
// is malformed (wazero would allocate it before reading it).
func dataSegments(p []byte) (uint64, error) {
	r := reader{b: p}
	n := r.u32()
	if r.err != nil || uint64(n) > uint64(len(r.b)) {
		return 0, fmt.Errorf("%w: bad count", errMalformed)
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		switch flags := r.u32(); flags {
		case 0:
			r.constExpr()
		case 1:
		case 2:
			r.u32()
			r.constExpr()
		default:
			return 0, fmt.Errorf("%w: segment %d: bad flags %d", errMalformed, i, flags)
		}
		size := r.u32()
		if r.err == nil && uint64(size) > uint64(len(r.b)) {
			return 0, fmt.Errorf("%w: segment %d: %d bytes, more than the section holds", errMalformed, i, size)
		}
		r.bytes(int(size))
	}
	if r.err != nil || len(r.b) != 0 {
		return 0, fmt.Errorf("%w: segments", errMalformed)
	}
	return uint64(n), nil
}
