package wasmcode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrTooLarge is matched by the error of a module whose load would pass a
// bound (loadbounds.go): its code passes Options.MaxWork, one function
// body MaxFunctionBytes, its compile work or one function's, or what one
// instance of it takes passes Options.MaxMemory. It is refused before the
// expensive step.
var ErrTooLarge = errors.New("module too large to load")

// MaxFunctionBytes bounds one function body. Compiling a function cannot be
// interrupted, and its cost grows faster than its size (measured with
// wazero's compiler: 70 ms for 1 MiB, 700 ms for 4 MiB), so the bound keeps
// a load's overrun past its deadline small. The largest function of the
// bundled Go module is 29 KB.
const MaxFunctionBytes = 1 << 20

// PageSize is the size of a page of linear memory.
const PageSize = 65536

// Options are what one rewrite depends on beside the module's bytes.
type Options struct {
	// Interpreter: the module runs on wazero's interpreter, whose frames
	// cost differently from the compiler's (stack.go).
	Interpreter bool
	// MaxWork bounds the module's compile work (loadbounds.go); 0: no bound.
	MaxWork uint64
	// MaxMemory is the memory limit of one instance: what it takes outside
	// linear memory and the stack, its initial linear memory and the least
	// stack must fit; 0: no bound.
	MaxMemory uint64
	// FuelPerCheck is the fuel the host's check hands out (fuel.go): the
	// counter's initial value and the heaviest single charge. It must be
	// positive.
	FuelPerCheck int32
}

// Guarded is a module as the host compiles it, and the facts about it that
// bound what one instance of it makes the host allocate.
type Guarded struct {
	Wasm   []byte
	Static uint64 // host bytes of one instance outside linear memory and stack (staticBytes)
	// HasStart: the module's start function was moved to the StartExport
	// export; the host runs it after setting the memory pool.
	HasStart   bool
	FrameCosts []uint64 // charge of every defined function's frame (stack.go)
	Work       uint64   // its compile work (loadbounds.go)
}

// Export names the rewrite adds to every module. A module that exports one
// of them itself fails to compile (duplicate export).
const (
	// LeftExport and LowExport are the mutable i64 globals of the call's
	// memory pool (stack.go): the bytes left now, and the least left so
	// far. Both are 0 until the host sets them, so that guest code that
	// runs earlier traps.
	LeftExport = "wasmtask:left"
	LowExport  = "wasmtask:low"
	// StartExport is the module's start function, if it had one: the host
	// runs it after setting the pool (a start section would run during
	// instantiation, before the host can set it).
	StartExport = "wasmtask:start"
)

// checkHeader refuses what is not a core WebAssembly module, saying what
// it is when that is known: a component (the component model's binaries,
// as wasm32-wasip2 toolchains write) needs another build, not a fix.
func checkHeader(wasm []byte) error {
	switch {
	case len(wasm) < 8 || string(wasm[:4]) != "\x00asm":
		return errors.New("not a WebAssembly module (it does not start with the \\0asm magic)")
	case string(wasm[4:8]) == "\x01\x00\x00\x00":
		return nil
	case IsComponent(wasm):
		return errors.New("a WebAssembly component, not a core module: build the tool for wasm32-wasip1 (WASI preview 1), as abi/ABI.md shows")
	}
	return fmt.Errorf("WebAssembly binary version %d, not 1", binary.LittleEndian.Uint32(wasm[4:8]))
}

// IsComponent reports whether wasm is a WebAssembly component (the
// component model's binary: layer 1 in the header's last two bytes), not a
// core module.
func IsComponent(wasm []byte) bool {
	return len(wasm) >= 8 && string(wasm[:4]) == "\x00asm" && wasm[6] == 1 && wasm[7] == 0
}

