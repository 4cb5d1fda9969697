package wasmrt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// A guest is stopped by a fuel counter, not by wazero's
// WithCloseOnContextDone (RATIONALE.md, "Why is cancellation a fuel counter
// instead of WithCloseOnContextDone?"). Load appends a mutable i32 global,
// $fuel, and imports one host function, fuelModule.fuelFunc, of type
// () -> i32. Every function entry and every loop header subtracts a weight
// from $fuel and, when it falls below zero, calls the host:
//
//	global.get $fuel  i32.const W  i32.sub  global.set $fuel
//	global.get $fuel  i32.const 0  i32.lt_s
//	if  call $check  global.set $fuel  end
//
// The host function (hostFuel) ends the guest when the call's context is
// done, as the host functions that block do (exitOnDone), and otherwise
// returns fuelPerCheck, the fuel until the next check. Returning it, rather
// than setting the global from Go, keeps wazero's compiler right: it
// reloads globals after a call, but its value is the call's own result.
//
// The weight W is the number of instructions of the loop (nested loops
// included) or of the function body, capped at fuelPerCheck: between two
// charges a guest runs at most the instructions of one body, so fuel counts
// instructions, give or take a body, and the time between two checks is
// bounded by fuelPerCheck instructions whatever the shape of the code. A
// bulk-memory instruction counts one, as it did for wazero's own check.
//
// The host call is also where Go can preempt a goroutine running compiled
// guest code (it cannot interrupt native code that does not call out), so
// fuelPerCheck bounds how long a spinning guest can hold up the garbage
// collector of the whole server.
//
// The import comes after the module's own: every defined function's index
// grows by one, in code, exports, elements, global initializers, the start
// function and the name section (moduleInfo.funcOut). A module that imports
// from fuelModule itself is refused, so the only import of it is the one
// Load adds.
const (
	fuelModule = "wasmtask:runtime"
	fuelFunc   = "fuel"
)

// fuelPerCheck is the fuel a check hands out: about that many instructions
// run between two checks (BenchmarkSpin measures the choice). It is a
// variable only so that BenchmarkSpin can compare values; it is read when
// a module is loaded and when the check runs.
var fuelPerCheck int32 = 1 << 20

// fuelChargeValues is the values a fuel charge pushes (frame cost,
// stack.go).
const fuelChargeValues = 6

// appendFuelCharge appends a fuel charge of weight (see above). A negative
// weight leaves a 5-byte placeholder to patch with patchFuelWeight; at is
// its offset in out.
func appendFuelCharge(out []byte, fuel, check uint64, weight int64) (_ []byte, at int) {
	out = appendGet(out, fuel)
	out = append(out, 0x41) // i32.const
	at = len(out)
	if weight < 0 {
		out = append(out, 0x80, 0x80, 0x80, 0x80, 0x00) // 0, padded
	} else {
		out = appendSleb(out, min(weight, int64(fuelPerCheck)))
	}
	out = append(out, 0x6b, 0x24) // i32.sub; global.set
	out = binary.AppendUvarint(out, fuel)
	out = appendGet(out, fuel)
	out = append(out, 0x41, 0x00, 0x48, 0x04, 0x40, 0x10) // i32.const 0; i32.lt_s; if; call
	out = binary.AppendUvarint(out, check)
	out = append(out, 0x24) // global.set
	out = binary.AppendUvarint(out, fuel)
	return append(out, 0x0b), at // end
}

// patchFuelWeight writes weight, capped, into the placeholder at out[at:].
func patchFuelWeight(out []byte, at int, weight uint64) {
	w := min(weight, uint64(fuelPerCheck))
	for i := range 4 {
		out[at+i] = byte(w>>(7*i))&0x7f | 0x80
	}
	out[at+4] = byte(w>>28) & 0x7f // fuelPerCheck < 1<<31: bit 34, the sign, stays 0
}

// hostFuel is the fuel check: it ends the guest when its call is over and
// hands out more fuel otherwise.
func hostFuel(ctx context.Context, _ api.Module, stack []uint64) {
	if s := stateOf(ctx); s != nil && s.onFuel != nil {
		s.onFuel()
	}
	if ctx.Err() != nil {
		exitOnDone(ctx)
	}
	stack[0] = api.EncodeI32(fuelPerCheck)
}

// instantiateFuel defines fuelModule in r.
func instantiateFuel(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(fuelModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostFuel), nil, []api.ValueType{api.ValueTypeI32}).
		Export(fuelFunc).
		Instantiate(ctx)
	return err
}

// fuelHookKey is the context key of a function the fuel check calls each
// time it runs (tests count checks with it).
type fuelHookKey struct{}

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
	out := appendName(nil, fuelModule)
	out = appendName(out, fuelFunc)
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
// define (it would name what Load appends).
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
