package wasmcode

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The guest's call stack lives in host memory outside linear memory: the
// compiler engine's native stack (a Go byte slice that doubles as it grows,
// up to ~100 MB before wazero reports a stack overflow), the interpreter's
// operand stack and frames (2000 frames of up to MaxLocals locals each).
// So does a function reference made by ref.func in the compiler engine
// (about 48 bytes, kept until the instance is closed, at every execution).
//
// One pool per call bounds them together with linear memory: the call's
// memory limit minus what the instance needs outside both (staticBytes).
// Two exported globals hold it: $left, the bytes left now, and $low, the
// least $left has been (the stack's high-water mark: a grown stack is not
// given back). The host sets both to the pool minus the initial linear
// memory after instantiation, before any guest code runs; when linear
// memory grows it takes the growth from both, and refuses it past $low.
// Every function body is instrumented, at load, to charge its frame cost C:
//
//	<the fuel charge (fuel.go)>
//	global.get $left  i64.const C  i64.sub  global.set $left
//	global.get $left  global.get $low  i64.lt_s
//	if                                                ;; a new high-water mark
//	  global.get $left  global.set $low
//	  global.get $low  i64.const 0  i64.lt_s  if unreachable end
//	end
//	block (result <the function's results>)
//	  <the original body; return becomes br to this block>
//	end
//	global.get $left  i64.const C  i64.add  global.set $left
//
// A ref.func is followed by a charge of RefFuncBytes to both globals, never
// given back, and the same check. A memory.grow is followed by a call of an
// appended empty function: wazero's compiler caches global values between
// calls and does not reload them after memory.grow, where the host changed
// them. Branches out of the body (br to the function's label) land on the
// epilogue as return does; a trap skips it, and a trap ends the instance
// anyway. After a trap, a negative $low tells the host that the pool, not
// the guest, ended the call.
//
// The guest's own code cannot reach the globals or the reload function:
// the rewrite refuses indices the original module does not define.

// Frame cost. wazero's compiler gives every SSA value it spills a stack
// slot of its own (8 bytes, 16 for v128; no slot is shared), so a sound
// bound counts every value a function can define: each value an
// instruction pushes, and each local at each block entry and merge (a
// phi). Both engines' stacks grow by doubling and copying, so that while a
// stack grows the host holds up to three times what the frames use: the
// charges are three times the sizes. The interpreter keeps 8 bytes per
// local and operand-stack value, and runs every wasm call as a Go call of
// its own, about 4.3 KB of goroutine stack (wazero v1.12.0). RATIONALE.md
// ("Why is the guest's stack bounded by instrumentation?") has the
// measurements; TestFrameCostCoversEngines checks them.
const (
	// compilerFrameBytes covers what a compiled frame costs besides its
	// values: return address and frame pointer, stack-check slot,
	// callee-saved registers (13 of 16 bytes on amd64).
	compilerFrameBytes = 3 * 256
	// interpreterFrameBytes covers the interpreter's Go frame and frame
	// record.
	interpreterFrameBytes = 3 * 4352
	// slotBytes is charged per value (twice in modules that use v128).
	slotBytes = 3 * 8
	// RefFuncBytes is charged, never given back, at each ref.func.
	RefFuncBytes = 64
	// maxFrameBytes bounds one function's frame cost; a function over it is
	// refused at load.
	maxFrameBytes = 64 << 20
)

