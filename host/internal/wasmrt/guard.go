package wasmrt

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// guardEntries returns a copy of the module wasm whose every function body
// starts with an empty loop ("loop end", 0x03 0x40 0x0b), whose tables have
// a bounded maximum (boundTables), and refuses a function with more than
// maxLocals locals.
//
// Why: WithCloseOnContextDone makes wazero check for a closed module only
// at loop headers, in both engines. A guest whose work is a loop-free call
// tree (f calling itself twice from depth 60) never reaches one, so it ran
// past its timeout, its cancel and Runtime.Close, holding a CPU for
// centuries. With a loop header at the entry of every function, the check
// runs at every call too; an empty loop does nothing else.
//
// Rejected: a function listener on every function (wazero's experimental
// FunctionListenerFactory). It works, costs two exits to Go per guest call
// instead of one, and wazero's compiler keeps the listener trampolines of
// every compiled module's function types until the runtime closes: a leak
// of executable memory at each hot reload.
//
// Only the code section changes; custom sections are kept as they are (DWARF
// line offsets into the code then lag by 3 bytes per function, which only
// affects source positions in trap stack traces).
func guardEntries(wasm []byte) ([]byte, error) {
	if len(wasm) < 8 {
		return nil, errors.New("truncated header")
	}
	out := make([]byte, 0, len(wasm)+1024)
	out = append(out, wasm[:8]...)
	p := wasm[8:]
	for len(p) > 0 {
		id := p[0]
		size, n := binary.Uvarint(p[1:])
		if n <= 0 || size > uint64(len(p)-1-n) {
			return nil, fmt.Errorf("section %d: bad size", id)
		}
		payload := p[1+n : 1+n+int(size)]
		p = p[1+n+int(size):]
		var err error
		switch id {
		case 4: // table section
			payload, err = boundTables(payload)
			if err != nil {
				return nil, fmt.Errorf("table section: %w", err)
			}
		case 10: // code section
			payload, err = guardCode(payload)
			if err != nil {
				return nil, fmt.Errorf("code section: %w", err)
			}
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(payload)))
		out = append(out, payload...)
	}
	return out, nil
}

// Bounds on what a module's tables and locals may make the host allocate:
// wazero keeps a table entry as an 8-byte host pointer and a function's
// locals on its stack, outside the linear-memory limit of a call.
const (
	// maxTables bounds the tables a module defines.
	maxTables = 8
	// maxTableEntries bounds the sum of the tables' initial sizes (2 MiB).
	maxTableEntries = 1 << 18
	// tableGrowth is how far table.grow may take a table past its initial
	// size (512 KiB per table); a declared maximum below it is kept.
	tableGrowth = 1 << 16
	// maxLocals bounds the locals of one function (80 KB of frame; the
	// interpreter allows 2000 frames, the compiler about 400 MB of stack).
	maxLocals = 10_000
)

// boundTables rewrites the table section so that every table has a maximum
// of at most its initial size plus tableGrowth (a growth past it makes
// table.grow return -1, as a refused memory.grow does), and refuses modules
// whose tables start larger than maxTableEntries in all.
func boundTables(p []byte) ([]byte, error) {
	count, n := binary.Uvarint(p)
	if n <= 0 || count > maxTables {
		return nil, fmt.Errorf("%d tables, at most %d", count, maxTables)
	}
	p = p[n:]
	out := binary.AppendUvarint(make([]byte, 0, len(p)+16), count)
	var total uint64
	for i := uint64(0); i < count; i++ {
		if len(p) < 2 {
			return nil, fmt.Errorf("table %d: truncated", i)
		}
		reftype, flags := p[0], p[1]
		p = p[2:]
		if flags > 1 {
			return nil, fmt.Errorf("table %d: unsupported limits flags 0x%x", i, flags)
		}
		min, k := binary.Uvarint(p)
		if k <= 0 || min > 1<<32-1 {
			return nil, fmt.Errorf("table %d: bad initial size", i)
		}
		p = p[k:]
		max := min + tableGrowth
		if flags == 1 {
			declared, k := binary.Uvarint(p)
			if k <= 0 || declared < min {
				return nil, fmt.Errorf("table %d: bad maximum size", i)
			}
			p = p[k:]
			max = minU64(max, declared)
		}
		total += min
		if total > maxTableEntries {
			return nil, fmt.Errorf("tables start with more than %d entries in all", maxTableEntries)
		}
		out = append(out, reftype, 1)
		out = binary.AppendUvarint(out, min)
		out = binary.AppendUvarint(out, max)
	}
	if len(p) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

func minU64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

// entryLoop is "loop (blocktype empty) end".
var entryLoop = []byte{0x03, 0x40, 0x0b}

func guardCode(p []byte) ([]byte, error) {
	count, n := binary.Uvarint(p)
	if n <= 0 || count > uint64(len(p)) {
		return nil, errors.New("bad function count")
	}
	p = p[n:]
	out := binary.AppendUvarint(make([]byte, 0, len(p)+int(count)*4+8), count)
	for i := uint64(0); i < count; i++ {
		size, n := binary.Uvarint(p)
		if n <= 0 || size > uint64(len(p)-n) {
			return nil, fmt.Errorf("function %d: bad body size", i)
		}
		body := p[n : n+int(size)]
		p = p[n+int(size):]
		// Skip the local declarations: a vector of (count, value type).
		groups, m := binary.Uvarint(body)
		if m <= 0 || groups > uint64(len(body)) {
			return nil, fmt.Errorf("function %d: bad locals", i)
		}
		off := m
		var locals uint64
		for g := uint64(0); g < groups; g++ {
			c, k := binary.Uvarint(body[off:])
			if k <= 0 || off+k >= len(body) {
				return nil, fmt.Errorf("function %d: bad locals", i)
			}
			if c > maxLocals || locals+c > maxLocals {
				return nil, fmt.Errorf("function %d declares more than %d locals", i, maxLocals)
			}
			locals += c
			off += k
			switch body[off] {
			case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f: // i32 i64 f32 f64 v128 funcref externref
			default:
				return nil, fmt.Errorf("function %d: unknown local type 0x%x", i, body[off])
			}
			off++
		}
		out = binary.AppendUvarint(out, uint64(len(body)+len(entryLoop)))
		out = append(out, body[:off]...)
		out = append(out, entryLoop...)
		out = append(out, body[off:]...)
	}
	if len(p) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}