// Guard returns the module wasm as the host compiles it for one of
// wazero's engines (o.Interpreter or the compiler):
//
//   - every function entry and loop header is charged to a fuel counter,
//     checked by an imported host function that ends the guest when its
//     call is over (fuel.go); defined functions' indices move up by one;
//   - every function body is instrumented to charge its stack frame to the
//     call's memory pool and to reload the pool after memory.grow
//     (stack.go);
//   - the pool's two globals are appended and exported (leftExport,
//     LowExport), with an empty function for the reload, and the fuel
//     counter, not exported; a start section becomes the StartExport
//     export;
//   - every table gets a bounded maximum (boundTables);
//   - DWARF sections (".debug_*") are dropped: the instrumentation moves
//     code offsets, and a wrong source position in a trap is worse than none.
//
// It also counts what one instance allocates outside linear memory and the
// stack: globals, tables at their maximum, element segments (staticBytes);
// and it refuses, before the step that would spend it, a module whose load
// passes its bounds (loadbounds.go), with an error that matches
// [ErrTooLarge].
//
// Why: a guest must stop at its cancel or timeout, also when its work is a
// loop-free call tree, and wazero's WithCloseOnContextDone, which checks at
// every loop iteration, made a tight loop 20 times slower (RATIONALE.md,
// "Why is cancellation a fuel counter instead of WithCloseOnContextDone?").
// And wazero keeps globals, tables and the call stack in host memory
// outside the linear-memory limit: a deep recursion grew the compiler's
// stack to ~170 MB in one call (RATIONALE.md, "Why is the guest's stack
// bounded by instrumentation?").
//
// The rewrite decodes every instruction; it refuses what it does not know
// (wazero's features beyond Wasm 2.0 are disabled anyway) rather than guess,
// and refuses references to function and global indices the original
// module does not define, which the appended ones would otherwise make
// valid.
func Guard(wasm []byte, o Options) (*Guarded, error) {
	if o.FuelPerCheck <= 0 {
		return nil, errors.New("no fuel per check")
	}
	maxCode := int(o.MaxWork)
	if err := checkHeader(wasm); err != nil {
		return nil, err
	}
	var secs []section
	p := wasm[8:]
	for len(p) > 0 {
		if len(secs) == maxSections {
			return nil, fmt.Errorf("more than %d sections", maxSections)
		}
		id := p[0]
		size, n := binary.Uvarint(p[1:])
		if n <= 0 || size > uint64(len(p)-1-n) {
			return nil, fmt.Errorf("section %d: bad size", id)
		}
		secs = append(secs, section{id: id, payload: p[1+n : 1+n+int(size)]})
		p = p[1+n+int(size):]
	}

	m := &moduleInfo{interpreter: o.Interpreter, perCheck: uint64(o.FuelPerCheck), load: loadCost{bounds: loadBounds{work: o.MaxWork, memory: o.MaxMemory}}}
	if err := m.checkCounts(secs); err != nil {
		return nil, err
	}
	// First pass: what the instrumentation needs to know before it writes.
	hasCode := false
	for _, s := range secs {
		var err error
		switch s.id {
		case secType:
			err = m.readTypes(s.payload)
		case secImport:
			err = m.readImports(s.payload)
		case secFunction:
			err = m.readFunctions(s.payload)
		case secGlobal:
			err = m.readGlobals(s.payload)
		case secTable:
			err = m.readTables(s.payload)
		case secStart:
			idx, n := binary.Uvarint(s.payload)
			if n <= 0 || n != len(s.payload) {
				err = errors.New("bad start section")
			}
			m.start, m.hasStart = idx, true
		case secElement:
			var refs uint64
			m.passiveElems, refs, err = elementCounts(s.payload)
			m.elemRefs += refs
		case secTag:
			err = errors.New("exception handling is not supported")
		case secCode:
			hasCode = true
		}
		if err != nil {
			return nil, fmt.Errorf("%s section: %w", sectionName(s.id), err)
		}
	}
	if hasCode && m.blockTypes == nil {
		return nil, errors.New("code section without a type section")
	}
	if err := m.checkInstance(secs); err != nil {
		return nil, err
	}
	if m.hasStart {
		// A start function takes and returns nothing; exported, it could
		// take anything.
		if m.start >= uint64(len(m.funcs)) {
			return nil, errors.New("start function out of range")
		}
		if ft := m.types[m.funcs[m.start]]; len(ft.params)+len(ft.results) != 0 {
			return nil, errors.New("start function must have type () -> ()")
		}
	}
	// Indices of what Guard appends: the globals and the reload
	// function follow every index the module defines; the fuel check is
	// the last import, so defined functions move up by one (funcOut).
	m.fuelled = hasCode
	ix := appended{left: m.globals, low: m.globals + 1, fuel: m.globals + 2,
		reload: m.funcOut(uint64(len(m.funcs))), check: uint64(m.imported)}
	body, err := m.instrumentCode(secs, ix)
	if err != nil {
		return nil, fmt.Errorf("code section: %w", err)
	}
	if maxCode > 0 && len(body) > maxCode {
		return nil, fmt.Errorf("code section: %w: %d bytes of code, more than the limit of %d MiB", ErrTooLarge, len(body), maxCode>>20)
	}

	out := make([]byte, 0, len(wasm)+len(m.funcs)*64+1024)
	out = append(out, wasm[:8]...)
	emit := func(id byte, payload []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(payload)))
		out = append(out, payload...)
	}
	// The fuel check needs an import section, the appended globals a
	// global section and the exports an export section; a module without
	// them gets them at their place in the order.
	var globals, exports []byte
	globals = append(globals, 0x7e, 0x01, 0x42, 0x00, 0x0b) // left: (mut i64) (i64.const 0)
	globals = append(globals, 0x7e, 0x01, 0x42, 0x00, 0x0b) // low
	globals = append(globals, 0x7f, 0x01, 0x41)             // fuel: (mut i32) (i32.const FuelPerCheck)
	globals = appendSleb(globals, int64(m.perCheck))
	globals = append(globals, 0x0b)
	const nGlobals = 3
	exports = appendName(exports, LeftExport)
	exports = append(exports, 0x03) // global
	exports = binary.AppendUvarint(exports, ix.left)
	exports = appendName(exports, LowExport)
	exports = append(exports, 0x03)
	exports = binary.AppendUvarint(exports, ix.low)
	nExports := uint64(2)
	if m.hasStart {
		exports = appendName(exports, StartExport)
		exports = append(exports, 0x00) // function
		exports = binary.AppendUvarint(exports, m.funcOut(m.start))
		nExports++
	}
	wroteImport, wroteGlobal, wroteExport := !m.fuelled, false, false
	for _, s := range secs {
		if s.id != secCustom {
			if !wroteImport && order(s.id) > order(secImport) {
				emit(secImport, appendVec(nil, 1, m.importEntry()))
				wroteImport = true
			}
			if !wroteGlobal && order(s.id) > order(secGlobal) {
				emit(secGlobal, appendVec(nil, nGlobals, globals))
				wroteGlobal = true
			}
			if !wroteExport && order(s.id) > order(secExport) {
				emit(secExport, appendVec(nil, nExports, exports))
				wroteExport = true
			}
		}
		var payload []byte
		var err error
		switch s.id {
		case secCustom:
			name, _, ok := readName(s.payload)
			if ok && strings.HasPrefix(name, ".debug_") {
				continue
			}
			payload = s.payload
			// Rewritten also without code: wazero allocates what the
			// name section's counts declare before it reads the names,
			// and rewriteNames reads them first.
			if ok && name == "name" {
				if payload, ok = m.rewriteNames(s.payload); !ok {
					continue
				}
			}
		case secImport:
			payload = s.payload
			if m.fuelled {
				payload, wroteImport = appendVec(s.payload, 1, m.importEntry()), true
			}
		case secType:
			payload = m.typeSection(s.payload)
		case secFunction:
			payload = s.payload
			if m.appendsReload {
				types := binary.AppendUvarint(nil, m.blockTypes[""])
				for _, h := range m.helpers {
					types = binary.AppendUvarint(types, h.typ)
				}
				payload = appendVec(s.payload, 1+uint64(len(m.helpers)), types)
			}
		case secTable:
			payload, m.tableBytes, err = boundTables(s.payload)
			if err != nil {
				return nil, fmt.Errorf("table section: %w", err)
			}
		case secGlobal:
			if payload, err = m.rewriteGlobals(s.payload); err != nil {
				return nil, fmt.Errorf("global section: %w", err)
			}
			payload, wroteGlobal = appendVec(payload, nGlobals, globals), true
		case secExport:
			if payload, err = m.rewriteExports(s.payload); err != nil {
				return nil, fmt.Errorf("export section: %w", err)
			}
			payload, wroteExport = appendVec(payload, nExports, exports), true
		case secElement:
			if payload, err = m.rewriteElements(s.payload); err != nil {
				return nil, fmt.Errorf("element section: %w", err)
			}
		case secStart:
			continue // exported as StartExport instead
		case secCode:
			payload = body
		default:
			payload = s.payload
		}
		emit(s.id, payload)
	}
	if !wroteImport {
		emit(secImport, appendVec(nil, 1, m.importEntry()))
	}
	if !wroteGlobal {
		emit(secGlobal, appendVec(nil, nGlobals, globals))
	}
	if !wroteExport {
		emit(secExport, appendVec(nil, nExports, exports))
	}
	return &Guarded{Wasm: out, Static: m.staticBytes(), HasStart: m.hasStart, FrameCosts: m.frameCosts, Work: m.load.work}, nil
}

