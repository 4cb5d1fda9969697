package wasmcode

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A guest is stopped by a fuel counter, not by wazero's
// WithCloseOnContextDone (RATIONALE.md, "Why is cancellation a fuel counter
// instead of WithCloseOnContextDone?"). Guard appends a mutable i32 global,
// $fuel, and imports one host function, FuelModule.FuelFunc, of type
// () -> i32. Every function entry subtracts a weight from $fuel and, when
// it falls below zero, calls the host:
//
//	global.get $fuel  i32.const W  i32.sub  global.set $fuel
//	global.get $fuel  i32.const 0  i32.lt_s
//	if  global.get $fuel  call $check  i32.add  global.set $fuel  end
//
// The host function (the runtime's) ends the guest when the call's context is
// done, as the host functions that block do (exitOnDone), and otherwise
// returns FuelPerCheck, the fuel until the next check. Returning it, rather
// than setting the global from Go, keeps wazero's compiler right: it
// reloads globals after a call, but its value is the call's own result.
//
// Loops count in a local of their function, $spent, and take it from $fuel
// past spentLimit (appendWrappedLoop, appendLoopCharge): a global is a load
// and a store in memory, and a call in a loop's body makes wazero's
// compiler spill the loop's values; both cost a tight loop more than the
// check itself. $spent is flushed to $fuel before every call and at the
// function's end, so that only the running function holds fuel not yet
// taken.
//
// The weight W is the number of instructions of the loop (nested loops
// included) or of the function body, capped at FuelPerCheck: between two
// charges a guest runs at most the instructions of one body, so fuel counts
// instructions, give or take a body, and the time between two checks is
// bounded by FuelPerCheck + spentLimit instructions whatever the shape of
// the code. A bulk instruction (memory.fill, table.copy, …) is charged by
// its length, in steps (bulk.go).
//
// The host call is also where Go can preempt a goroutine running compiled
// guest code (it cannot interrupt native code that does not call out), so
// FuelPerCheck bounds how long a spinning guest can hold up the garbage
// collector of the whole server.
//
// The import comes after the module's own: every defined function's index
// grows by one, in code, exports, elements, global initializers, the start
// function and the name section (moduleInfo.funcOut). A module that imports
// from FuelModule itself is refused, so the only import of it is the one
// Guard adds. The rewritten bytes are the runtime's compile cache key:
// code compiled before this instrumentation is never used.
const (
	FuelModule = "wasmtask:runtime"
	FuelFunc   = "fuel"
)

// spentLimit is how much fuel a function's loops count in its $spent
// local before they take it from $fuel.
const spentLimit = 1 << 12

// Values the instrumentation pushes (frame cost, stack.go).
const (
	fuelChargeValues = 7
	loopChargeValues = 13
	flushValues      = 4 + 4
)

// appendFuelCharge appends a function entry's fuel charge of weight (see
// above), at most FuelPerCheck.
func appendFuelCharge(out []byte, fuel, check uint64, weight int64) []byte {
	out = appendGet(out, fuel)
	out = append(out, 0x41) // i32.const
	out = appendSleb(out, weight)
	out = append(out, 0x6b, 0x24) // i32.sub; global.set
	out = binary.AppendUvarint(out, fuel)
	return appendFuelCheck(out, fuel, check)
}

// appendFuelCheck appends "if $fuel < 0 { $fuel += check() }". Adding,
// rather than setting, keeps the debt of the charge that took $fuel below
// zero (at most FuelPerCheck, the heaviest charge), so that the checks
// count every unit charged.
func appendFuelCheck(out []byte, fuel, check uint64) []byte {
	out = appendGet(out, fuel)
	out = append(out, 0x41, 0x00, 0x48, 0x04, 0x40) // i32.const 0; i32.lt_s; if
	out = appendGet(out, fuel)
	out = append(out, 0x10) // call
	out = binary.AppendUvarint(out, check)
	out = append(out, 0x6a, 0x24) // i32.add; global.set
	out = binary.AppendUvarint(out, fuel)
	return append(out, 0x0b) // end
}

