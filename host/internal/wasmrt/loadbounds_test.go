package wasmrt

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/host/internal/wasmcode"
)

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
	src = strings.ReplaceAll(src, "@BYTES@", strconv.Itoa(pages*wasmcode.PageSize))
	return watModule(t, src)
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
	if held < 2<<20 || held > 2<<20+wasmcode.PageSize { // and what the first page holds
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