// instrumentCode returns the code section of secs with every function body
// instrumented and the reload function appended (reload is its index), or
// nil when there is none. It appends to the function section's types only
// when it appended the function (appendsReload).
func (m *moduleInfo) instrumentCode(secs []section, ix appended) ([]byte, error) {
	var code []byte
	hasFunctions := false
	for _, s := range secs {
		switch s.id {
		case secCode:
			code = s.payload
		case secFunction:
			hasFunctions = true
		}
	}
	if code == nil {
		return nil, nil
	}
	r := reader{b: code}
	count := r.u32()
	if r.err != nil || int(count) != len(m.funcs)-m.imported {
		return nil, errors.New("function and code sections disagree")
	}
	// Walk every body first: whether the module uses v128 anywhere sets
	// the cost of every value.
	type fn struct {
		localsDecl, code []byte
		ft               funcType
		w                walker
	}
	fns := make([]fn, count)
	simd := m.simd
	for _, ft := range m.types {
		simd = simd || hasV128(ft.params) || hasV128(ft.results)
	}
	for i := range fns {
		size := r.u32()
		if size > MaxFunctionBytes {
			return nil, fmt.Errorf("function %d: %w: its body is %d bytes, more than %d", m.imported+i, ErrTooLarge, size, MaxFunctionBytes)
		}
		body := r.bytes(int(size))
		if r.err != nil {
			return nil, fmt.Errorf("function %d: bad body size", m.imported+i)
		}
		f := &fns[i]
		f.ft = m.types[m.funcs[m.imported+i]]
		var err error
		f.localsDecl, f.code, err = m.walkBody(&f.w, f.ft, body, ix)
		if err == nil {
			err = m.chargeFunction(&f.w, size) // loadbounds.go
		}
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", m.imported+i, err)
		}
		simd = simd || f.w.simd
	}
	if len(r.b) != 0 {
		return nil, errors.New("trailing bytes")
	}
	n := uint64(count)
	if hasFunctions {
		n += 1 + uint64(len(m.helpers))
	}
	out := binary.AppendUvarint(make([]byte, 0, len(code)+int(count)*64+8), n)
	for i := range fns {
		f := &fns[i]
		cost := f.w.frameCost(simd)
		if cost > maxFrameBytes {
			return nil, fmt.Errorf("function %d: its frame may need %d bytes, more than %d", m.imported+i, cost, maxFrameBytes)
		}
		m.frameCosts = append(m.frameCosts, cost)
		b := make([]byte, 0, len(f.localsDecl)+len(f.code)+64)
		b = append(b, f.localsDecl...)
		b = appendFuelCharge(b, ix.fuel, ix.check, int64(min(f.w.instrs, m.perCheck)))
		b = appendCharge(b, ix.left, ix.low, int64(cost))
		b = append(b, 0x02) // block
		b = appendBlockType(b, m, f.ft.results)
		b = append(b, f.code...) // ends with the end of that block
		if f.w.loops > 0 {
			b = appendFlush(b, ix.fuel, f.w.spent)
		}
		b = appendRelease(b, ix.left, int64(cost))
		b = append(b, 0x0b)
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	if hasFunctions {
		out = append(out, 0x02, 0x00, 0x0b) // reload: no locals, end
		m.appendsReload = true
		for _, h := range m.helpers {
			b := helperBody(h, ix.fuel, ix.check)
			out = binary.AppendUvarint(out, uint64(len(b)))
			out = append(out, b...)
		}
	} else if len(m.helpers) > 0 {
		return nil, errors.New("bulk instructions without a function section")
	}
	return out, nil
}

// walkBody reads the locals of body, walks its instructions with w and
// returns the locals declaration and the instrumented instructions.
func (m *moduleInfo) walkBody(w *walker, ft funcType, body []byte, ix appended) (localsDecl, code []byte, err error) {
	r := reader{b: body}
	groups := r.u32()
	if r.err != nil || uint64(groups) > uint64(len(body)) {
		return nil, nil, errors.New("bad locals")
	}
	var locals uint64
	w.slots = uint64(len(ft.params))
	for i := uint32(0); i < groups; i++ {
		c := uint64(r.u32())
		t := r.byte()
		if r.err != nil {
			return nil, nil, errors.New("bad locals")
		}
		if c > MaxLocals || locals+c > MaxLocals {
			return nil, nil, fmt.Errorf("declares more than %d locals", MaxLocals)
		}
		if !validValType(t) {
			return nil, nil, fmt.Errorf("unknown local type 0x%x", t)
		}
		locals += c
		w.slots += c
		w.simd = w.simd || t == 0x7b
	}
	*w = walker{m: m, r: reader{b: r.b}, left: ix.left, low: ix.low, reload: ix.reload, fuel: ix.fuel, check: ix.check,
		spent: w.slots, slots: w.slots, simd: w.simd, maxArity: 1} // 1: the fuel check's result
	code, err = w.walk(ft)
	if err != nil || w.loops == 0 {
		return body[:len(body)-len(r.b)], code, err
	}
	// A function with loops counts their fuel in a local of its own
	// ($spent, after the others), flushed before every call (fuel.go).
	_, n := binary.Uvarint(body)
	localsDecl = binary.AppendUvarint(nil, uint64(groups)+1)
	localsDecl = append(localsDecl, body[n:len(body)-len(r.b)]...)
	localsDecl = append(localsDecl, 1, 0x7f) // one i32
	w.slots++
	return localsDecl, w.flushAtCalls(code), nil
}