// appendLoopCharge appends a loop header's charge: the weight, a 5-byte
// placeholder at out[at:] that patchFuelWeight fills at the loop's end, is
// added to the function's $spent local; past spentLimit, $spent is taken
// from $fuel and the fuel checked:
//
//	local.get $spent  i32.const W  i32.add  local.tee $spent
//	i32.const spentLimit  i32.ge_u
//	if  <flush>  <check>  end
//
// In a loop, the counter then lives in a register: $fuel, a global, is a
// load and a store to memory, and a store-to-load dependency from one
// iteration to the next doubled the time of a tight loop (BenchmarkSpin).
func appendLoopCharge(out []byte, fuel, check, spent uint64) (_ []byte, at int) {
	out = append(out, 0x20) // local.get
	out = binary.AppendUvarint(out, spent)
	out = append(out, 0x41) // i32.const
	at = len(out)
	out = append(out, 0x80, 0x80, 0x80, 0x80, 0x00) // 0, padded
	out = append(out, 0x6a, 0x22)                   // i32.add; local.tee
	out = binary.AppendUvarint(out, spent)
	out = append(out, 0x41)
	out = appendSleb(out, spentLimit)
	out = append(out, 0x4f, 0x04, 0x40) // i32.ge_u; if
	out = appendFlush(out, fuel, spent)
	out = appendFuelCheck(out, fuel, check)
	return append(out, 0x0b), at // end
}

// appendWrappedLoop appends the header of a loop without parameters whose
// block type is bt (its encoding), wrapped so that the fuel check is out of
// the loop: wazero's compiler spills the values live across a call, and a
// call in the loop's body, even on a path it seldom takes, tripled the time
// of a tight loop (BenchmarkSpin). $spent is compared before it is
// charged, so that a loop heavier than spentLimit still runs once per
// check. The weight is a placeholder at out[at:]
// (see appendLoopCharge); appendWrappedEnd appends the rest.
//
//	block bt                                   ;; $done
//	  loop                                     ;; $again
//	    block                                  ;; $refuel
//	      loop bt                              ;; the module's loop
//	        local.get $spent  i32.const spentLimit  i32.ge_u  br_if $refuel
//	        local.get $spent  i32.const W  i32.add  local.set $spent
//	        <the loop's body: branches that leave it skip three more labels>
//	      end
//	      br $done
//	    end
//	    <flush>  <check>  br $again
//	  end
//	  unreachable
//	end
func appendWrappedLoop(out, bt []byte, spent uint64) (_ []byte, at int) {
	out = append(out, 0x02)
	out = append(out, bt...)
	out = append(out, 0x03, 0x40, 0x02, 0x40, 0x03)
	out = append(out, bt...)
	out = append(out, 0x20) // local.get
	out = binary.AppendUvarint(out, spent)
	out = append(out, 0x41)
	out = appendSleb(out, spentLimit)
	out = append(out, 0x4f, 0x0d, 0x01, 0x20) // i32.ge_u; br_if $refuel; local.get
	out = binary.AppendUvarint(out, spent)
	out = append(out, 0x41) // i32.const
	at = len(out)
	out = append(out, 0x80, 0x80, 0x80, 0x80, 0x00) // 0, padded
	out = append(out, 0x6a, 0x21)                   // i32.add; local.set
	return binary.AppendUvarint(out, spent), at
}

// appendWrappedEnd appends the end of a loop appendWrappedLoop began.
func appendWrappedEnd(out []byte, fuel, check, spent uint64) []byte {
	out = append(out, 0x0b, 0x0c, 0x02, 0x0b) // end; br $done; end
	out = appendFlush(out, fuel, spent)
	out = appendFuelCheck(out, fuel, check)
	return append(out, 0x0c, 0x00, 0x0b, 0x00, 0x0b) // br $again; end; unreachable; end
}