// appended are the indices of what Guard appends.
type appended struct {
	left, low, fuel uint64 // the memory pool's globals (stack.go) and the fuel counter (fuel.go)
	reload, check   uint64 // the reload function and the fuel check
}

// appendVec returns the vector section payload vec (nil: an empty vector)
// with n more entries, encoded in extra.
func appendVec(vec []byte, n uint64, extra []byte) []byte {
	var count uint64
	if vec != nil {
		c, k := binary.Uvarint(vec)
		count, vec = c, vec[k:]
	}
	out := binary.AppendUvarint(make([]byte, 0, len(vec)+len(extra)+8), count+n)
	out = append(out, vec...)
	return append(out, extra...)
}

type section struct {
	id      byte
	payload []byte
}

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// order is a known section's rank in the order the binary format requires.
func order(id byte) int {
	switch id {
	case secTag:
		return 55 // between memory and global
	case secDataCount:
		return 95 // between element and code
	}
	return int(id) * 10
}

func sectionName(id byte) string {
	names := map[byte]string{secType: "type", secImport: "import", secFunction: "function", secTable: "table",
		secMemory: "memory", secGlobal: "global", secExport: "export", secStart: "start", secElement: "element",
		secCode: "code", secData: "data", secTag: "tag"}
	if n, ok := names[id]; ok {
		return n
	}
	return fmt.Sprintf("%d", id)
}

