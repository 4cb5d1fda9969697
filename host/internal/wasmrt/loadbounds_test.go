package wasmrt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLoadBoundsAdmitRealModules: the modules shipped with wasmtask, and C
// and Go modules built elsewhere, fit the default bounds (32 MiB of
// compile work, 64 MiB of memory) with room to spare; what each costs is
// logged.
func TestLoadBoundsAdmitRealModules(t *testing.T) {
	files := []string{
		"../../defaulttools/demo.wasm",
		"../../defaulttools/sha256.wasm",
		"../../defaulttools/add.wasm",
		"../../../examples/go/preinit/demo-preinit.wasm",
		"../../../examples/conformance/tools/conformance.wasm",
	}
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, interp := range []bool{false, true} {
			g, err := guardWithin(wasm, interp, loadBounds{work: 32 << 20, memory: 64 << 20})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			// Half the default: a module twice as large still loads.
			if g.work > 16<<20 {
				t.Errorf("%s: compile work %s, want at most half the default bound", f, sizeString(g.work))
			}
			if !interp {
				t.Logf("%s (%d KiB): compile work %s", filepath.Base(f), len(wasm)>>10, sizeString(g.work))
			}
		}
	}
}

// TestLoadBoundsMatchErrLoadLimit: every refusal for a bound matches
// ErrTooLarge and ErrLoadLimit, a malformed module neither.
func TestLoadBoundsMatchErrLoadLimit(t *testing.T) {
	r := newRuntime(t, Config{MaxCodeMiB: 1})
	big := make([]byte, 0, 5*300_000)
	for range 300_000 {
		big = append(big, 0x7f, 0x01, 0x41, 0x00, 0x0b)
	}
	for _, tc := range []struct {
		name string
		wasm []byte
		lim  Limits
	}{
		{"globals past the compile work", moduleWithSection(6, binary.AppendUvarint(nil, 300_000), big), loadLimits},
		{"initial memory past the limit", wasmFile(t, "ok"), with(Limits{MemoryMiB: 1, Timeout: time.Second})},
		{"a function past its compile work", manyLoopsModule(5000), loadLimits},
	} {
		_, err := r.Load(context.Background(), tc.name, tc.wasm, tc.lim)
		if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrLoadLimit) {
			t.Errorf("%s: got %v, want ErrTooLarge matching ErrLoadLimit", tc.name, err)
		}
	}
	_, err := r.Load(context.Background(), "malformed", moduleWithSection(6, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, nil), loadLimits)
	if !errors.Is(err, ErrCompile) || errors.Is(err, ErrLoadLimit) {
		t.Errorf("malformed: got %v, want ErrCompile, not a load limit", err)
	}
}

// moduleWithSection is a module of one section id holding the vector of
// count entries in items.
func moduleWithSection(id byte, count, items []byte) []byte {
	payload := append(append([]byte(nil), count...), items...)
	w := append([]byte{0, 'a', 's', 'm', 1, 0, 0, 0}, id)
	w = binary.AppendUvarint(w, uint64(len(payload)))
	return append(w, payload...)
}

// manyLoopsModule is a module of one function of n empty loops in a row.
func manyLoopsModule(n int) []byte {
	body := []byte{0}
	for range n {
		body = append(body, 0x03, 0x40, 0x0b)
	}
	body = append(body, 0x0b)
	code := append([]byte{1}, binary.AppendUvarint(nil, uint64(len(body)))...)
	code = append(code, body...)
	w := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0}
	w = append(w, 10)
	w = binary.AppendUvarint(w, uint64(len(code)))
	return append(w, code...)
}

// deadlineCtx has a deadline that has passed, but its Err is nil: a timer
// that has not fired yet, as when a guest in native code holds up the Go
// runtime.
type deadlineCtx struct{ context.Context }

func (deadlineCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }

// TestLoadPastDeadlineRefused: a compile, a describe or an _initialize that
// returns after the load's deadline fails, at a load limit, also when the
// context has not said so yet.
func TestLoadPastDeadlineRefused(t *testing.T) {
	late := deadlineCtx{context.Background()}
	for _, name := range []string{"ok", "preinit"} {
		r := newRuntime(t, Config{})
		_, err := r.Load(late, name, wasmFile(t, name), loadLimits)
		if !errors.Is(err, ErrLoadLimit) || !strings.Contains(err.Error(), "its compile ended after the load's deadline") {
			t.Errorf("%s: load past its deadline: got %v, want a load limit naming the compile", name, err)
		}
		if got := r.SnapshotBytes(); got != 0 {
			t.Errorf("%s: a refused load holds %d bytes of snapshot", name, got)
		}
	}
	r := newRuntime(t, Config{})
	m := load(t, r, "ok")
	_, err := r.runLoad(late, m, "describe", describeRequest, loadLimits, nil)
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Kind != KindTimeout || !errors.Is(err, ErrLoadLimit) {
		t.Errorf("describe that returned past its deadline: got %v, want a timeout at a load limit", err)
	}
	// A describe that returns after its own timeout, the load's
	// deadline aside.
	_, err = r.runLoad(context.Background(), m, "describe", describeRequest, with(Limits{Timeout: time.Nanosecond}), nil)
	if !errors.As(err, &ge) || ge.Kind != KindTimeout || !errors.Is(err, ErrLoadLimit) {
		t.Errorf("describe past its 1ns: got %v, want a timeout at a load limit", err)
	}
}

// TestDescribeRunsWithinTheModulesLimit: describe gets the load's memory
// limit and no more: a module whose describe grows its memory past it
// fails at a load limit (out of memory), and one that fits loads.
func TestDescribeRunsWithinTheModulesLimit(t *testing.T) {
	src := `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"tools\":[{\"name\":\"t\"}]}")
  (func (export "_start")
    (if (i32.lt_s (memory.grow (i32.const 100)) (i32.const 0)) (then unreachable))
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 32))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))`
	wasm := watModule(t, src)
	r := newRuntime(t, Config{})
	_, err := r.Load(context.Background(), "grows", wasm, with(Limits{MemoryMiB: 4, Timeout: 2 * time.Second}))
	var ge *GuestError
	if !errors.As(err, &ge) || ge.Kind != KindOutOfMemory || !errors.Is(err, ErrLoadLimit) || !strings.Contains(err.Error(), "memory limit of 4 MiB") {
		t.Errorf("describe growing past 4 MiB: got %v, want out of memory at the load's limit", err)
	}
	m, err := r.Load(context.Background(), "grows", wasm, with(Limits{MemoryMiB: 16, Timeout: 2 * time.Second}))
	if err != nil {
		t.Fatalf("describe growing 6.25 MiB under 16 MiB: %v", err)
	}
	m.Close(context.Background())
}

// snapshotPatterns are memories of the shapes that cost a snapshot most.
func snapshotPatterns() map[string][]byte {
	const pages = 16
	fill := func(f func(i int) byte) []byte {
		b := make([]byte, pages*pageSize)
		for i := range b {
			b[i] = f(i)
		}
		return b
	}
	rng := rand.New(rand.NewPCG(1, 2))
	return map[string][]byte{
		"zero":             make([]byte, pages*pageSize),
		"one byte":         fill(func(i int) byte { return byte(i / (pages*pageSize - 1)) }),
		"dense":            fill(func(int) byte { return byte(rng.IntN(255) + 1) }),
		"random":           fill(func(int) byte { return byte(rng.IntN(256)) }),
		"alternating":      fill(func(i int) byte { return byte(i & 1) }),
		"every 1 KiB":      fill(func(i int) byte { return b2(i%1024 == 0) }),
		"every 1032 bytes": fill(func(i int) byte { return b2(i%1032 == 0) }), // gaps just over maxDataGap
		"every 4 KiB":      fill(func(i int) byte { return b2(i%4096 == 7) }),
		"every 16 KiB":     fill(func(i int) byte { return b2(i%16384 == 9) }),
	}
}