// appendFlush appends "$fuel -= $spent; $spent = 0".
func appendFlush(out []byte, fuel, spent uint64) []byte {
	out = appendGet(out, fuel)
	out = append(out, 0x20) // local.get
	out = binary.AppendUvarint(out, spent)
	out = append(out, 0x6b, 0x24) // i32.sub; global.set
	out = binary.AppendUvarint(out, fuel)
	out = append(out, 0x41, 0x00, 0x21) // i32.const 0; local.set
	return binary.AppendUvarint(out, spent)
}

// flushAtCalls returns code with a flush of $spent and a check before every call of a
// function with loops: a callee counts on $fuel, so that at any time only
// the running function holds fuel not yet taken (less than spentLimit plus
// one loop's weight), however deep the call stack.
func (w *walker) flushAtCalls(code []byte) []byte {
	// Checked too: a loop whose body calls a host function (WASI) that
	// returns at once has no other check, since the flush empties $spent.
	flush := appendFuelCheck(appendFlush(nil, w.fuel, w.spent), w.fuel, w.check)
	out := make([]byte, 0, len(code)+len(w.calls)*len(flush))
	prev := 0
	for _, at := range w.calls {
		out = append(out, code[prev:at]...)
		out = append(out, flush...)
		prev = at
	}
	w.pushes += uint64(len(w.calls)+1) * flushValues // and the epilogue's
	return append(out, code[prev:]...)
}

// patchFuelWeight writes w, at most FuelPerCheck, into the placeholder at
// out[at:].
func patchFuelWeight(out []byte, at int, w uint64) {
	for i := range 4 {
		out[at+i] = byte(w>>(7*i))&0x7f | 0x80
	}
	out[at+4] = byte(w>>28) & 0x7f // FuelPerCheck < 1<<31: bit 34, the sign, stays 0
}

// funcOut is the index in the guarded module of function f of the
// original: the fuel check is imported after the module's own imports.
func (m *moduleInfo) funcOut(f uint64) uint64 {
	if m.fuelled && f >= uint64(m.imported) {
		return f + 1
	}
	return f
}

// importEntry is the import of the fuel check.
func (m *moduleInfo) importEntry() []byte {
	out := appendName(nil, FuelModule)
	out = appendName(out, FuelFunc)
	out = append(out, 0x00) // function
	return binary.AppendUvarint(out, m.checkType)
}

// copier copies a section, rewriting the function indices in it.
type copier struct {
	m   *moduleInfo
	r   reader
	out []byte
}

// raw copies what read consumes.
func (c *copier) raw(read func()) {
	before := c.r.b
	read()
	if c.r.err == nil {
		c.out = append(c.out, before[:len(before)-len(c.r.b)]...)
	}
}

func (c *copier) u32() uint32 {
	var v uint32
	c.raw(func() { v = c.r.u32() })
	return v
}

// funcIdx copies a function index, refusing one the module does not
// define (it would name what Guard appends).
func (c *copier) funcIdx() {
	f := uint64(c.r.u32())
	if c.r.err == nil && f >= uint64(len(c.m.funcs)) {
		c.r.err = fmt.Errorf("function index %d out of range", f)
	}
	c.out = binary.AppendUvarint(c.out, c.m.funcOut(f))
}

// constExpr copies a constant expression (see reader.constExpr).
func (c *copier) constExpr() {
	for c.r.err == nil {
		var op byte
		c.raw(func() { op = c.r.byte() })
		switch op {
		case 0x0b:
			return
		case 0xd2:
			c.funcIdx()
		case 0x23:
			if g := c.u32(); c.r.err == nil && uint64(g) >= c.m.globals {
				c.r.err = fmt.Errorf("global index %d out of range", g)
			}
		default:
			c.raw(func() { c.r.constImmediates(op) })
		}
	}
}