// funcType is a function type: its parameter and result value types.
type funcType struct{ params, results []byte }

// moduleInfo is what Guard learns about a module.
type moduleInfo struct {
	types          []funcType
	blockTypes     map[string]uint64 // results (but one) → index of a () -> results type
	appendedTypes  []funcType        // the types Guard appends: () -> results for blocks, the bulk helpers' (bulk.go)
	funcs          []uint64          // type index of every function, imports first
	imported       int               // imported functions
	globals        uint64            // imported and defined
	definedGlobals uint64
	start          uint64
	hasStart       bool
	load           loadCost // what its load costs, within its bounds (loadbounds.go)
	tableBytes     uint64   // host bytes of the tables at their maximum (tableBytes)
	passiveElems   uint64   // entries of passive element segments, copied per instance
	elemRefs       uint64   // function references made per instance: element entries, ref.func in global initializers
	frameCosts     []uint64 // frame cost of every defined function (stack.go)
	appendsReload  bool     // instrumentCode appended the reload function
	fuelled        bool     // the fuel check is imported (the module has code)
	checkType      uint64   // index of the type () -> i32 of the fuel check
	interpreter    bool     // frames are charged for wazero's interpreter
	perCheck       uint64   // Options.FuelPerCheck: the heaviest charge (fuel.go)
	simd           bool     // a global is a v128
	tableTypes     []byte   // reference type of every table, imports first
	helpers        []bulkHelper
	helperIndex    map[string]int // instruction → index in helpers (helperFunc)
}

// Value types a function may declare or use (Wasm 2.0).
func validValType(b byte) bool {
	switch b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f: // i32 i64 f32 f64 v128 funcref externref
		return true
	}
	return false
}

