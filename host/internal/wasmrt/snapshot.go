package wasmrt

import (
	"bytes"
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
// _initialize, in the sandbox with Config.LoadLimits; its linear memory and
// mutable globals are then written into a new module — data segments for
// the memory's non-zero bytes, constant initial values for the globals, a
// memory section that starts at the size reached — and that module is the
// one compiled and instantiated for every call, which then runs _start
// only. Each call still gets a fresh instance; it starts from the snapshot
// instead of from nothing. A Go tool built as a reactor (-buildmode=c-shared,
// which makes _initialize start the Go runtime and run the package
// initialisers) saves most of its start-up so.
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
	mem     []byte
	globals []uint64 // by defined index; immutable ones unused
}

// capture reads the state of mod after _initialize.
func (pm *preinitModule) capture(mod api.Module) (*snapshotState, error) {
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
	s.mem = bytes.Clone(b)
	return s, nil
}

// snapshotModule returns wasm (the module as its author built it) rewritten
// to start from s: data segments hold the non-zero bytes of s.mem, the
// memory starts at len(s.mem), mutable globals start at their values.
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
			return snapshotData(s.mem)
		}
		return p
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("malformed module")
	}
	return out, nil
}

// snapshotData is a data section that writes the non-zero bytes of mem:
// runs of non-zero bytes joined across gaps shorter than maxDataGap
// (mergeSegments).
func snapshotData(mem []byte) []byte {
	var segs []dataSeg
	for i := 0; i < len(mem); {
		for i < len(mem) && mem[i] == 0 {
			i++
		}
		j := i
		for j < len(mem) && mem[j] != 0 {
			j++
		}
		if j > i {
			segs = append(segs, dataSeg{off: uint64(i), init: mem[i:j]})
		}
		i = j
	}
	var total uint64
	for _, s := range segs {
		total += uint64(len(s.init))
	}
	merged := mergeSegments(segs, total)
	out := binary.AppendUvarint(nil, uint64(len(merged)))
	for _, s := range merged {
		out = append(out, 0x00, 0x41)
		out = appendSleb(out, int64(int32(uint32(s.off))))
		out = append(out, 0x0b)
		out = binary.AppendUvarint(out, uint64(len(s.init)))
		out = append(out, s.init...)
	}
	return out
}

// preinit runs the pre-initialisation of wasm (which wantsPreinit) and
// returns the module to compile instead: loaded in a module of its own,
// run to the end of _initialize within Config.LoadLimits, captured.
func (r *Runtime) preinit(ctx context.Context, name string, wasm []byte) ([]byte, error) {
	exposed, pm, err := exposeGlobals(wasm)
	if err != nil {
		return nil, fmt.Errorf("load %q: %w: cannot pre-initialise: %v", name, ErrABI, err)
	}
	tmp := &Module{r: r, name: name, done: make(chan struct{})}
	if err := tmp.compile(ctx, exposed); err != nil {
		return nil, err
	}
	defer tmp.closeEngine(context.Background())
	lim := r.cfg.LoadLimits
	lim.MemoryMiB = max(lim.MemoryMiB, tmp.needMiB())
	var state *snapshotState
	_, gerr := r.runWith(ctx, tmp, abi.ExportInitialize, nil, lim, nil, func(c *call, mod api.Module) error {
		if len(c.stdout.buf) > 0 {
			return errors.New("it wrote to stdout during _initialize")
		}
		var err error
		state, err = pm.capture(mod)
		return err
	})
	if gerr != nil {
		return nil, fmt.Errorf("load %q: pre-initialisation failed: %w", name, gerr)
	}
	snap, err := pm.snapshotModule(wasm, state)
	if err != nil {
		return nil, fmt.Errorf("load %q: %w: cannot pre-initialise: %v", name, ErrABI, err)
	}
	return snap, nil
}
