package wasmcode

import (
	"encoding/binary"
	"fmt"
)

// Bulk instructions pay for their length. memory.fill, memory.copy,
// memory.init, table.fill, table.copy, table.init and table.grow each do
// work in proportion to an operand, up to the whole memory or table in one
// instruction, and wazero runs each as one uninterruptible step (native
// code, or a Go loop in the interpreter). Charged one unit of fuel like any
// other instruction, a loop around memory.fill of a 64 MiB memory ran for
// about a minute between two fuel checks: past its deadline and its
// cancel, and — native code that never returns to Go cannot be preempted —
// holding up the garbage collector, and with it every other call of the
// server.
//
// So the rewrite replaces each of them with a call of a function it
// appends to the module, one per instruction and immediates (bulkHelper):
// the function does the same work in steps of at most memStep bytes or
// TableStep entries, and before each step charges its fuel and checks it as
// a loop header does (fuel.go). A step's fuel is its length over the bytes
// (or entries) that take as long as one plain instruction; no step runs
// longer than a small part of a fuel period, and a cancel or deadline stops
// the guest between two steps.
//
// The steps do what the instruction does, in an order that gives the same
// result: memory.copy and table.copy go from the end when the destination
// is above the source (as memmove does), from the start otherwise. Bounds
// are checked by each step's own instruction: an operation out of bounds
// traps at the first step that leaves them, after earlier steps wrote what
// they were in bounds for, where the instruction would have trapped before
// writing anything. That difference is never seen: a trap ends the call,
// and the host never uses an instance after a trap (nor a snapshot of one).
// Every out-of-bounds operation does trap: the step holding the first byte
// past the end starts below 2^32, where the i32 arithmetic of the steps is
// exact.
//
// table.grow runs in one step: the rewrite bounds a table's growth
// (boundTables), and the step charges the entries it asks for, up to that
// bound, before it runs.
const (
	// memStep is the most bytes one step of a memory instruction moves.
	memStep = 1 << 16
	// MemFuelShift: a step of n bytes costs n>>MemFuelShift fuel, one per
	// 4 bytes, about as long as an instruction takes (BenchmarkBulk).
	MemFuelShift = 2
	// TableStep is the most entries one step of a table instruction sets.
	TableStep = 1 << 12
	// TableFuelShift: a step of n entries costs n<<TableFuelShift fuel
	// (wazero sets table entries one at a time, in Go).
	TableFuelShift = 2
)

// Sub-opcodes of the 0xfc instructions the helpers replace.
const (
	subMemoryInit = 8
	subMemoryCopy = 10
	subMemoryFill = 11
	subTableInit  = 12
	subTableCopy  = 14
	subTableGrow  = 15
	subTableFill  = 17
)

// helperValues bounds the values of one helper's frame (parameters,
// locals and operand stack), charged to the frame of a function that calls
// one (walker.frameCost).
const helperValues = 16

// bulkHelper is a function the rewrite appends in place of a bulk
// instruction: the instruction (sub-opcode and immediates, as the module
// encodes them) and the helper's type index.
type bulkHelper struct {
	sub uint32
	imm []byte
	typ uint64
}

// helperFunc returns the index, among the appended helpers, of the one
// that does the bulk instruction sub with immediates imm, adding it the
// first time. table is the index of the table it works on (a table.fill
// and a table.grow pass a value of its reference type).
func (m *moduleInfo) helperFunc(sub uint32, imm []byte, table uint32) (uint64, error) {
	key := string(binary.AppendUvarint(nil, uint64(sub))) + string(imm)
	if i, ok := m.helperIndex[key]; ok {
		return uint64(i), nil
	}
	i32 := byte(0x7f)
	ft := funcType{params: []byte{i32, i32, i32}}
	if sub == subTableFill || sub == subTableGrow {
		if uint64(table) >= uint64(len(m.tableTypes)) {
			return 0, fmt.Errorf("table index %d out of range", table)
		}
		ref := m.tableTypes[table]
		ft = funcType{params: []byte{i32, ref, i32}}
		if sub == subTableGrow {
			ft = funcType{params: []byte{ref, i32}, results: []byte{i32}}
		}
	}
	if m.helperIndex == nil {
		m.helperIndex = make(map[string]int)
	}
	m.helperIndex[key] = len(m.helpers)
	m.helpers = append(m.helpers, bulkHelper{sub: sub, imm: imm, typ: m.typeIndex(ft)})
	return uint64(len(m.helpers) - 1), nil
}