func (m *moduleInfo) readTypes(p []byte) error {
	r := reader{b: p}
	count := r.u32()
	if r.err == nil && uint64(count) > uint64(len(p)) {
		return errors.New("bad count")
	}
	for i := uint32(0); i < count && r.err == nil; i++ {
		if form := r.byte(); form != 0x60 {
			return fmt.Errorf("type %d: unsupported form 0x%x", i, form)
		}
		var ft funcType
		for _, dst := range []*[]byte{&ft.params, &ft.results} {
			n := r.u32()
			if uint64(n) > uint64(len(r.b)) {
				return fmt.Errorf("type %d: bad count", i)
			}
			*dst = r.bytes(int(n))
			for _, t := range *dst {
				if !validValType(t) {
					return fmt.Errorf("type %d: unsupported value type 0x%x", i, t)
				}
			}
		}
		m.types = append(m.types, ft)
	}
	if r.err != nil || len(r.b) != 0 {
		return errors.New("malformed")
	}
	// Blocks of multi-value results need a type () -> results, and the
	// reload function () -> (): reuse the module's, append the others
	// (appending shifts no index).
	m.blockTypes = make(map[string]uint64)
	for i, ft := range m.types {
		if len(ft.params) == 0 && len(ft.results) != 1 {
			if _, ok := m.blockTypes[string(ft.results)]; !ok {
				m.blockTypes[string(ft.results)] = uint64(i)
			}
		}
	}
	for _, res := range append([][]byte{nil}, resultsOf(m.types)...) {
		if _, ok := m.blockTypes[string(res)]; !ok && len(res) != 1 {
			m.blockTypes[string(res)] = uint64(len(m.types) + len(m.appendedTypes))
			m.appendedTypes = append(m.appendedTypes, funcType{results: res})
		}
	}
	// The fuel check's type, () -> i32.
	m.checkType = uint64(len(m.types) + len(m.appendedTypes))
	i := slices.IndexFunc(m.types, func(ft funcType) bool {
		return len(ft.params) == 0 && string(ft.results) == "\x7f"
	})
	if i >= 0 {
		m.checkType = uint64(i)
	} else {
		m.appendedTypes = append(m.appendedTypes, funcType{results: []byte{0x7f}})
	}
	return nil
}

func resultsOf(types []funcType) [][]byte {
	out := make([][]byte, len(types))
	for i, ft := range types {
		out[i] = ft.results
	}
	return out
}

// typeSection is the type section orig with the appended types.
func (m *moduleInfo) typeSection(orig []byte) []byte {
	if len(m.appendedTypes) == 0 {
		return orig
	}
	_, n := binary.Uvarint(orig)
	out := binary.AppendUvarint(nil, uint64(len(m.types)+len(m.appendedTypes)))
	out = append(out, orig[n:]...)
	for _, ft := range m.appendedTypes {
		out = append(out, 0x60)
		out = binary.AppendUvarint(out, uint64(len(ft.params)))
		out = append(out, ft.params...)
		out = binary.AppendUvarint(out, uint64(len(ft.results)))
		out = append(out, ft.results...)
	}
	return out
}

func (m *moduleInfo) readImports(p []byte) error {
	var refused error
	err := eachImport(p, func(i uint32, d importDesc) bool {
		if string(d.module) == FuelModule {
			refused = fmt.Errorf("import %d: the module %q is the host's own", i, FuelModule)
			return false
		}
		switch d.kind {
		case importFunc:
			if int(d.typ) >= len(m.types) {
				refused = fmt.Errorf("import %d: bad type index", i)
				return false
			}
			m.funcs = append(m.funcs, uint64(d.typ))
			m.imported++
		case importGlobal:
			m.simd = m.simd || d.valType == 0x7b
			m.globals++
		case importTable:
			m.tableTypes = append(m.tableTypes, d.valType)
		}
		return true
	})
	if refused != nil {
		return refused
	}
	return err
}

// readGlobals counts the defined globals and the function references their
// initial values make (one allocation each per instance in the compiler
// engine).
func (m *moduleInfo) readGlobals(p []byte) error {
	r := reader{b: p}
	count := r.u32()
	if r.err == nil && uint64(count) > uint64(len(p)) {
		return errors.New("bad count")
	}
	for i := uint32(0); i < count && r.err == nil; i++ {
		t := r.byte()
		if !validValType(t) {
			return fmt.Errorf("global %d: unsupported type 0x%x", i, t)
		}
		m.simd = m.simd || t == 0x7b
		r.byte() // mutability
		m.elemRefs += r.constExpr()
	}
	if r.err != nil || len(r.b) != 0 {
		return errors.New("malformed")
	}
	m.definedGlobals = uint64(count)
	m.globals += m.definedGlobals
	return nil
}