func (c *copier) result() ([]byte, error) {
	if c.r.err == nil && len(c.r.b) != 0 {
		c.r.err = errors.New("trailing bytes")
	}
	return c.out, c.r.err
}

// rewriteExports copies an export section with the functions renumbered,
// refusing exports of indices the module does not define.
func (m *moduleInfo) rewriteExports(p []byte) ([]byte, error) {
	c := &copier{m: m, r: reader{b: p}}
	n := c.u32()
	for i := uint32(0); i < n && c.r.err == nil; i++ {
		c.raw(c.r.name)
		var kind byte
		c.raw(func() { kind = c.r.byte() })
		switch kind {
		case 0x00:
			c.funcIdx()
		case 0x03:
			if g := c.u32(); c.r.err == nil && uint64(g) >= m.globals {
				return nil, fmt.Errorf("export %d: global index %d out of range", i, g)
			}
		default:
			c.u32()
		}
	}
	return c.result()
}

// rewriteElements copies an element section with the functions
// renumbered (see elementCounts for the layout).
func (m *moduleInfo) rewriteElements(p []byte) ([]byte, error) {
	c := &copier{m: m, r: reader{b: p}}
	n := c.u32()
	for i := uint32(0); i < n && c.r.err == nil; i++ {
		flags := c.u32()
		if flags > 7 {
			return nil, fmt.Errorf("segment %d: bad flags %d", i, flags)
		}
		if flags&1 == 0 {
			if flags&2 != 0 {
				c.u32()
			}
			c.constExpr()
		}
		if flags&3 != 0 {
			c.raw(func() { c.r.byte() })
		}
		k := c.u32()
		if c.r.err == nil && uint64(k) > uint64(len(c.r.b)) {
			return nil, fmt.Errorf("segment %d: bad count", i)
		}
		for j := uint32(0); j < k && c.r.err == nil; j++ {
			if flags&4 != 0 {
				c.constExpr()
			} else {
				c.funcIdx()
			}
		}
	}
	return c.result()
}

// rewriteGlobals copies a global section with the functions renumbered.
func (m *moduleInfo) rewriteGlobals(p []byte) ([]byte, error) {
	c := &copier{m: m, r: reader{b: p}}
	n := c.u32()
	for i := uint32(0); i < n && c.r.err == nil; i++ {
		c.raw(func() { c.r.bytes(2) }) // type, mutability
		c.constExpr()
	}
	return c.result()
}

// rewriteNames copies the "name" custom section (p is its payload, name
// included) with the functions renumbered in the subsections indexed by
// function: function names (1), local names (2) and labels (3). It
// reports false when the section cannot be read; it is then dropped (a
// wrong name in a trap is worse than none).
func (m *moduleInfo) rewriteNames(p []byte) ([]byte, bool) {
	c := &copier{m: m, r: reader{b: p}}
	c.raw(c.r.name)
	for len(c.r.b) > 0 && c.r.err == nil {
		var id byte
		c.raw(func() { id = c.r.byte() })
		size := c.r.u32()
		sub := c.r.bytes(int(size))
		if c.r.err != nil {
			return nil, false
		}
		if id < 1 || id > 3 {
			c.out = binary.AppendUvarint(c.out, uint64(size))
			c.out = append(c.out, sub...)
			continue
		}
		s := &copier{m: m, r: reader{b: sub}}
		n := s.u32()
		for i := uint32(0); i < n && s.r.err == nil; i++ {
			s.funcIdx()
			if id == 1 {
				s.raw(s.r.name)
				continue
			}
			k := s.u32()
			for j := uint32(0); j < k && s.r.err == nil; j++ {
				s.u32()
				s.raw(s.r.name)
			}
		}
		out, err := s.result()
		if err != nil {
			return nil, false
		}
		c.out = binary.AppendUvarint(c.out, uint64(len(out)))
		c.out = append(c.out, out...)
	}
	out, err := c.result()
	return out, err == nil
}