func b2(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// TestSnapshotEncodingBounded: a snapshot's data section writes exactly the
// memory it was taken from, takes no more than a plain copy of it plus one
// segment header, and has at most snapshotRunsPerPage segments per page,
// whatever the memory holds.
func TestSnapshotEncodingBounded(t *testing.T) {
	for name, mem := range snapshotPatterns() {
		segs, err := checkSnapshotData(mem)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %d segments for %d pages", name, segs, len(mem)/pageSize)
	}
}

// checkSnapshotData encodes mem and checks the encoding's bounds and that
// it writes mem; it returns the number of segments.
func checkSnapshotData(mem []byte) (int, error) {
	size := snapshotDataSize(mem)
	data := appendSnapshotData(nil, mem)
	switch {
	case uint64(len(data)) != size:
		return 0, errors.New("snapshotDataSize differs from the encoding's length")
	case len(data) > len(mem)+18:
		return 0, errors.New("the encoding is larger than a plain copy of the memory and one header")
	}
	// Apply the segments to a zero memory, as instantiation does.
	got := make([]byte, len(mem))
	r := reader{b: data}
	n := r.u32()
	if int(n) > snapshotRunsPerPage*(len(mem)/pageSize)+1 {
		return 0, errors.New("more segments than snapshotRunsPerPage per page")
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		if r.byte() != 0 || r.byte() != 0x41 {
			return 0, errors.New("not an active segment at an i32.const")
		}
		off := int(uint32(int32(r.s33())))
		r.byte()
		init := r.bytes(int(r.u32()))
		if r.err != nil || off+len(init) > len(got) {
			return 0, errors.New("segment out of range")
		}
		copy(got[off:], init)
	}
	if r.err != nil || len(r.b) != 0 {
		return 0, errors.New("malformed data section")
	}
	if !bytes.Equal(got, mem) {
		return 0, errors.New("the segments do not write the memory they were taken from")
	}
	return int(n), nil
}

// FuzzSnapshotData: guest memory is untrusted; its encoding must hold
// whatever it holds. The input is tiled over two pages.
func FuzzSnapshotData(f *testing.F) {
	f.Add([]byte{1, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(append(make([]byte, 1030), 1))
	f.Fuzz(func(t *testing.T, pattern []byte) {
		if len(pattern) == 0 {
			return
		}
		mem := make([]byte, 2*pageSize)
		for i := range mem {
			mem[i] = pattern[i%len(pattern)]
		}
		if _, err := checkSnapshotData(mem); err != nil {
			t.Fatal(err)
		}
	})
}

// fillInitWAT is a pre-initialised module whose _initialize grows its
// memory by @PAGES@ pages and fills them with 0x01. Its tool answers the
// byte at 100000 as a digit.
const fillInitWAT = `(module
  (import "wasi_snapshot_preview1" "fd_read" (func $r (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 2048) "{\"abi\":1,\"tools\":[{\"name\":\"b\"}]}")
  (data (i32.const 3072) "{\"content\":[{\"type\":\"text\",\"text\":\"?\"}]}")
  (func $out (param $p i32) (param $n i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (local.get $n))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_initialize")
    (drop (memory.grow (i32.const @PAGES@)))
    (memory.fill (i32.const 65536) (i32.const 1) (i32.const @BYTES@)))
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 1024))
    (drop (call $r (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100))
      (then (call $out (i32.const 2048) (i32.const 32)) (return)))
    (i32.store8 (i32.const 3107) (i32.add (i32.const 48) (i32.load8_u (i32.const 100000))))
    (call $out (i32.const 3072) (i32.const 40))))`

func fillInitModule(t *testing.T, pages int) []byte {
	src := strings.ReplaceAll(fillInitWAT, "@PAGES@", strconv.Itoa(pages))
	src = strings.ReplaceAll(src, "@BYTES@", strconv.Itoa(pages*pageSize))
	return watModule(t, src)
}

// TestSnapshotDataSection: a snapshot's data section writes the memory
// _initialize left, whether or not the module had a data section, and
// replaces the one it had.
func TestSnapshotDataSection(t *testing.T) {
	for _, src := range []string{
		`(module (memory (export "memory") 1) (func (export "_initialize")) (func (export "_start")))`,
		`(module (memory (export "memory") 1) (data (i32.const 8) "x") (func (export "_initialize")) (func (export "_start")))`,
	} {
		wasm := watModule(t, src)
		_, pm, err := exposeGlobals(wasm)
		if err != nil {
			t.Fatal(err)
		}
		mem := make([]byte, 2*pageSize)
		mem[70000] = 'A'
		snap, err := pm.snapshotModule(wasm, &snapshotState{mem: mem, dataSize: snapshotDataSize(mem)})
		if err != nil {
			t.Fatal(err)
		}
		var data [][]byte
		eachSection(snap, func(id byte, p []byte) []byte {
			if id == secData {
				data = append(data, p)
			}
			return p
		})
		if len(data) != 1 || !bytes.Equal(data[0], appendSnapshotData(nil, mem)) {
			t.Errorf("%s: snapshot's data sections %x, want one, the memory's", src, data)
		}
	}
}

// TestSnapshotBudget: a snapshot is charged to Config.MaxSnapshotMiB while
// its module is loaded and given back when it is freed; one that does not
// fit what is left is ErrSnapshotBudget, one larger than the whole budget
// a load limit. A module without a data section keeps its memory in the
// snapshot.
func TestSnapshotBudget(t *testing.T) {
	r := newRuntime(t, Config{MaxSnapshotMiB: 3})
	two := fillInitModule(t, 32) // 2 MiB of 0x01
	m, err := r.Load(context.Background(), "two", two, loadLimits)
	if err != nil {
		t.Fatal(err)
	}
	if got := callText(t, m, "b", `{}`, testLimits, nil); got != "1" {
		t.Errorf("the byte _initialize wrote: %q, want 1", got)
	}
	held := r.SnapshotBytes()
	if held < 2<<20 || held > 2<<20+pageSize { // and what the first page holds
		t.Errorf("snapshot of 2 MiB holds %d bytes", held)
	}
	_, err = r.Load(context.Background(), "again", variantOf(two), loadLimits)
	if !errors.Is(err, ErrSnapshotBudget) || errors.Is(err, ErrLoadLimit) {
		t.Errorf("a second 2 MiB snapshot in 3 MiB: got %v, want ErrSnapshotBudget, not a load limit", err)
	}
	_, err = r.Load(context.Background(), "four", fillInitModule(t, 64), loadLimits)
	if !errors.Is(err, ErrLoadLimit) || !strings.Contains(err.Error(), "more than the whole snapshot budget of 3 MiB") {
		t.Errorf("a 4 MiB snapshot in a 3 MiB budget: got %v, want a load limit", err)
	}
	if got := r.SnapshotBytes(); got != held {
		t.Errorf("refused snapshots changed what is held: %d, want %d", got, held)
	}
	m.Close(context.Background())
	<-m.Done()
	if got := r.SnapshotBytes(); got != 0 {
		t.Errorf("after the module is freed its snapshot holds %d bytes", got)
	}
	m, err = r.Load(context.Background(), "again", variantOf(two), loadLimits)
	if err != nil {
		t.Fatalf("once the first is freed, a second fits: %v", err)
	}
	m.Close(context.Background())
}

// variantOf is wasm with a custom section of its own: other bytes, the
// same module.
func variantOf(wasm []byte) []byte {
	return append(append([]byte(nil), wasm...), 0, 3, 1, 'v', 0)
}