// readTables reads the reference type of every defined table (the table
// section's limits are checked when it is rewritten, boundTables).
func (m *moduleInfo) readTables(p []byte) error {
	r := reader{b: p}
	count := r.u32()
	if r.err == nil && count > maxTables {
		return fmt.Errorf("%d tables, at most %d", count, maxTables)
	}
	for i := uint32(0); i < count && r.err == nil; i++ {
		m.tableTypes = append(m.tableTypes, r.byte())
		r.limits()
	}
	if r.err != nil || len(r.b) != 0 {
		return errors.New("malformed")
	}
	return nil
}

func (m *moduleInfo) readFunctions(p []byte) error {
	r := reader{b: p}
	count := r.u32()
	if r.err == nil && uint64(count) > uint64(len(p)) {
		return errors.New("bad count")
	}
	for i := uint32(0); i < count && r.err == nil; i++ {
		t := r.u32()
		if r.err == nil && int(t) >= len(m.types) {
			return fmt.Errorf("function %d: bad type index", i)
		}
		m.funcs = append(m.funcs, uint64(t))
	}
	if r.err != nil || len(r.b) != 0 {
		return errors.New("malformed")
	}
	return nil
}

// elementCounts counts the entries of the passive element segments, which
// wazero copies into every instance (8 bytes an entry; active segments fill
// tables, counted at their maximum), and those of the active and passive
// ones: the compiler engine allocates a function reference for each at
// every instantiation.
func elementCounts(p []byte) (passive, refs uint64, err error) {
	r := reader{b: p}
	count := r.u32()
	for i := uint32(0); i < count && r.err == nil; i++ {
		flags := r.u32()
		if flags > 7 {
			return 0, 0, fmt.Errorf("segment %d: bad flags %d", i, flags)
		}
		if flags&1 == 0 { // active: table index (flag 2) and offset
			if flags&2 != 0 {
				r.u32()
			}
			_ = r.constExpr()
		}
		if flags&3 != 0 { // element kind or reference type
			r.byte()
		}
		n := r.u32()
		if r.err == nil && uint64(n) > uint64(len(r.b)) {
			return 0, 0, fmt.Errorf("segment %d: bad count", i)
		}
		for j := uint32(0); j < n && r.err == nil; j++ {
			if flags&4 != 0 {
				_ = r.constExpr()
			} else {
				r.u32()
			}
		}
		if flags&3 == 1 { // passive
			passive += uint64(n)
		}
		if flags&3 != 3 { // not declarative
			refs += uint64(n)
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return 0, 0, errors.New("malformed")
	}
	return passive, refs, nil
}

// Bounds on a module's tables and locals. Both are charged to the call's
// memory limit (memory.go, stack.go); the bounds keep one instance's tables
// and one function's frame within what any limit can hold, and the table
// bound keeps describe, run before any policy applies, small.
const (
	// maxTables bounds the tables a module defines.
	maxTables = 8
	// maxTableEntries bounds the sum of the tables' initial sizes (2 MiB).
	maxTableEntries = 1 << 18
	// tableGrowth is how far table.grow may take a table past its initial
	// size (512 KiB per table); a declared maximum below it is kept.
	tableGrowth = 1 << 16
	// MaxLocals bounds the locals of one function.
	MaxLocals = 10_000
)

// boundTables rewrites the table section so that every table has a maximum
// of at most its initial size plus tableGrowth (a growth past it makes
// table.grow return -1, as a refused memory.grow does), and refuses modules
// whose tables start larger than maxTableEntries in all. It returns the
// host bytes the tables may take in one instance (tableBytes).
func boundTables(p []byte) ([]byte, uint64, error) {
	count, n := binary.Uvarint(p)
	if n <= 0 || count > maxTables {
		return nil, 0, fmt.Errorf("%d tables, at most %d", count, maxTables)
	}
	p = p[n:]
	out := binary.AppendUvarint(make([]byte, 0, len(p)+16), count)
	var total, bytes uint64
	for i := uint64(0); i < count; i++ {
		if len(p) < 2 {
			return nil, 0, fmt.Errorf("table %d: truncated", i)
		}
		reftype, flags := p[0], p[1]
		p = p[2:]
		if flags > 1 {
			return nil, 0, fmt.Errorf("table %d: unsupported limits flags 0x%x", i, flags)
		}
		min, k := binary.Uvarint(p)
		if k <= 0 || min > 1<<32-1 {
			return nil, 0, fmt.Errorf("table %d: bad initial size", i)
		}
		p = p[k:]
		max := min + tableGrowth
		if flags == 1 {
			declared, k := binary.Uvarint(p)
			if k <= 0 || declared < min {
				return nil, 0, fmt.Errorf("table %d: bad maximum size", i)
			}
			p = p[k:]
			max = minU64(max, declared)
		}
		total += min
		if total > maxTableEntries {
			return nil, 0, fmt.Errorf("tables start with more than %d entries in all", maxTableEntries)
		}
		bytes += tableBytes(min, max)
		out = append(out, reftype, 1)
		out = binary.AppendUvarint(out, min)
		out = binary.AppendUvarint(out, max)
	}
	if len(p) != 0 {
		return nil, 0, errors.New("trailing bytes")
	}
	return out, bytes, nil
}

func minU64(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

func appendName(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readName reads a name (length-prefixed bytes) at the start of p.
func readName(p []byte) (name string, rest []byte, ok bool) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return "", nil, false
	}
	return string(p[k : k+int(n)]), p[k+int(n):], true
}

// reader decodes the binary format. LEB128 lengths follow the continuation
// bits, as wazero's decoder does (so both agree on where every instruction
// starts); a value too large for its type is an error. The first error
// sticks and later reads return zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("malformed %s", what)
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail("byte")
		return 0
	}
	b := r.b[0]
	r.b = r.b[1:]
	return b
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.fail("bytes")
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