// frameCost is the bytes charged for one frame of the walked function.
func (w *walker) frameCost(simd bool) uint64 {
	// 2: the instrumentation's own i64s; and the entry's fuel charge.
	values := w.pushes + w.slots*(w.blocks+1) + 2 + fuelChargeValues
	slot := uint64(slotBytes)
	if simd {
		slot *= 2
	}
	frame := uint64(compilerFrameBytes)
	if w.m.interpreter {
		frame = interpreterFrameBytes
	}
	cost := frame + slot*(values+w.maxArity)
	if w.bulk {
		cost += frame + slot*helperValues // a bulk helper's frame (bulk.go)
	}
	return cost
}

// appendCharge appends the prologue's charge of cost bytes (see above).
func appendCharge(out []byte, left, low uint64, cost int64) []byte {
	out = appendGlobalAdd(out, left, -cost)
	out = appendGet(out, left)
	out = appendGet(out, low)
	out = append(out, 0x53, 0x04, 0x40) // i64.lt_s; if
	out = appendGet(out, left)
	out = append(out, 0x24) // global.set
	out = binary.AppendUvarint(out, low)
	out = appendCheck(out, low)
	return append(out, 0x0b) // end
}

// appendRefCharge appends the permanent charge of a function reference.
func appendRefCharge(out []byte, left, low uint64) []byte {
	out = appendGlobalAdd(out, left, -RefFuncBytes)
	out = appendGlobalAdd(out, low, -RefFuncBytes)
	return appendCheck(out, low)
}

// appendCheck appends "if $low < 0 unreachable".
func appendCheck(out []byte, low uint64) []byte {
	out = appendGet(out, low)
	return append(out, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b) // i64.const 0; i64.lt_s; if unreachable end
}

// appendRelease appends the epilogue: $left += cost.
func appendRelease(out []byte, left uint64, cost int64) []byte {
	return appendGlobalAdd(out, left, cost)
}

// appendGlobalAdd appends "global g += v".
func appendGlobalAdd(out []byte, g uint64, v int64) []byte {
	out = appendGet(out, g)
	out = append(out, 0x42)
	out = appendSleb(out, v)
	out = append(out, 0x7c, 0x24) // i64.add; global.set
	return binary.AppendUvarint(out, g)
}

func appendGet(out []byte, g uint64) []byte {
	out = append(out, 0x23)
	return binary.AppendUvarint(out, g)
}

func appendBlockType(out []byte, m *moduleInfo, results []byte) []byte {
	switch len(results) {
	case 0:
		return append(out, 0x40)
	case 1:
		return append(out, results[0])
	}
	return appendSleb(out, int64(m.blockTypes[string(results)]))
}

