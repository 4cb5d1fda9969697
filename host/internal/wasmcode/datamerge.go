package wasmcode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Bounds of the data-section rewrite (mergeData).
const (
	// maxDataGap is the longest run of zeros written between two
	// segments to merge them. Go's linker starts a new segment after
	// every run of 8 or more zero bytes: a Go tool has ~38,000 segments,
	// most a few bytes apart.
	maxDataGap = 1 << 10
	// maxMergedSegment is the size past which a merged segment takes no
	// more gap: larger segments save nothing measurable.
	maxMergedSegment = 1 << 20
)

// dataSeg is an active segment of memory 0 with a constant offset.
type dataSeg struct {
	off  uint64
	init []byte
}

// mergeData returns the data section payload with its active segments
// merged into as few as possible, and the number of segments it holds.
// It returns payload unchanged (and ok false) when it cannot rewrite it:
// a malformed section (wazero explains it), an active segment whose offset
// is not an i32.const or that fills another memory than 0, or a module
// whose memory is imported (its bytes before instantiation are not known
// to be zero).
//
// The rewrite computes the bytes the active segments leave in a fresh,
// zero memory (a later segment overwrites an earlier one, as
// instantiation applies them in order), and writes them back as one
// segment per run of written bytes, runs closer than maxDataGap joined
// with the zeros between them. The zeros written in a gap are at most the
// section's own size, so a module grows by at most its data section.
// Nothing else changes: a segment past the end of memory still fails
// instantiation (the merged run ends where it ended), and memory holds
// the same bytes after a successful one.
//
// Passive segments keep their index. When the module has a data count
// section (which memory.init and data.drop require) every index is kept:
// the merged segments take the slots of the first active segments, and
// the remaining active slots become empty passive segments, which
// memory.init and data.drop treat as they treat an active segment once
// instantiation has dropped it (length 0). Without a data count section no
// instruction can name a segment, and the slots go.
//
// Why: wazero evaluates the offset of every segment (allocating) and
// copies each one at every instantiation: applying a Go tool's segments
// took a quarter of its call. The rejected alternatives are in RATIONALE.md
// ("Why are data segments merged at load?").
func mergeData(payload []byte, keepIndices bool) (out []byte, ok bool) {
	r := reader{b: payload}
	count := r.u32()
	if r.err != nil || uint64(count) > uint64(len(payload)) {
		return payload, false
	}
	type slot struct {
		active bool
		raw    []byte // the encoded passive segment
	}
	slots := make([]slot, 0, count)
	var segs []dataSeg
	var total uint64
	for i := uint32(0); i < count; i++ {
		start := r.b
		flags := r.u32()
		var off uint64
		switch flags {
		case 0, 2: // active: memory index (flag 2) and offset
			if flags == 2 && r.u32() != 0 {
				return payload, false
			}
			if r.byte() != 0x41 { // i32.const
				return payload, false
			}
			v := r.s33()
			if r.byte() != 0x0b || v < -1<<31 || v >= 1<<31 {
				return payload, false
			}
			off = uint64(uint32(int32(v)))
		case 1: // passive
		default:
			return payload, false
		}
		n := r.u32()
		init := r.bytes(int(n))
		if r.err != nil {
			return payload, false
		}
		if flags == 1 {
			slots = append(slots, slot{raw: start[:len(start)-len(r.b)]})
			continue
		}
		slots = append(slots, slot{active: true})
		segs = append(segs, dataSeg{off: off, init: init})
		total += uint64(len(init))
	}
	if len(r.b) != 0 {
		return payload, false
	}
	merged := mergeSegments(segs, total)

	out = make([]byte, 0, len(payload)+int(total)+16)
	n := len(slots)
	if !keepIndices {
		n = len(merged)
		for _, s := range slots {
			if !s.active {
				n++
			}
		}
	}
	out = binary.AppendUvarint(out, uint64(n))
	next := 0
	for _, s := range slots {
		switch {
		case !s.active:
			out = append(out, s.raw...)
		case next < len(merged): // never more runs than active segments
			seg := merged[next]
			next++
			out = append(out, 0x00, 0x41) // active, memory 0, i32.const
			out = appendSleb(out, int64(int32(uint32(seg.off))))
			out = append(out, 0x0b)
			out = binary.AppendUvarint(out, uint64(len(seg.init)))
			out = append(out, seg.init...)
		case keepIndices:
			out = append(out, 0x01, 0x00) // passive, empty
		}
	}
	return out, true
}

