package wasmrt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/tetratelabs/wazero/api"

	"github.com/wasmtask/wasmtask/abi"
)

// Pre-initialisation (abi.ExportInitialize): a module that exports
// "_initialize" as well as "_start" is run once at load up to the end of
// _initialize, in the sandbox with the Limits of its load; its linear
// memory and mutable globals are then written into a new module — data
// segments for the memory's non-zero words (snapshotRuns), constant initial
// values for the globals, a memory section that starts at the size
// reached — and that module is the one compiled and instantiated for
// every call, which then runs _start only. Each call still gets a fresh
// instance; it starts from the snapshot instead of from nothing. A Go tool
// built as a reactor (-buildmode=c-shared, which makes _initialize start
// the Go runtime and run the package initialisers) saves most of its
// start-up so.
//
// What _initialize leaves is bounded twice: it runs within the memory limit
// of the load (the most the module's tools get), and the snapshot's data,
// which the compiled module keeps, is held against Config.MaxSnapshotMiB
// from before it is written until the module is freed. The memory is read
// in place and written once, into the snapshot module.
//
// During _initialize the host functions of abi.ImportModule trap (nothing
// may depend on a call that does not exist yet), stdin is empty and
// stdout must stay empty. Clocks and random read normally, but what the
// module keeps of them is the same in every call: ABI.md says so.
//
// What cannot be captured is refused at load: a start section (it ran
// before the snapshot but its effects on tables could not be kept), a data
// count section (passive segments and data.drop: a segment dropped during
// _initialize would be live again), imported or non-numeric mutable
// globals, and _initialize ending by proc_exit or a trap. Tables are
// assumed unchanged by _initialize (table.set/grow there are not seen).

// globalExportPrefix names the exports the pre-initialisation run adds
// for the module's mutable globals, by index.
const globalExportPrefix = "wasmtask:global:"

// preinitModule is what preinit needs of a module beside its bytes.
type preinitModule struct {
	globals  []globalDecl // defined globals, in order
	imported uint64       // imported globals (indices come first)
}

type globalDecl struct {
	valType byte
	mutable bool
}

// wantsPreinit reports whether wasm exports a function named
// abi.ExportInitialize.
func wantsPreinit(wasm []byte) bool {
	found := false
	_ = eachSection(wasm, func(id byte, p []byte) []byte {
		if id == secExport {
			r := reader{b: p}
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				name := r.bytes(int(r.u32()))
				kind := r.byte()
				r.u32()
				if kind == 0x00 && string(name) == abi.ExportInitialize {
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

// exposeGlobals returns wasm with every defined mutable global exported
// (globalExportPrefix and its index), so that the host can read them after
// _initialize, and what it learned of the globals. It refuses what a
// snapshot cannot capture (see above).
func exposeGlobals(wasm []byte) ([]byte, *preinitModule, error) {
	pm := &preinitModule{}
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
			exports = appendName(exports, globalExportPrefix+strconv.Itoa(i))
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

// snapshotState is the state of an instance after _initialize.
type snapshotState struct {
	mem      []byte   // its linear memory: the instance's own, valid while it lives
	dataSize uint64   // of the data section payload that writes mem (snapshotDataSize)
	globals  []uint64 // by defined index; immutable ones unused
}

// capture reads the state of mod after _initialize; hold is given the
// bytes the snapshot's data takes before they are allocated, and may refuse
// them. The memory is not copied: snapshotModule writes it into the
// snapshot while the instance lives.
func (pm *preinitModule) capture(mod api.Module, hold func(bytes uint64) error) (*snapshotState, error) {
	s := &snapshotState{globals: make([]uint64, len(pm.globals))}
	for i, g := range pm.globals {
		if !g.mutable {
			continue
		}
		eg := mod.ExportedGlobal(globalExportPrefix + strconv.Itoa(i))
		if eg == nil {
			return nil, fmt.Errorf("global %d is not exported", i)
		}
		s.globals[i] = eg.Get()
	}
	mem := mod.ExportedMemory("memory")
	if mem == nil {
		return nil, errors.New("no memory")
	}
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, errors.New("memory unreadable")
	}
	s.mem, s.dataSize = b, snapshotDataSize(b)
	if err := hold(s.dataSize); err != nil {
		return nil, err
	}
	return s, nil
}

// snapshotModule returns wasm (the module as its author built it) rewritten
// to start from s: a data section that writes s.mem replaces its own
// (appended last: only custom sections may follow it, and they may come
// anywhere), the memory starts at the size of s.mem, mutable globals start
// at their values. The data is written once, into the module.
func (pm *preinitModule) snapshotModule(wasm []byte, s *snapshotState) ([]byte, error) {
	var err error
	pages := uint64(len(s.mem)) / pageSize
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
				v := s.globals[i]
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
	snap := make([]byte, 0, len(out)+int(s.dataSize)+16)
	snap = append(snap, out...)
	snap = append(snap, secData)
	snap = binary.AppendUvarint(snap, s.dataSize)
	return appendSnapshotData(snap, s.mem), nil
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
			if i-end < maxDataGap || (i/pageSize == page && started >= snapshotRunsPerPage) {
				end = i + 8
				continue
			}
			f(start, end)
		}
		if i/pageSize != page {
			page, started = i/pageSize, 0
		}
		started++
		start, end = i, i+8
	}
	if start >= 0 {
		f(start, end)
	}
}

// snapshotDataSize is the length of the data section payload that
// appendSnapshotData writes for mem.
func snapshotDataSize(mem []byte) uint64 {
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

// preinit runs the pre-initialisation of wasm (which wantsPreinit) and
// returns the module to compile instead, and its share of
// Config.MaxSnapshotMiB: loaded in a module of its own within lim, run to
// the end of _initialize within lim, captured.
func (r *Runtime) preinit(ctx context.Context, name string, wasm []byte, lim Limits) ([]byte, *snapshotHold, error) {
	exposed, pm, err := exposeGlobals(wasm)
	if err != nil {
		return nil, nil, fmt.Errorf("load %q: %w: cannot pre-initialise: %v", name, ErrABI, err)
	}
	tmp := &Module{r: r, name: name, done: make(chan struct{})}
	if err := tmp.compile(ctx, exposed, lim); err != nil {
		return nil, nil, err
	}
	defer tmp.closeEngine(context.Background())
	var snap []byte
	var hold *snapshotHold
	var holdErr, snapErr error
	_, err = r.runLoad(ctx, tmp, abi.ExportInitialize, nil, lim, func(c *call, mod api.Module) error {
		if len(c.stdout.buf) > 0 {
			return errors.New("it wrote to stdout during _initialize")
		}
		state, err := pm.capture(mod, func(n uint64) error {
			hold, holdErr = r.holdSnapshot(n)
			return holdErr
		})
		if err != nil {
			return err
		}
		snap, snapErr = pm.snapshotModule(wasm, state)
		return snapErr
	})
	switch {
	case holdErr != nil:
		return nil, nil, fmt.Errorf("load %q: cannot pre-initialise: %w", name, holdErr)
	case snapErr != nil:
		hold.release()
		return nil, nil, fmt.Errorf("load %q: %w: cannot pre-initialise: %v", name, ErrABI, snapErr)
	case err != nil:
		hold.release()
		return nil, nil, fmt.Errorf("load %q: pre-initialisation failed: %w", name, err)
	}
	return snap, hold, nil
}