func appendSleb(out []byte, v int64) []byte {
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func hasV128(types []byte) bool {
	for _, t := range types {
		if t == 0x7b {
			return true
		}
	}
	return false
}

// walker decodes one function body, instruction by instruction, as
// wazero's validator and compilers decode it, copies it with return
// replaced, ref.func charged and memory.grow followed by the reload call,
// and counts what frameCost needs: values pushed, blocks, calls' arity, and
// the operand stack's greatest height (pops it does not know exactly are
// counted low). It refuses what Wasm 2.0 (wazero's CoreFeaturesV2) does not
// define.
type walker struct {
	m                 *moduleInfo
	r                 reader
	left, low, reload uint64 // indices of what Guard appends
	fuel, check       uint64 // the fuel global and the check function (fuel.go)
	spent             uint64 // the local that counts the loops' fuel (fuel.go)
	loops             int    // loops in the function
	calls             []int  // offsets in out of its calls (flushAtCalls)
	out               []byte
	ctrl              []ctrlFrame
	instrs            uint64 // instructions decoded so far

	height    uint64 // operand stack height now
	maxHeight uint64 // its greatest value
	pushes    uint64 // values pushed in all
	blocks    uint64 // block, loop and if instructions
	slots     uint64 // parameters and locals
	maxArity  uint64 // greatest params+results of a call
	simd      bool   // the function uses v128
	bulk      bool   // the function calls a bulk helper (bulk.go)
}

type ctrlFrame struct {
	height          uint64 // operand height below the frame
	params, results uint64
	unreachable     bool
	// fuelAt is where the fuel charge of a loop has its weight, patched
	// at the loop's end (0: not a loop); instrs is the instruction count
	// at the loop's start.
	fuelAt int
	instrs uint64
	// wrapped: the loop is wrapped in three more labels (fuel.go).
	wrapped bool
}

// label returns the label l of the module's code as the instrumented code
// numbers it: every wrapped loop the branch leaves adds three labels.
func (w *walker) label(l uint64) uint64 {
	out := l
	for k := 0; uint64(k) < l && k < len(w.ctrl); k++ {
		if w.ctrl[len(w.ctrl)-1-k].wrapped {
			out += 3
		}
	}
	return out
}

func (w *walker) push(n uint64) {
	w.pushes += n
	w.height += n
	w.maxHeight = max(w.maxHeight, w.height)
}

func (w *walker) pop(n uint64) {
	base := w.ctrl[len(w.ctrl)-1].height
	if w.height < base+n {
		w.height = base // polymorphic (or invalid: wazero refuses it)
		return
	}
	w.height -= n
}

// op pops n values and pushes k: a new value each.
func (w *walker) op(n, k uint64) {
	w.pop(n)
	w.push(k)
}

// call pops a callee's parameters (and extra operands) and pushes its
// results.
func (w *walker) call(ft funcType, extra uint64) {
	if hasV128(ft.params) || hasV128(ft.results) {
		w.simd = true
	}
	w.maxArity = max(w.maxArity, uint64(len(ft.params)+len(ft.results)))
	w.pop(extra + uint64(len(ft.params)))
	w.push(uint64(len(ft.results)))
}

// unreachable marks the rest of the current block as dead code.
func (w *walker) unreachable() {
	f := &w.ctrl[len(w.ctrl)-1]
	w.height = f.height
	f.unreachable = true
}

// blockType reads a block type and returns its parameter and result counts.
func (w *walker) blockType() (params, results uint64, err error) {
	bt := w.r.s33()
	switch {
	case w.r.err != nil:
		return 0, 0, w.r.err
	case bt == -64: // empty
		return 0, 0, nil
	case bt >= -5 && bt <= -1, bt == -16, bt == -17: // i32 i64 f32 f64 v128 funcref externref
		if bt == -5 {
			w.simd = true
		}
		return 0, 1, nil
	case bt >= 0 && bt < int64(len(w.m.types)):
		ft := w.m.types[bt]
		if hasV128(ft.params) || hasV128(ft.results) {
			w.simd = true
		}
		return uint64(len(ft.params)), uint64(len(ft.results)), nil
	}
	return 0, 0, fmt.Errorf("unsupported block type %d", bt)
}

func (w *walker) funcIndex() (uint64, error) {
	f := uint64(w.r.u32())
	if w.r.err == nil && f >= uint64(len(w.m.funcs)) {
		return 0, fmt.Errorf("function index %d out of range", f)
	}
	return f, w.r.err
}

func (w *walker) memarg() {
	if align := w.r.u32(); align >= 32 {
		w.r.fail("alignment")
	}
	w.r.u32()
}

// zeroByte reads a reserved immediate that must be one 0x00 byte.
func (w *walker) zeroByte() {
	if w.r.byte() != 0 {
		w.r.fail("reserved byte")
	}
}

// walk copies the body's instructions and returns them; the function's
// final end closes the block the instrumentation wraps the body in.
func (w *walker) walk(ft funcType) ([]byte, error) {
	body := w.r.b
	w.out = make([]byte, 0, len(body)+16)
	w.ctrl = []ctrlFrame{{results: uint64(len(ft.results))}}
	for {
		start := len(body) - len(w.r.b)
		op := w.r.byte()
		if w.r.err != nil {
			return nil, errors.New("body ends before its end")
		}
		w.instrs++
		copyOp := true
		switch {
		case op == 0x00: // unreachable
			w.unreachable()
		case op == 0x01: // nop
		case op == 0x02 || op == 0x03 || op == 0x04: // block loop if
			if op == 0x04 {
				w.pop(1)
			}
			p, res, err := w.blockType()
			if err != nil {
				return nil, err
			}
			w.pop(p)
			w.blocks++
			f := ctrlFrame{height: w.height, params: p, results: res}
			if op == 0x03 {
				// The loop's header charges the loop's instructions,
				// known at its end (fuel.go).
				copyOp = false
				if p == 0 {
					w.out, f.fuelAt = appendWrappedLoop(w.out, body[start+1:len(body)-len(w.r.b)], w.spent)
					f.wrapped = true
					w.blocks++ // the re-entry loop's header
				} else {
					w.out = append(w.out, body[start:len(body)-len(w.r.b)]...)
					w.out, f.fuelAt = appendLoopCharge(w.out, w.fuel, w.check, w.spent)
				}
				f.instrs = w.instrs
				w.pushes += loopChargeValues
				w.loops++
			}
			w.ctrl = append(w.ctrl, f)
			w.push(p)
		case op == 0x05: // else
			f := &w.ctrl[len(w.ctrl)-1]
			if len(w.ctrl) == 1 {
				return nil, errors.New("else outside if")
			}
			w.height = f.height
			f.unreachable = false
			w.push(f.params)
		case op == 0x0b: // end
			f := w.ctrl[len(w.ctrl)-1]
			w.ctrl = w.ctrl[:len(w.ctrl)-1]
			if len(w.ctrl) == 0 {
				w.out = append(w.out, 0x0b)
				if len(w.r.b) != 0 {
					return nil, errors.New("bytes after the body's end")
				}
				return w.out, nil
			}
			if f.fuelAt != 0 {
				patchFuelWeight(w.out, f.fuelAt, min(w.instrs-f.instrs, w.m.perCheck))
			}
			if f.wrapped {
				w.out = appendWrappedEnd(w.out, w.fuel, w.check, w.spent)
				copyOp = false
			}
			w.height = f.height
			w.push(f.results)
		case op == 0x0c || op == 0x0d: // br br_if
			copyOp = false
			w.out = append(w.out, op)
			w.out = binary.AppendUvarint(w.out, w.label(uint64(w.r.u32())))
			if op == 0x0c {
				w.unreachable()
			} else {
				w.pop(1)
			}
		case op == 0x0e: // br_table
			n := w.r.u32()
			if w.r.err == nil && uint64(n) > uint64(len(w.r.b)) {
				return nil, errors.New("bad br_table")
			}
			copyOp = false
			w.out = append(w.out, op)
			w.out = binary.AppendUvarint(w.out, uint64(n))
			for i := uint32(0); i <= n && w.r.err == nil; i++ {
				w.out = binary.AppendUvarint(w.out, w.label(uint64(w.r.u32())))
			}
			w.pop(1)
			w.unreachable()
		case op == 0x0f: // return: br to the block around the body
			copyOp = false
			w.out = append(w.out, 0x0c)
			w.out = binary.AppendUvarint(w.out, w.label(uint64(len(w.ctrl)-1)))
			w.unreachable()
		case op == 0x10: // call
			f, err := w.funcIndex()
			if err != nil {
				return nil, err
			}
			copyOp = false
			w.calls = append(w.calls, len(w.out))
			w.out = append(w.out, 0x10)
			w.out = binary.AppendUvarint(w.out, w.m.funcOut(f))
			w.call(w.m.types[w.m.funcs[f]], 0)
		case op == 0x11: // call_indirect
			w.calls = append(w.calls, len(w.out))
			t := w.r.u32()
			w.r.u32() // table
			if w.r.err == nil && int(t) >= len(w.m.types) {
				return nil, fmt.Errorf("type index %d out of range", t)
			}
			w.call(w.m.types[t], 1)
		case op == 0x1a: // drop
			w.pop(1)
		case op == 0x1b: // select
			w.pop(3)
			w.push(1)
		case op == 0x1c: // select t
			if w.r.byte() != 1 || !validValType(w.r.byte()) {
				return nil, errors.New("unsupported typed select")
			}
			w.pop(3)
			w.push(1)
		case op == 0x20: // local.get
			w.r.u32()
			w.push(1)
		case op == 0x21: // local.set
			w.r.u32()
			w.pop(1)
		case op == 0x22: // local.tee
			w.r.u32()
		case op == 0x23 || op == 0x24: // global.get global.set
			gi := uint64(w.r.u32())
			if w.r.err == nil && gi >= w.left {
				return nil, fmt.Errorf("global index %d out of range", gi)
			}
			if op == 0x23 {
				w.push(1)
			} else {
				w.pop(1)
			}
		case op == 0x25: // table.get
			w.r.u32()
			w.op(1, 1)
		case op == 0x26: // table.set
			w.r.u32()
			w.pop(2)
		case op >= 0x28 && op <= 0x35: // loads
			w.memarg()
			w.op(1, 1)
		case op >= 0x36 && op <= 0x3e: // stores
			w.memarg()
			w.pop(2)
		case op == 0x3f: // memory.size
			w.zeroByte()
			w.push(1)
		case op == 0x40: // memory.grow, then the reload call
			w.zeroByte()
			w.out = append(w.out, body[start:len(body)-len(w.r.b)]...)
			copyOp = false
			w.out = append(w.out, 0x10)
			w.out = binary.AppendUvarint(w.out, w.reload)
			w.op(1, 1)
		case op == 0x41:
			w.r.skipSigned(5)
			w.push(1)
		case op == 0x42:
			w.r.skipSigned(10)
			w.push(1)
		case op == 0x43:
			w.r.bytes(4)
			w.push(1)
		case op == 0x44:
			w.r.bytes(8)
			w.push(1)
		case op >= 0x45 && op <= 0xc4: // numeric: no immediates
			if binaryNumeric(op) {
				w.op(2, 1)
			} else {
				w.op(1, 1)
			}
		case op == 0xd0: // ref.null
			if t := w.r.byte(); t != 0x70 && t != 0x6f {
				return nil, fmt.Errorf("unsupported ref.null type 0x%x", t)
			}
			w.push(1)
		case op == 0xd1: // ref.is_null
			w.op(1, 1)
		case op == 0xd2: // ref.func
			f, err := w.funcIndex()
			if err != nil {
				return nil, err
			}
			w.push(1)
			w.out = append(w.out, 0xd2)
			w.out = binary.AppendUvarint(w.out, w.m.funcOut(f))
			copyOp = false
			w.out = appendRefCharge(w.out, w.left, w.low)
		case op == 0xfc:
			replaced, err := w.misc()
			if err != nil {
				return nil, err
			}
			copyOp = !replaced
		case op == 0xfd:
			w.simd = true
			w.vector()
		default:
			return nil, fmt.Errorf("unsupported instruction 0x%x", op)
		}
		if w.r.err != nil {
			return nil, w.r.err
		}
		if copyOp {
			w.out = append(w.out, body[start:len(body)-len(w.r.b)]...)
		}
	}
}

// binaryNumeric reports whether a numeric instruction (0x45..0xc4) pops two
// operands; the others pop one. All push one.
func binaryNumeric(op byte) bool {
	switch {
	case op == 0x45 || op == 0x50: // eqz
		return false
	case op <= 0x66: // comparisons
		return true
	case op >= 0x67 && op <= 0x69, op >= 0x79 && op <= 0x7b: // clz ctz popcnt
		return false
	case op >= 0x6a && op <= 0x78, op >= 0x7c && op <= 0x8a: // integer binary
		return true
	case op >= 0x92 && op <= 0x98, op >= 0xa0 && op <= 0xa6: // float binary
		return true
	}
	return false // float unary, conversions, sign extension
}

// misc decodes a 0xfc instruction (saturating truncation, bulk memory,
// table operations). A bulk instruction is replaced by a call of its
// helper (bulk.go), which misc writes: it reports replaced.
func (w *walker) misc() (replaced bool, err error) {
	sub := w.r.u32()
	imm := w.r.b
	var table uint32
	switch {
	case w.r.err != nil:
		return false, w.r.err
	case sub <= 7: // trunc_sat
		w.op(1, 1)
		return false, nil
	case sub == 8: // memory.init
		w.r.u32()
		w.zeroByte()
	case sub == 9: // data.drop
		w.r.u32()
		return false, nil
	case sub == 10: // memory.copy
		w.zeroByte()
		w.zeroByte()
	case sub == 11: // memory.fill
		w.zeroByte()
	case sub == 12: // table.init
		w.r.u32()
		table = w.r.u32()
	case sub == 13: // elem.drop
		w.r.u32()
		return false, nil
	case sub == 14: // table.copy
		table = w.r.u32()
		w.r.u32()
	case sub == 15: // table.grow
		table = w.r.u32()
	case sub == 16: // table.size
		w.r.u32()
		w.push(1)
		return false, nil
	case sub == 17: // table.fill
		table = w.r.u32()
	default:
		return false, fmt.Errorf("unsupported instruction 0xfc %d", sub)
	}
	if w.r.err != nil {
		return false, w.r.err
	}
	h, err := w.m.helperFunc(sub, imm[:len(imm)-len(w.r.b)], table)
	if err != nil {
		return false, err
	}
	ft := funcType{params: []byte{0x7f, 0x7f, 0x7f}}
	if sub == subTableGrow {
		ft = funcType{params: []byte{0x7f, 0x7f}, results: []byte{0x7f}}
	}
	w.call(ft, 0)
	w.bulk = true
	w.calls = append(w.calls, len(w.out))
	w.out = append(w.out, 0x10)
	w.out = binary.AppendUvarint(w.out, w.reload+1+h)
	return true, nil
}

// vector decodes a 0xfd (SIMD) instruction. wazero reads its opcode as one
// byte (the LEB128 continuation byte of opcodes past 127 then decodes as a
// nop), and so does this.
func (w *walker) vector() {
	switch sub := w.r.byte(); {
	case sub <= 0x0a || sub == 0x5c || sub == 0x5d: // loads
		w.memarg()
		w.op(1, 1)
	case sub == 0x0b: // store
		w.memarg()
		w.pop(2)
	case sub == 0x0c: // v128.const
		w.r.bytes(16)
		w.push(1)
	case sub == 0x0d: // i8x16.shuffle
		w.r.bytes(16)
		w.op(2, 1)
	case sub >= 0x15 && sub <= 0x22: // extract and replace lane
		w.r.byte()
		w.op(1, 1)
	case sub >= 0x54 && sub <= 0x57: // load lane
		w.memarg()
		w.r.byte()
		w.op(2, 1)
	case sub >= 0x58 && sub <= 0x5b: // store lane
		w.memarg()
		w.r.byte()
		w.pop(2)
	default: // every other SIMD instruction pops at least one value and pushes one
		w.op(1, 1)
	}
}
