package wasmcode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// globalExportPrefix names the exports the pre-initialisation run adds
// for the module's mutable globals, by index.
const globalExportPrefix = "wasmtask:global:"

// Preinit is what a snapshot needs of a module beside its bytes: its
// globals, which ExposeGlobals exported for the host to read.
type Preinit struct {
	globals  []globalDecl // defined globals, in order
	imported uint64       // imported globals (indices come first)
}

type globalDecl struct {
	valType byte
	mutable bool
}

// ExportsFunc reports whether wasm exports a function named name. Malformed
// sections read as exporting nothing: Guard refuses them.
func ExportsFunc(wasm []byte, name string) bool {
	found := false
	_ = eachSection(wasm, func(id byte, p []byte) []byte {
		if id == secExport {
			r := reader{b: p}
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				exp := r.bytes(int(r.u32()))
				kind := r.byte()
				r.u32()
				if kind == 0x00 && string(exp) == name {
					found = true
				}
			}
		}
		return p
	})
	return found
}

// eachSection rewrites wasm section by section: f returns the new payload
// (nil drops the section). It returns nil when the sections are malformed.
func eachSection(wasm []byte, f func(id byte, payload []byte) []byte) []byte {
	if len(wasm) < 8 {
		return nil
	}
	out := append(make([]byte, 0, len(wasm)), wasm[:8]...)
	for p := wasm[8:]; len(p) > 0; {
		id := p[0]
		size, n := binary.Uvarint(p[1:])
		if n <= 0 || size > uint64(len(p)-1-n) {
			return nil
		}
		payload := f(id, p[1+n:1+n+int(size)])
		p = p[1+n+int(size):]
		if payload == nil {
			continue
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(payload)))
		out = append(out, payload...)
	}
	return out
}

// ExposeGlobals returns wasm with every defined mutable global exported
// (under GlobalExport of its index), so that the host can read them after
// _initialize, and what it learned of the globals. It refuses what a
// snapshot cannot capture (doc.go, "Snapshots").
func ExposeGlobals(wasm []byte) ([]byte, *Preinit, error) {
	pm := &Preinit{}
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	// First pass: imports and globals.
	_ = eachSection(wasm, func(id byte, p []byte) []byte {
		switch id {
		case secImport:
			_ = eachImport(p, func(_ uint32, d importDesc) bool { // guardModule refused a malformed section
				if d.kind == importGlobal {
					if d.mutable {
						fail(errors.New("it imports a mutable global"))
					}
					pm.imported++
				}
				return true
			})
		case secGlobal:
			r := reader{b: p}
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				g := globalDecl{valType: r.byte(), mutable: r.byte() == 1}
				r.constExpr()
				if g.mutable && g.valType != 0x7f && g.valType != 0x7e && g.valType != 0x7d && g.valType != 0x7c {
					fail(fmt.Errorf("global %d is a mutable %#x, not a number", i, g.valType))
				}
				pm.globals = append(pm.globals, g)
			}
			if r.err != nil {
				fail(errors.New("malformed global section"))
			}
		case secStart:
			fail(errors.New("it has a start function"))
		case secDataCount:
			fail(errors.New("it has passive data segments (a data count section)"))
		}
		return p
	})
	if err != nil {
		return nil, nil, err
	}
	var exports []byte
	var count uint64
	for i, g := range pm.globals {
		if g.mutable {
			exports = appendName(exports, GlobalExport(i))
			exports = append(exports, 0x03)
			exports = binary.AppendUvarint(exports, pm.imported+uint64(i))
			count++
		}
	}
	out := eachSection(wasm, func(id byte, p []byte) []byte {
		if id == secExport {
			return appendVec(p, count, exports)
		}
		return p
	})
	if out == nil {
		return nil, nil, errors.New("malformed module")
	}
	return out, pm, nil
}

// Snapshot is the state of an instance after _initialize, as the host read
// it.
type Snapshot struct {
	Mem      []byte   // its linear memory (read in place: valid while the instance lives)
	DataSize uint64   // SnapshotDataSize(Mem)
	Globals  []uint64 // by defined index; those not mutable unused
}

// MutableGlobals returns the defined indices of the module's mutable
// globals, in order: the ones the host reads into Snapshot.Globals.
func (pm *Preinit) MutableGlobals() []int {
	var out []int
	for i, g := range pm.globals {
		if g.mutable {
			out = append(out, i)
		}
	}
	return out
}

// Globals is the number of globals the module defines.
func (pm *Preinit) Globals() int { return len(pm.globals) }

// GlobalExport names the export ExposeGlobals gives defined global i.
func GlobalExport(i int) string { return globalExportPrefix + strconv.Itoa(i) }