// mergeSegments returns the runs of bytes that segs, applied in order to a
// zero memory, leave written, sorted by offset; runs closer than
// maxDataGap are joined by zeros while the zeros added stay within budget
// bytes. There are never more runs than segments.
func mergeSegments(segs []dataSeg, budget uint64) []dataSeg {
	if len(segs) == 0 {
		return nil
	}
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return segs[order[a]].off < segs[order[b]].off })
	// Runs as [start, end) ranges; overlapping segments always share one.
	type run struct{ start, end uint64 }
	var runs []run
	for _, i := range order {
		s := segs[i]
		end := s.off + uint64(len(s.init))
		if k := len(runs) - 1; k >= 0 {
			last := &runs[k]
			if s.off <= last.end {
				last.end = max(last.end, end)
				continue
			}
			gap := s.off - last.end
			if gap <= maxDataGap && gap <= budget && last.end-last.start < maxMergedSegment {
				budget -= gap
				last.end = max(last.end, end)
				continue
			}
		}
		runs = append(runs, run{s.off, end})
	}
	out := make([]dataSeg, len(runs))
	for i, rn := range runs {
		out[i] = dataSeg{off: rn.start, init: make([]byte, rn.end-rn.start)}
	}
	// Paint in the original order, so that a later segment wins.
	for _, s := range segs {
		if len(s.init) == 0 {
			continue
		}
		// The run that holds s: the last one starting at or before it.
		k := sort.Search(len(out), func(i int) bool { return out[i].off > s.off }) - 1
		copy(out[k].init[s.off-out[k].off:], s.init)
	}
	return out
}

// MergeDataSection returns wasm, a module Guard wrote, with its data
// section merged (mergeData). It runs after Guard, on its output,
// rather than inside it: the instrumentation and the data are independent,
// and reading the section headers again costs nothing next to compiling.
func MergeDataSection(wasm []byte) []byte {
	var secs []section
	for p := wasm[8:]; len(p) > 0; {
		size, n := binary.Uvarint(p[1:])
		if n <= 0 || size > uint64(len(p)-1-n) {
			return wasm // Guard wrote it: cannot happen
		}
		secs = append(secs, section{id: p[0], payload: p[1+n : 1+n+int(size)]})
		p = p[1+n+int(size):]
	}
	out := make([]byte, 0, len(wasm)+len(wasm)/4)
	out = append(out, wasm[:8]...)
	for _, s := range secs {
		payload := s.payload
		if s.id == secData {
			payload = rewriteData(secs, payload)
		}
		out = append(out, s.id)
		out = binary.AppendUvarint(out, uint64(len(payload)))
		out = append(out, payload...)
	}
	return out
}

// rewriteData is the data section payload of the module of secs as the
// host compiles it (mergeData), or payload when the module's memory is
// imported.
func rewriteData(secs []section, payload []byte) []byte {
	keep := false
	for _, s := range secs {
		switch s.id {
		case secImport:
			if importsMemory(s.payload) {
				return payload
			}
		case secDataCount:
			keep = true
		}
	}
	out, _ := mergeData(payload, keep)
	return out
}

// importsMemory reports whether an import section imports a memory (or is
// malformed: Guard reads it first and refuses that).
func importsMemory(p []byte) bool {
	found := false
	err := eachImport(p, func(_ uint32, d importDesc) bool {
		found = d.kind == importMemory
		return !found
	})
	return found || err != nil
}

// Import kinds (the byte before an import's descriptor).
const (
	importFunc   = 0x00
	importTable  = 0x01
	importMemory = 0x02
	importGlobal = 0x03
)

// importDesc is one entry of an import section: the module it imports
// from, its kind and, for a function, its type index; for a global, its
// value type and whether it is mutable; for a table, its reference type.
type importDesc struct {
	module  []byte // aliases the section
	kind    byte
	typ     uint32 // function: type index
	valType byte   // global: value type; table: reference type
	mutable bool   // global
}

// eachImport calls f with each entry of an import section (and its index)
// until f returns false; it fails on a malformed section or an unknown
// kind.
func eachImport(p []byte, f func(i uint32, d importDesc) bool) error {
	r := reader{b: p}
	count := r.u32()
	for i := uint32(0); i < count && r.err == nil; i++ {
		d := importDesc{module: r.bytes(int(r.u32()))}
		r.name()
		d.kind = r.byte()
		switch d.kind {
		case importFunc:
			d.typ = r.u32()
		case importTable:
			d.valType = r.byte()
			r.limits()
		case importMemory:
			r.limits()
		case importGlobal:
			d.valType = r.byte()
			d.mutable = r.byte() != 0
		default:
			return fmt.Errorf("import %d: unsupported kind %#x", i, d.kind)
		}
		if r.err == nil && !f(i, d) {
			return nil
		}
	}
	if r.err == nil && len(r.b) != 0 {
		return errors.New("malformed import section: bytes after its entries")
	}
	return r.err
}