// typeIndex returns the index of a type equal to ft, appending one if the
// module has none.
func (m *moduleInfo) typeIndex(ft funcType) uint64 {
	same := func(a funcType) bool {
		return string(a.params) == string(ft.params) && string(a.results) == string(ft.results)
	}
	for i, t := range m.types {
		if same(t) {
			return uint64(i)
		}
	}
	for i, t := range m.appendedTypes {
		if same(t) {
			return uint64(len(m.types) + i)
		}
	}
	m.appendedTypes = append(m.appendedTypes, ft)
	return uint64(len(m.types) + len(m.appendedTypes) - 1)
}

// helperBody returns the code entry (locals and instructions) of h; fuel
// and check are the fuel counter and the fuel check (fuel.go).
func helperBody(h bulkHelper, fuel, check uint64) []byte {
	op := binary.AppendUvarint([]byte{0xfc}, uint64(h.sub))
	op = append(op, h.imm...)
	memory := h.sub == subMemoryInit || h.sub == subMemoryCopy || h.sub == subMemoryFill
	get := func(out []byte, l byte) []byte { return append(out, 0x20, l) }
	// Locals: the parameters (0-2), then k, the step's length (3).
	const d, s, n, k = 0, 1, 2, 3
	b := []byte{1, 1, 0x7f} // one group: one i32
	if h.sub == subTableGrow {
		// (value, n) -> old size: charge n, at most the growth a table
		// is allowed, then grow.
		b = []byte{0}
		b = appendGet(b, fuel)
		b = get(b, 1)
		b = append(b, 0x41)
		b = appendSleb(b, tableGrowth)
		b = get(b, 1)
		b = append(b, 0x41)
		b = appendSleb(b, tableGrowth)
		b = append(b, 0x49, 0x1b)                   // i32.lt_u; select: min(n, tableGrowth)
		b = append(b, 0x6b, 0x41, 0x01, 0x6b, 0x24) // i32.sub; i32.const 1; i32.sub; global.set
		b = binary.AppendUvarint(b, fuel)
		b = appendFuelCheck(b, fuel, check)
		b = get(b, 0)
		b = get(b, 1)
		b = append(b, op...)
		return append(b, 0x0b)
	}
	// step: k = min(n, step); $fuel -= 1 + fuel of k; check.
	step := func(out []byte) []byte {
		size, shift, shr := int64(TableStep), byte(TableFuelShift), byte(0x74) // i32.shl
		if memory {
			size, shift, shr = memStep, MemFuelShift, 0x76 // i32.shr_u
		}
		out = get(out, n)
		out = append(out, 0x41)
		out = appendSleb(out, size)
		out = get(out, n)
		out = append(out, 0x41)
		out = appendSleb(out, size)
		out = append(out, 0x49, 0x1b, 0x21, k) // i32.lt_u; select; local.set k
		out = appendGet(out, fuel)
		out = get(out, k)
		out = append(out, 0x41, shift, shr, 0x6b, 0x41, 0x01, 0x6b, 0x24) // i32.const; shift; i32.sub; i32.const 1; i32.sub; global.set
		out = binary.AppendUvarint(out, fuel)
		return appendFuelCheck(out, fuel, check)
	}
	// add: local l += k.
	add := func(out []byte, l byte) []byte {
		out = get(out, l)
		out = get(out, k)
		return append(out, 0x6a, 0x21, l) // i32.add; local.set
	}
	// forward: from the start, k at a time, while n is left.
	forward := func(out []byte) []byte {
		out = append(out, 0x03, 0x40) // loop
		out = step(out)
		out = get(out, d)
		out = get(out, s)
		out = get(out, k)
		out = append(out, op...)
		out = add(out, d)
		if h.sub != subMemoryFill && h.sub != subTableFill {
			out = add(out, s) // s is the fill's value, not an offset
		}
		out = get(out, n)
		out = get(out, k)
		return append(out, 0x6b, 0x22, n, 0x0d, 0x00, 0x0b) // i32.sub; local.tee n; br_if 0; end
	}
	switch h.sub {
	case subMemoryCopy, subTableCopy:
		// Above the source, from the end: n -= k, then the step at
		// d+n, s+n.
		b = get(b, d)
		b = get(b, s)
		b = append(b, 0x4b, 0x04, 0x40, 0x03, 0x40) // i32.gt_u; if; loop
		b = step(b)
		b = get(b, n)
		b = get(b, k)
		b = append(b, 0x6b, 0x21, n) // i32.sub; local.set n
		for _, l := range []byte{d, s} {
			b = get(b, l)
			b = get(b, n)
			b = append(b, 0x6a) // i32.add
		}
		b = get(b, k)
		b = append(b, op...)
		b = get(b, n)
		b = append(b, 0x0d, 0x00, 0x0b, 0x05) // br_if 0; end; else
		b = forward(b)
		b = append(b, 0x0b) // end
	default:
		b = forward(b)
	}
	return append(b, 0x0b)
}
