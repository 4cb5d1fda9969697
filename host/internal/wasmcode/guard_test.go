package wasmcode

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmtask/wasmtask/host/hosttest"
)

func TestGuardEntriesRefusesMalformedCode(t *testing.T) {
	good := testModule(t, "callbomb")
	if _, err := guard(good, false, 0); err != nil {
		t.Fatalf("Guard(callbomb): %v", err)
	}
	for _, tc := range []struct {
		name string
		wasm []byte
	}{
		{"truncated", good[:4]},
		{"section past the end", append(append([]byte{}, good[:8]...), 10, 0x7f)},
		{"bad local type", append(append([]byte{}, good[:8]...), 10, 6, 1, 4, 1, 1, 0x55, 0x0b)},
	} {
		if _, err := guard(tc.wasm, false, 0); err == nil {
			t.Errorf("%s: got no error, want a refusal", tc.name)
		}
	}
}

// moduleWithBody is a module of one type () -> (), one function of that
// type whose body (no locals) is body then end, a memory and globals
// mutable i32 globals.
func moduleWithBody(globals int, body ...byte) []byte {
	section := func(id byte, payload ...byte) []byte {
		return append(binary.AppendUvarint([]byte{id}, uint64(len(payload))), payload...)
	}
	fn := append(append([]byte{0}, body...), 0x0b)
	code := append([]byte{1}, binary.AppendUvarint(nil, uint64(len(fn)))...)
	code = append(code, fn...)
	gs := binary.AppendUvarint(nil, uint64(globals))
	for range globals {
		gs = append(gs, 0x7f, 0x01, 0x41, 0x00, 0x0b)
	}
	wasm := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	wasm = append(wasm, section(1, 1, 0x60, 0, 0)...)
	wasm = append(wasm, section(3, 1, 0)...)
	wasm = append(wasm, section(5, 1, 0x00, 1)...)
	wasm = append(wasm, section(6, gs...)...)
	return append(wasm, section(10, code...)...)
}

// TestGuardRefusesWhatItDoesNotKnow: references to indices the module does
// not define (the appended globals and function would make them valid)
// and instructions beyond Wasm 2.0 are refused; the same instructions on
// defined indices are not.
func TestGuardRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wasm    []byte
		refused string // "" when guardModule must accept it
	}{
		{"global.get of a defined global", moduleWithBody(1, 0x23, 0x00, 0x1a), ""},
		{"global.get past the globals", moduleWithBody(0, 0x23, 0x00, 0x1a), "global index 0 out of range"},
		{"global.set past the globals", moduleWithBody(1, 0x42, 0x00, 0x24, 0x02), "global index 2 out of range"},
		{"call of a defined function", moduleWithBody(0, 0x10, 0x00), ""},
		{"call past the functions", moduleWithBody(0, 0x10, 0x01), "function index 1 out of range"},
		{"ref.func past the functions", moduleWithBody(0, 0xd2, 0x01, 0x1a), "function index 1 out of range"},
		{"return_call (tail calls)", moduleWithBody(0, 0x12, 0x00), "unsupported instruction 0x12"},
		{"try (exceptions)", moduleWithBody(0, 0x06, 0x40, 0x0b), "unsupported instruction 0x6"},
		{"atomics", moduleWithBody(0, 0xfe, 0x03, 0x00), "unsupported instruction 0xfe"},
		{"unknown 0xfc instruction", moduleWithBody(0, 0xfc, 0x20), "unsupported instruction 0xfc 32"},
		{"bytes after the end", moduleWithBody(0, 0x0b, 0x01), "bytes after the body's end"},
	} {
		_, err := guard(tc.wasm, false, 0)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tc.name, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: got %v, want a refusal saying %q", tc.name, err, tc.refused)
		}
	}
}

// guard is Guard without load bounds.
func guard(wasm []byte, interp bool, maxWork uint64) (*Guarded, error) {
	return Guard(wasm, Options{Interpreter: interp, MaxWork: maxWork, FuelPerCheck: 1 << 17})
}

// testModule returns a module of the runtime's test suite, built from
// ../wasmrt/testdata/name.wat or .c by the shared fixture builder.
func testModule(tb testing.TB, name string) []byte {
	tb.Helper()
	src := filepath.Join("..", "wasmrt", "testdata", name+".wat")
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join("..", "wasmrt", "testdata", name+".c")
	}
	return hosttest.Wasm(tb, src)
}

// TestGuardNamesWhatIsNotACoreModule: a binary that is not a core module
// is refused before anything else is read, saying what it is.
func TestGuardNamesWhatIsNotACoreModule(t *testing.T) {
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"component", []byte("\x00asm\x0d\x00\x01\x00\x07\x10\x01\x41"), "a WebAssembly component, not a core module: build the tool for wasm32-wasip1"},
		{"future version", []byte("\x00asm\x02\x00\x00\x00"), "WebAssembly binary version 2, not 1"},
		{"not wasm", []byte("#!/bin/sh\necho hi\n"), "not a WebAssembly module"},
		{"short", []byte("\x00as"), "not a WebAssembly module"},
	} {
		_, err := Guard(tc.wasm, Options{FuelPerCheck: 1, MaxWork: 1 << 20, MaxMemory: 1 << 20})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