// leb reads an LEB128 number of at most maxLen bytes and returns its raw
// value bits (sign not extended) and its length.
func (r *reader) leb(maxLen int) (uint64, int) {
	var v uint64
	for i := 0; i < maxLen; i++ {
		if i >= len(r.b) {
			r.fail("integer")
			return 0, 0
		}
		c := r.b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.b = r.b[i+1:]
			return v, i + 1
		}
	}
	r.fail("integer")
	return 0, 0
}

func (r *reader) u32() uint32 {
	v, _ := r.leb(5)
	if v > 1<<32-1 {
		r.fail("u32")
		return 0
	}
	return uint32(v)
}

// s33 reads a signed 33-bit LEB128 (block types).
func (r *reader) s33() int64 {
	v, n := r.leb(5)
	if n == 0 {
		return 0
	}
	if shift := 7 * n; shift < 64 && v&(1<<(shift-1)) != 0 {
		v |= ^uint64(0) << shift // sign-extend
	}
	return int64(v)
}

// skipSigned skips a signed LEB128 of at most maxLen bytes.
func (r *reader) skipSigned(maxLen int) { r.leb(maxLen) }

func (r *reader) name() {
	n := r.u32()
	r.bytes(int(n))
}

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

// constExpr skips a constant expression (Wasm 2.0: consts, ref.null,
// ref.func, global.get) up to its end and returns the number of ref.func
// in it.
func (r *reader) constExpr() (refs uint64) {
	for r.err == nil {
		switch op := r.byte(); op {
		case 0x0b:
			return refs
		case 0xd2:
			r.u32()
			refs++
		default:
			r.constImmediates(op)
		}
	}
	return refs
}

// constImmediates skips the immediates of op, an instruction of a
// constant expression other than end.
func (r *reader) constImmediates(op byte) {
	switch op {
	case 0x41:
		r.skipSigned(5)
	case 0x42:
		r.skipSigned(10)
	case 0x43:
		r.bytes(4)
	case 0x44:
		r.bytes(8)
	case 0xd0:
		r.byte()
	case 0xd2, 0x23:
		r.u32()
	case 0xfd:
		if r.byte() != 0x0c {
			r.fail("constant expression")
		}
		r.bytes(16)
	default:
		r.fail("constant expression")
	}
}