// Rewrite returns wasm (the module as its author built it) rewritten
// to start from s: a data section that writes s.Mem replaces its own
// (appended last: only custom sections may follow it, and they may come
// anywhere), the memory starts at the size of s.mem, mutable globals start
// at their values. The data is written once, into the module.
func (pm *Preinit) Rewrite(wasm []byte, s *Snapshot) ([]byte, error) {
	var err error
	pages := uint64(len(s.Mem)) / PageSize
	out := eachSection(wasm, func(id byte, p []byte) []byte {
		switch id {
		case secMemory:
			r := reader{b: p}
			if r.u32() != 1 {
				err = errors.New("it defines more than one memory")
				return p
			}
			flags := r.byte()
			lo := r.u32()
			var hi uint32
			if flags&1 != 0 {
				hi = r.u32()
			}
			if r.err != nil || flags > 1 || len(r.b) != 0 {
				err = errors.New("unsupported memory section")
				return p
			}
			o := []byte{1, flags}
			o = binary.AppendUvarint(o, max(uint64(lo), pages))
			if flags&1 != 0 {
				o = binary.AppendUvarint(o, uint64(hi))
			}
			return o
		case secGlobal:
			o := binary.AppendUvarint(nil, uint64(len(pm.globals)))
			r := reader{b: p}
			r.u32()
			for i, g := range pm.globals {
				start := r.b
				r.byte()
				r.byte()
				r.constExpr()
				if !g.mutable {
					o = append(o, start[:len(start)-len(r.b)]...)
					continue
				}
				o = append(o, g.valType, 1)
				v := s.Globals[i]
				switch g.valType {
				case 0x7f:
					o = appendSleb(append(o, 0x41), int64(int32(uint32(v))))
				case 0x7e:
					o = appendSleb(append(o, 0x42), int64(v))
				case 0x7d:
					o = binary.LittleEndian.AppendUint32(append(o, 0x43), uint32(v))
				case 0x7c:
					o = binary.LittleEndian.AppendUint64(append(o, 0x44), v)
				}
				o = append(o, 0x0b)
			}
			return o
		case secData:
			return nil
		}
		return p
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("malformed module")
	}
	snap := make([]byte, 0, len(out)+int(s.DataSize)+16)
	snap = append(snap, out...)
	snap = append(snap, secData)
	snap = binary.AppendUvarint(snap, s.DataSize)
	return appendSnapshotData(snap, s.Mem), nil
}

// A snapshot's data section writes the non-zero words of linear memory:
// runs of 8-byte words that are not zero, joined across runs of zeros
// shorter than maxDataGap, and across any zeros once snapshotRunsPerPage
// runs have started in one 64 KiB page. Its encoding is bounded whatever
// the memory holds: two runs are always more than maxDataGap apart, more
// than a segment's header (at most 13 bytes), so the section is never
// larger than a plain copy of the memory plus one header; and it has at
// most snapshotRunsPerPage segments per page, so that an instance applies
// few. Alternating bytes, the worst pattern for runs of bytes (one
// segment per byte), are one segment.
const snapshotRunsPerPage = 4

// snapshotRuns calls f with the [start, end) byte ranges of mem that a
// snapshot's data section writes, in order. len(mem) is a multiple of 8
// (linear memory is whole pages).
func snapshotRuns(mem []byte, f func(start, end int)) {
	start, end := -1, 0
	page, started := -1, 0 // page of the last run's start, runs started in it
	for i := 0; i+8 <= len(mem); i += 8 {
		if binary.LittleEndian.Uint64(mem[i:]) == 0 {
			continue
		}
		if start >= 0 {
			if i-end < maxDataGap || (i/PageSize == page && started >= snapshotRunsPerPage) {
				end = i + 8
				continue
			}
			f(start, end)
		}
		if i/PageSize != page {
			page, started = i/PageSize, 0
		}
		started++
		start, end = i, i+8
	}
	if start >= 0 {
		f(start, end)
	}
}

// SnapshotDataSize is the length of the data section payload that a
// snapshot of mem holds: what Rewrite allocates for it beside the module.
func SnapshotDataSize(mem []byte) uint64 {
	var size, n uint64
	snapshotRuns(mem, func(start, end int) {
		size += segmentHeaderSize(start, end) + uint64(end-start)
		n++
	})
	return size + uint64(len(binary.AppendUvarint(nil, n)))
}

func segmentHeaderSize(start, end int) uint64 {
	return uint64(3 + len(appendSleb(nil, int64(int32(uint32(start))))) + len(binary.AppendUvarint(nil, uint64(end-start))))
}

// appendSnapshotData appends to out the data section payload that writes
// mem's non-zero words (snapshotRuns), each run an active segment of
// memory 0 at an i32.const offset.
func appendSnapshotData(out, mem []byte) []byte {
	var n uint64
	snapshotRuns(mem, func(int, int) { n++ })
	out = binary.AppendUvarint(out, n)
	snapshotRuns(mem, func(start, end int) {
		out = append(out, 0x00, 0x41)
		out = appendSleb(out, int64(int32(uint32(start))))
		out = append(out, 0x0b)
		out = binary.AppendUvarint(out, uint64(end-start))
		out = append(out, mem[start:end]...)
	})
	return out
}
